import type Docker from 'dockerode';
import { DeployDocument, RestartAppDocument } from '../../src/client/generated';
import { LABELS } from '../../src/runtime/docker/docker.runtime';
import { collect, gqlOk, rest, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser } from '../support/factories';
import { describeDocker, docker, ensureNodeImage, sourceArchive } from '../support/docker';
import { upload } from '../sources/helpers';
import { until } from '../crons/helpers';
import { DeploymentLogStreamDocument } from '../../src/client/generated';
import { viaRouter } from '../support/router';

/** Answers with the container's host name, so a test sees which replica served it. */
const SERVER = `
const http = require('http');
http.createServer((req, res) => {
  console.log('request ' + req.url);
  res.end(require('os').hostname());
}).listen(Number(process.env.PORT));
`;

describeDocker('replicas on Docker: one container each, balanced by the router, a failed one out of rotation', () => {
  let d: Docker;
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;
  let deploymentId: string;
  const domain = 'eggs.test';
  const get = (urlPath = '/') => viaRouter(t.gateway.routerUrl, `${slug}.${domain}`, urlPath);
  const containers = () => d.listContainers({ all: true, filters: { label: [`${LABELS.deployment}=${deploymentId}`] } });

  beforeAll(async () => {
    d = docker();
    const base = await ensureNodeImage(d);
    t = await startGateway({ HATCHERY_RUNTIME: 'docker', HATCHERY_NODE_IMAGE: base, HATCHERY_APPS_DOMAIN: domain, HATCHERY_HEALTH_TIMEOUT_MS: '30000' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    await t.gateway.services.apps.setTier(slug, 'always_on');
    expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { replicas: 2 })).status).toBe(200);
    const up = await upload(
      { url: t.url },
      owner.token,
      slug,
      await sourceArchive({ Dockerfile: `FROM ${base}\nCOPY server.js /server.js\nCMD ["node", "/server.js"]\n`, 'server.js': SERVER }),
    );
    const { deploy } = await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug, source: up.body.id } });
    deploymentId = deploy.id;
    expect(await settle(t.url, owner, deploymentId)).toBe('LIVE');
  }, 180_000);

  afterAll(async () => {
    await t?.stop();
    for (const c of await d.listContainers({ all: true, filters: { label: [`${LABELS.app}=${slug}`] } })) await d.getContainer(c.Id).remove({ force: true });
  });

  it('live with two containers, replicas 0 and 1, each with the egg’s memory', async () => {
    const found = await containers();
    expect(found.map((c) => c.Labels[LABELS.replica]).sort()).toEqual(['0', '1']);
    expect(found.every((c) => c.State === 'running')).toBe(true);
  });

  it('the router sends requests to both in turn, and each replica’s lines say which it is', async () => {
    const client = wsClient(t.url, owner.token);
    try {
      const stream = collect(client, DeploymentLogStreamDocument, { id: deploymentId, type: 'RUNTIME' });
      const served = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const r = await get(`/turn${i}`);
        expect(r.status).toBe(200);
        served.add(r.body);
      }
      expect(served.size).toBe(2);
      await waitForItem(stream, (i) => i.deploymentLogs.message === '[replica 1] request /turn0' || i.deploymentLogs.message === '[replica 2] request /turn0');
      await waitForItem(stream, (i) => /^\[replica [12]\] request \/turn1$/.test(i.deploymentLogs.message));
      stream.unsubscribe();
    } finally {
      await client.dispose();
    }
  }, 60_000);

  it('a replica that dies is taken out of rotation: every request is answered by the other, then it is back', async () => {
    const [victim] = (await containers()).filter((c) => c.Labels[LABELS.replica] === '1');
    await d.getContainer(victim.Id).kill();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await get(`/while-down${i}`)).status);
    expect(statuses).toEqual(Array(10).fill(200));
    // Its runner starts it again after the backoff; both serve once more.
    await until('the killed replica to run again', async () => (await containers()).filter((c) => c.State === 'running').length === 2);
    const served = new Set<string>();
    await until('both replicas to serve again', async () => {
      served.add((await get('/again')).body);
      return served.size === 2;
    });
  }, 60_000);

  it('a restart applies a new count: back to one container', async () => {
    expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { replicas: 1 })).status).toBe(200);
    await gqlOk(t.url, owner.token, RestartAppDocument, { slug });
    await until('one container left', async () => {
      const found = await containers();
      return found.length === 1 && found[0].State === 'running';
    });
    expect((await get('/single')).status).toBe(200);
  }, 60_000);
});
