import { buildApp, Gateway } from '../../src/app';
import { DeploymentLogsDocument, DeploymentLogStreamDocument, UpsertPreviewDocument } from '../../src/client/generated';
import { collect, gqlOk, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { viaRouter as rawViaRouter } from '../support/router';

/** The router's answer, its body parsed when it is JSON (problem details). */
async function viaRouter(routerUrl: string, host: string, urlPath = '/') {
  const r = await rawViaRouter(routerUrl, host, urlPath);
  return { ...r, body: r.body.startsWith('{') ? JSON.parse(r.body) : r.body };
}

/** What the router answers without a Docker Engine: where nothing can be served, it says why (the routing itself is the same on Docker: test/docker/hosting.e2e.test.ts). */
describe('the router on the simulated runtime', () => {
  let t: TestGateway;
  let owner: TestUser;
  const domain = 'eggs.test';

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_APPS_DOMAIN: domain });
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const problem = (status: number, code: string) => ({
    status,
    headers: expect.objectContaining({ 'content-type': 'application/problem+json' }),
    body: expect.objectContaining({ status, code, type: `https://hatchery.run/problems/${code}`, detail: expect.any(String) }),
  });

  it('listens on its own port, separate from the API', () => {
    expect(t.gateway.routerUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(t.gateway.routerUrl).not.toBe(t.url);
  });

  it('a host that is no egg’s, or not under the apps domain, is a 404', async () => {
    expect(await viaRouter(t.gateway.routerUrl, `no-such-egg.${domain}`)).toEqual(problem(404, 'not_found'));
    expect(await viaRouter(t.gateway.routerUrl, `Bad--Host.${domain}`)).toEqual(problem(404, 'not_found'));
    expect(await viaRouter(t.gateway.routerUrl, `a.b.${domain}`)).toEqual(problem(404, 'not_found'));
    expect(await viaRouter(t.gateway.routerUrl, 'example.com')).toEqual(problem(404, 'not_found'));
    const { slug } = await makeApp(t.url, owner);
    expect(await viaRouter(t.gateway.routerUrl, `${slug}--zzzzzzzz.${domain}`)).toEqual(problem(404, 'not_found'));
    expect(await viaRouter(t.gateway.routerUrl, `${slug}--pr-9.${domain}`)).toEqual(problem(404, 'not_found'));
  });

  it('an egg with nothing live is a 503 with Retry-After; so is a live one here, saying the runtime is simulated', async () => {
    const { slug } = await makeApp(t.url, owner);
    const none = await viaRouter(t.gateway.routerUrl, `${slug}.${domain}:8080`);
    expect(none).toEqual(problem(503, 'service_unavailable'));
    expect(none.headers['retry-after']).toMatch(/^\d+$/);
    expect(none.body.detail).toContain('no live deployment');

    const older = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, older.id)).toBe('LIVE');
    const current = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, current.id)).toBe('LIVE');
    const live = await viaRouter(t.gateway.routerUrl, `${slug.toUpperCase()}.${domain.toUpperCase()}`);
    expect(live).toEqual(problem(503, 'service_unavailable'));
    expect(live.body.detail).toContain('simulated runtime');
    // A deployment's own host: only the current one runs.
    const old = await viaRouter(t.gateway.routerUrl, new URL(older.url).host);
    expect(old).toEqual(problem(503, 'service_unavailable'));
    expect(old.body.detail).toContain('not');
    expect((await viaRouter(t.gateway.routerUrl, new URL(current.url).host)).body.detail).toContain('simulated runtime');

    // A preview's host names it; nothing of a simulated preview listens.
    const { upsertPreview } = await gqlOk(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 4 });
    const preview = await viaRouter(t.gateway.routerUrl, new URL(upsertPreview.preview.url).host);
    expect(preview).toEqual(problem(503, 'service_unavailable'));
    expect(preview.body.detail).toContain('simulated runtime');
  });

  describe('with a second gateway on the same database', () => {
    let second: Gateway;
    beforeAll(async () => {
      second = buildApp(t.config);
      await second.start(0);
    });
    afterAll(() => second.stop());

    it('a request line reaches the egg’s log through the gateway that runs it, whichever router passed the request', async () => {
      const { slug } = await makeApp(t.url, owner);
      const d = await deploy(t.url, owner, slug);
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
      // It runs once its runner writes its first lines.
      const client = wsClient(t.url, owner.token);
      const stream = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'RUNTIME' });
      await waitForItem(stream, (i) => i.deploymentLogs.message === 'Listening on port 8080');
      stream.unsubscribe();
      await client.dispose();
      const runsOnFirst = await t.gateway.ds.query<Array<{ runner_id: string }>>('SELECT runner_id FROM apps WHERE slug = $1', [slug]);
      expect(runsOnFirst[0].runner_id).toBe(t.gateway.services.deployments.supervisor.runnerId);
      // The second gateway's router passed it: it hands the line to the first, which owns the log's sequence.
      second.services.deployments.supervisor.runtimeLine(d.id, 'GET /from-second 200 3ms', new Date());
      t.gateway.services.deployments.supervisor.runtimeLine(d.id, 'GET /from-first 200 2ms', new Date());
      for (;;) {
        const logs = await gqlOk(t.url, owner.token, DeploymentLogsDocument, { id: d.id, type: 'RUNTIME', first: 100 });
        const messages = logs.deployment.logs.nodes.map((l) => l.message);
        if (messages.includes('GET /from-second 200 3ms') && messages.includes('GET /from-first 200 2ms')) {
          const seqs = logs.deployment.logs.nodes.map((l) => l.seq);
          expect(new Set(seqs).size).toBe(seqs.length);
          break;
        }
        await t.gateway.services.deployments.writer.flush();
      }
    });
  });
});
