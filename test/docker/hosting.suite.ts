import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import { Client } from 'pg';
import WebSocket from 'ws';
import { buildApp, Gateway } from '../../src/app';
import {
  CancelCronRunDocument,
  CreateCronDocument,
  CronRunsDocument,
  DeleteDeploymentDocument,
  DeployDocument,
  DeploymentLogsDocument,
  DeploymentLogsQuery,
  DeploymentLogStreamDocument,
  DeploymentsDocument,
  RestartAppDocument,
  RollbackDocument,
  RunCronNowDocument,
  UpdateResourcesDocument,
} from '../../src/client/generated';
import { imageTag, LABELS } from '../../src/runtime/docker/docker.runtime';
import { within } from '../../src/timeout';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser } from '../support/factories';
import { describeDocker, docker, ensureNodeImage, sourceArchive } from '../support/docker';
import { storedRows, tarGz, upload } from '../sources/helpers';
import { hatch, stopAllClis, tempDir } from '../cli-hatch/helpers';
import { until } from '../crons/helpers';
import { describeHaproxy, haproxyHere } from '../support/haproxy-describe';
import { requestLoop, viaRouter } from '../support/router';

/** A tiny Node egg without dependencies: answers `<version> <path>`, logs each request, exits 3 on /crash, greets a WebSocket. */
const SERVER = (version: string) => `
const http = require('http');
const crypto = require('crypto');
const server = http.createServer((req, res) => {
  console.log('request ' + req.url);
  if (req.url === '/crash') { console.error('crashing on purpose'); process.exit(3); }
  res.end('${version} ' + req.url);
});
server.on('upgrade', (req, socket) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  const text = Buffer.from('hello over ws from ${version}');
  socket.write(Buffer.concat([Buffer.from([0x81, text.length]), text]));
});
server.listen(Number(process.env.PORT), () => console.log('listening ${version} on ' + process.env.PORT));
`;

export const eggFiles = (version: string): Record<string, string> => ({
  'package.json': JSON.stringify({ name: 'tiny-egg', version: '1.0.0', scripts: { start: 'node server.js' } }),
  'server.js': SERVER(version),
});

/** What a suite's own further tests get: the gateway, its user, and the suite's helpers. */
export interface HostingContext {
  gateway: Gateway;
  owner: TestUser;
  newEgg: () => Promise<string>;
  deployFiles: (slug: string, files: Record<string, string>) => Promise<{ id: string; status: string }>;
  get: (slug: string, urlPath?: string) => ReturnType<typeof viaRouter>;
  hostOf: (slug: string) => string;
  runtimeLines: (deploymentId: string) => Promise<Array<{ message: string }>>;
}

/**
 * The hosting scenarios end to end, run by hosting.e2e with the Node router alone and with HAProxy
 * in front of it: `env` is what the gateway gets besides the suite's own settings.
 */
export function hostingSuite(name: string, env: Record<string, string>, more?: (ctx: () => HostingContext) => void): void {
  // With HAProxy in front, skipped where HAProxy is not installed too (never in CI).
  const describeHosting = env.HATCHERY_ROUTER_EDGE === 'haproxy' && !haproxyHere ? describeHaproxy : describeDocker;
  describeHosting(name, () => {
    let d: Docker;
    let base: string;
    let t: TestGateway;
    let gateway: Gateway;
    let owner: TestUser;
    let slug: string;
    const domain = 'eggs.test';
    const hostOf = (s: string) => `${s}.${domain}`;
    const containersOf = (deploymentId: string) => d.listContainers({ all: true, filters: { label: [`${LABELS.deployment}=${deploymentId}`] } });
    const containersOfEgg = (s: string) => d.listContainers({ all: true, filters: { label: [`${LABELS.app}=${s}`] } });
    const get = (s: string, urlPath = '/') => viaRouter(gateway.routerUrl, hostOf(s), urlPath);
    /** The first 200 the router gives for the egg (it may be restarting, or starting another deployment, meanwhile). */
    const served = (s: string, urlPath: string) =>
      until(`${s} to serve ${urlPath}`, async () => {
        const r = await get(s, urlPath);
        return r.status === 200 && r;
      });
    const deployments: string[] = [];
    /** Every egg the suite makes, for afterAll to remove what they left on the Engine. */
    const eggs: string[] = [];
    const newEgg = async (): Promise<string> => {
      const made = (await makeApp(gateway.url, owner)).slug;
      eggs.push(made);
      return made;
    };

    /** Every stored runtime line of the deployment, oldest first (a long-lived one has more than a page). */
    async function runtimeLines(id: string) {
      const lines: DeploymentLogsQuery['deployment']['logs']['nodes'] = [];
      let after: string | null = null;
      for (;;) {
        const page: DeploymentLogsQuery['deployment']['logs'] = (
          await gqlOk(gateway.url, owner.token, DeploymentLogsDocument, { id, type: 'RUNTIME', first: 100, after })
        ).deployment.logs;
        lines.push(...page.nodes);
        if (!page.pageInfo.hasNextPage) return lines;
        after = page.pageInfo.endCursor;
      }
    }

    /** Requests the path of the suite's egg through the router; resolves once its `request <path>` line is in the deployment's runtime log. */
    async function requestLogged(deploymentId: string, urlPath: string): Promise<void> {
      const client = wsClient(gateway.url, owner.token);
      try {
        const stream = collect(client, DeploymentLogStreamDocument, { id: deploymentId, type: 'RUNTIME' });
        await get(slug, urlPath);
        // Bounded below the tests' timeouts: a line that never comes is named with what did (seen twice in CI, not reproduced).
        await within(
          waitForItem(stream, (i) => i.deploymentLogs.message === `request ${urlPath}`),
          30_000,
          () => {
            throw new Error(`no "request ${urlPath}" line in 30 s; received: ${JSON.stringify(stream.items.map((i) => i.deploymentLogs.message))}`);
          },
        );
        stream.unsubscribe();
      } finally {
        await client.dispose();
      }
    }

    /** Uploads the files as the egg's source and deploys it; resolves once live (or failed). */
    async function deployFiles(s: string, files: Record<string, string>): Promise<{ id: string; status: string }> {
      const up = await upload({ url: gateway.url }, owner.token, s, await sourceArchive(files));
      expect([200, 201]).toContain(up.status);
      const { deploy } = await gqlOk(gateway.url, owner.token, DeployDocument, { input: { project: s, source: up.body.id } });
      deployments.push(deploy.id);
      return { id: deploy.id, status: await settle(gateway.url, owner, deploy.id) };
    }

    beforeAll(async () => {
      d = docker();
      base = await ensureNodeImage(d);
      t = await startGateway({
        HATCHERY_RUNTIME: 'docker',
        HATCHERY_NODE_IMAGE: base,
        HATCHERY_APPS_DOMAIN: domain,
        HATCHERY_HEALTH_TIMEOUT_MS: '30000',
        HATCHERY_SLEEP_AFTER_MS: '2500',
        HATCHERY_VOLUME_USAGE_MAX_AGE_MS: '0',
        ...env,
      });
      gateway = t.gateway;
      owner = await makeUser(gateway);
      slug = await newEgg();
      // Always on: the request loops below must not meet a sleeping egg.
      await gateway.services.apps.setTier(slug, 'always_on');
    }, 180_000);

    afterAll(async () => {
      await stopAllClis();
      await gateway?.stop();
      await t?.db.drop();
      // Once no runner watches them (a runner starts a live egg's container again when it goes).
      for (const s of eggs) {
        for (const c of await containersOfEgg(s)) await d.getContainer(c.Id).remove({ force: true });
        await d
          .getVolume(`hatchery-vol-${s}`)
          .remove()
          .catch(() => undefined);
      }
    });

    let first: string;

    it('hatch deploy packs the folder, streams the build, and exits 0 once live; the router serves the egg at its host and the deployment’s', async () => {
      const dir = tempDir('tiny-egg-');
      for (const [name, content] of Object.entries(eggFiles('v1'))) writeFileSync(path.join(dir, name), content);
      mkdirSync(path.join(dir, 'node_modules/junk'), { recursive: true });
      writeFileSync(path.join(dir, 'node_modules/junk/index.js'), 'ignored\n');
      writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n');
      const res = await hatch({ apiUrl: gateway.url, configDir: tempDir(), token: owner.token }, ['deploy', slug, '--dir', dir, '--json']);
      expect(res.stderr).toMatch(/npm (install|ci)|Step \d+\/\d+ : RUN npm/);
      expect(res.code).toBe(0);
      const deployed = JSON.parse(res.stdout) as { id: string; status: string; url: string; source: string | null };
      expect(deployed).toMatchObject({ status: 'LIVE', source: expect.stringMatching(/^src_/) });
      first = deployed.id;
      deployments.push(first);

      const main = await get(slug, '/hi');
      expect(main).toMatchObject({ status: 200, body: 'v1 /hi' });
      const own = await viaRouter(gateway.routerUrl, new URL(deployed.url).host, '/own');
      expect(own).toMatchObject({ status: 200, body: 'v1 /own' });

      // Not an egg of this platform, and an egg with nothing live.
      expect((await viaRouter(gateway.routerUrl, hostOf('no-such-egg'))).status).toBe(404);
      expect((await viaRouter(gateway.routerUrl, 'example.com')).status).toBe(404);
      const empty = await newEgg();
      const idle = await get(empty);
      expect(idle.status).toBe(503);
      expect(idle.headers['retry-after']).toMatch(/^\d+$/);
      // Docker needs something to build: an egg without a source or an image is refused, naming `source`.
      const refused = await gql(gateway.url, owner.token, DeployDocument, { input: { project: empty } });
      expect(refused.errors?.[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        errors: [{ field: 'source', message: expect.stringContaining('no source') }],
      });
    }, 180_000);

    it('the egg’s console.log lines and the router’s request lines arrive over deploymentLogs, in order, with no gap', async () => {
      const client = wsClient(gateway.url, owner.token);
      try {
        const stream = collect(client, DeploymentLogStreamDocument, { id: first, type: 'RUNTIME' });
        // Bounded below jest's timeout, so that a line that never comes is named with what did.
        const logged = (what: string, match: (message: string) => boolean) =>
          within(
            waitForItem(stream, (i) => match(i.deploymentLogs.message)),
            15_000,
            () => {
              throw new Error(`no "${what}" line in 15 s; received: ${JSON.stringify(stream.items.map((i) => i.deploymentLogs.message))}`);
            },
          );
        await logged('listening v1', (m) => m.startsWith('listening v1'));
        for (let i = 0; i < 5; i++) expect((await get(slug, `/n${i}`)).body).toBe(`v1 /n${i}`);
        // The router's line and the egg's own arrive by different paths: wait for both.
        await logged('request /n4', (m) => m === 'request /n4');
        await logged('GET /n4 200', (m) => /^GET \/n4 200 \d+ms$/.test(m));
        const items = stream.items.slice();
        const messages = items.map((i) => i.deploymentLogs.message);
        for (let i = 0; i < 5; i++) {
          expect(messages).toContain(`request /n${i}`);
          expect(messages.some((m) => new RegExp(`^GET /n${i} 200 \\d+ms$`).test(m))).toBe(true);
          expect(messages.indexOf(`request /n${i}`)).toBeLessThan(
            messages.indexOf(`request /n${i + 1}`) === -1 ? Infinity : messages.indexOf(`request /n${i + 1}`),
          );
        }
        const seqs = items.map((i) => i.deploymentLogs.seq);
        for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]);
        // No gap: what the stream delivered is exactly what is stored, in the same order.
        const storedSeqs = (await runtimeLines(first)).map((l) => l.seq).filter((s) => s <= seqs[seqs.length - 1]);
        expect(seqs).toEqual(storedSeqs);
        stream.unsubscribe();
      } finally {
        await client.dispose();
      }
    }, 60_000);

    it('WebSockets pass through the router', async () => {
      const { port } = new URL(gateway.routerUrl);
      const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: hostOf(slug) } });
      const message = await new Promise<string>((resolve, reject) => {
        ws.once('message', (data: Buffer) => resolve(data.toString('utf8')));
        ws.once('error', reject);
      });
      expect(message).toBe('hello over ws from v1');
      ws.terminate();
    }, 30_000);

    let second: string;

    it('a second deploy under a request loop through the router: no request fails, and the new version takes over', async () => {
      const { seen, failures, stop } = requestLoop(() => get(slug, '/loop'));
      const next = await deployFiles(slug, eggFiles('v2'));
      expect(next.status).toBe('LIVE');
      second = next.id;
      // Until the loop has met the new version, and a little after (the old container drains, then stops).
      for (let i = 0; ; i++) {
        if (seen.includes('v2 /loop') && i > 0) break;
        await get(slug, '/probe');
      }
      await new Promise((r) => setImmediate(r));
      await stop();
      expect(failures).toEqual([]);
      expect(seen[0]).toBe('v1 /loop');
      expect(seen.at(-1)).toBe('v2 /loop');
      // The old version's container goes once drained; only the new one runs.
      await d
        .getContainer((await containersOf(first))[0]?.Id ?? 'gone')
        .wait()
        .catch(() => undefined);
      expect((await containersOfEgg(slug)).filter((c) => c.State === 'running').map((c) => c.Labels[LABELS.deployment])).toEqual([second]);
    }, 180_000);

    it('rollback answers the old response again without a build, from the old image', async () => {
      const before = (await gqlOk(gateway.url, owner.token, DeploymentsDocument, { project: slug, first: 50 })).deployments.nodes.length;
      await gqlOk(gateway.url, owner.token, RollbackDocument, { app: slug, to: first });
      await until('the rollback to serve v1', async () => {
        const r = await get(slug, '/back');
        return r.status === 200 && r.body === 'v1 /back';
      });
      expect((await gqlOk(gateway.url, owner.token, DeploymentsDocument, { project: slug, first: 50 })).deployments.nodes.length).toBe(before);
      const [running] = (await containersOf(first)).filter((c) => c.State === 'running');
      expect(running.Image).toBe(imageTag({ slug, deploymentId: first }));
    }, 120_000);

    it('the Engine shows the memory limit and no-new-privileges; a crash is logged with its exit code and the egg comes back', async () => {
      const [c] = (await containersOf(first)).filter((x) => x.State === 'running');
      const info = await d.getContainer(c.Id).inspect();
      expect(info.HostConfig.Memory).toBe(512 * 1024 * 1024);
      expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
      expect(info.HostConfig.CapDrop).toEqual(['ALL']);
      expect(
        Object.values(info.NetworkSettings.Ports ?? {})
          .flat()
          .map((b) => b?.HostIp),
      ).toEqual(['127.0.0.1']);

      const client = wsClient(gateway.url, owner.token);
      try {
        const stream = collect(client, DeploymentLogStreamDocument, { id: first, type: 'RUNTIME' });
        await get(slug, '/crash').catch(() => undefined);
        await waitForItem(stream, (i) => /exited with code 3; restarting/.test(i.deploymentLogs.message));
        stream.unsubscribe();
      } finally {
        await client.dispose();
      }
      expect((await served(slug, '/again')).body).toBe('v1 /again');
      // The runtime knows which output a line came from: @stream finds the egg's stderr line, and its stdout ones apart.
      const errors = await rest(gateway.url, owner.token, 'GET', `/v1/apps/${slug}/logs?q=${encodeURIComponent('@stream:stderr')}`);
      // (The router may pass /crash again while the egg restarts: each crash is one stderr line.)
      const stderrLines = errors.body.data.map((l: { message: string; stream: string }) => [l.message, l.stream]);
      expect(stderrLines.length).toBeGreaterThan(0);
      expect(new Set(stderrLines.map(String))).toEqual(new Set(['crashing on purpose,stderr']));
      const out = await rest(gateway.url, owner.token, 'GET', `/deployments/${first}/logs?q=${encodeURIComponent('@stream:stdout /crash')}`);
      expect(new Set(out.body.data.map((l: { message: string }) => l.message))).toEqual(new Set(['request /crash']));
    }, 120_000);

    it('restartApp recreates the container with the egg’s current memory', async () => {
      const [before] = (await containersOf(first)).filter((x) => x.State === 'running');
      await gqlOk(gateway.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: 384 });
      await gqlOk(gateway.url, owner.token, RestartAppDocument, { slug });
      expect((await served(slug, '/restarted')).body).toBe('v1 /restarted');
      const after = await containersOf(first);
      expect(after).toHaveLength(1);
      expect(after[0].Id).not.toBe(before.Id);
      expect((await d.getContainer(after[0].Id).inspect()).HostConfig.Memory).toBe(384 * 1024 * 1024);
    }, 120_000);

    it('a gateway restart leaves the container running, and the next gateway adopts it (no second container)', async () => {
      const [before] = (await containersOf(first)).filter((x) => x.State === 'running');
      // A line the container writes before the gateway stops, stored by its runner.
      await requestLogged(first, '/before-stop');
      await gateway.stop();
      const still = await d.getContainer(before.Id).inspect();
      expect(still.State.Running).toBe(true);
      gateway = buildApp(t.config);
      await gateway.start(0);
      const r = await get(slug, '/after-restart');
      expect(r).toMatchObject({ status: 200, body: 'v1 /after-restart' });
      const after = await containersOf(first);
      expect(after.map((c) => c.Id)).toEqual([before.Id]);
      // The new runner follows it: the request's line arrives in the log.
      await requestLogged(first, '/adopted');
      // Adopting, the new runner passed on only the container's lines it had not stored: none twice.
      const stored = await runtimeLines(first);
      expect(stored.filter((l) => l.message === 'request /before-stop')).toHaveLength(1);
    }, 120_000);

    it('a gateway that dies holding the egg: another adopts its container once the lease lapses, not before (no second container)', async () => {
      const [before] = (await containersOf(first)).filter((x) => x.State === 'running');
      await gateway.stop();
      // While no gateway follows it the egg serves a request (straight at its published port) and
      // logs it; then a line of the platform's is stored, stamped later by the gateway's clock (as
      // a request line the next gateway's router writes before its runner looks may be). The
      // container's line is still new to the runner that adopts it.
      const published = before.Ports.find((p) => p.PublicPort && p.IP === '127.0.0.1')!.PublicPort;
      expect(await (await fetch(`http://127.0.0.1:${published}/in-the-gap`)).text()).toBe('v1 /in-the-gap');
      const db = new Client({ connectionString: t.db.url });
      await db.connect();
      await db.query(
        `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message)
         SELECT id, app_id, (SELECT max(seq) + 1 FROM log_lines WHERE deployment_id = $1), now() + interval '1 second', 'runtime', 'GET /elsewhere 200 1ms'
           FROM deployments WHERE id = $1`,
        [first],
      );
      // Left as a crashed gateway leaves it: claimed, with a lease nobody renews.
      const lapses = (
        await db.query<{ runner_lease_until: Date }>(
          `UPDATE apps SET runner_id = 'gw_crashed', runner_lease_until = now() + interval '2 seconds' WHERE slug = $1 RETURNING runner_lease_until`,
          [slug],
        )
      ).rows[0].runner_lease_until;
      await db.end();
      gateway = buildApp({ ...t.config, leaseMs: 1000 });
      await gateway.start(0);
      const runner = gateway.services.deployments.supervisor.runnerId;
      // No event says a lease was claimed: the row is read until it says so (bounded by jest's timeout).
      await until(
        'the new gateway to claim the egg',
        async () => {
          const [row] = await gateway.ds.query<Array<{ runner_id: string }>>('SELECT runner_id FROM apps WHERE slug = $1', [slug]);
          return row.runner_id === runner;
        },
        Infinity,
      );
      expect(Date.now()).toBeGreaterThanOrEqual(lapses.getTime());
      await requestLogged(first, '/after-crash');
      expect((await runtimeLines(first)).filter((l) => l.message === 'request /in-the-gap')).toHaveLength(1);
      expect((await containersOf(first)).map((c) => c.Id)).toEqual([before.Id]);
    }, 120_000);

    it('DELETE during a build stops it: no container and no image of it are left', async () => {
      const slow = {
        ...eggFiles('slow'),
        Dockerfile: `FROM ${base}\nCOPY server.js /app/server.js\nRUN echo slow build ${Date.now()} && sleep 30\nCMD ["node", "/app/server.js"]\n`,
      };
      const up = await upload({ url: gateway.url }, owner.token, slug, await sourceArchive(slow));
      const { deploy } = await gqlOk(gateway.url, owner.token, DeployDocument, { input: { project: slug, source: up.body.id } });
      const client = wsClient(gateway.url, owner.token);
      try {
        const stream = collect(client, DeploymentLogStreamDocument, { id: deploy.id, type: 'BUILD' });
        await waitForItem(stream, (i) => i.deploymentLogs.message.startsWith('slow build'));
        stream.unsubscribe();
      } finally {
        await client.dispose();
      }
      await gqlOk(gateway.url, owner.token, DeleteDeploymentDocument, { id: deploy.id });
      await until(
        'the cancelled build to clean up',
        async () =>
          (await containersOf(deploy.id)).length === 0 &&
          (await d.listImages({ filters: { reference: [imageTag({ slug, deploymentId: deploy.id })] } })).length === 0,
      );
      // The egg still serves what it served.
      expect((await served(slug, '/still')).body).toBe('v1 /still');
    }, 120_000);

    it('DELETE leaves no container and no image of the deployment behind', async () => {
      await gqlOk(gateway.url, owner.token, DeleteDeploymentDocument, { id: first });
      expect(await containersOf(first)).toEqual([]);
      await expect(d.getImage(imageTag({ slug, deploymentId: first })).inspect()).rejects.toMatchObject({ statusCode: 404 });
      // The egg falls back to the newest live deployment left, which the router serves once it runs.
      expect((await served(slug, '/fallback')).body).toBe('v2 /fallback');
    }, 120_000);

    it('a cron runs in the live deployment’s image: a real exit code, its output in the runtime log as [cron <id>]; cancel and the reaper stop its container', async () => {
      const { createCron: cron } = await gqlOk(gateway.url, owner.token, CreateCronDocument, {
        app: slug,
        schedule: '0 0 1 1 *',
        command: 'echo "from cron in $HATCHERY_APP"; echo oops >&2; exit 3',
      });
      const client = wsClient(gateway.url, owner.token);
      try {
        const stream = collect(client, DeploymentLogStreamDocument, { id: second, type: 'RUNTIME' });
        const { runCronNow: run } = await gqlOk(gateway.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
        await waitForItem(stream, (i) => i.deploymentLogs.message === `[cron ${cron.id}] from cron in ${slug}`);
        await waitForItem(stream, (i) => i.deploymentLogs.message === `[cron ${cron.id}] oops`);
        stream.unsubscribe();
        const ended = await until('the cron run to end', async () => {
          const [r] = (await gqlOk(gateway.url, owner.token, CronRunsDocument, { app: slug, id: cron.id, first: 1 })).cronRuns.nodes;
          return r.status === 'RUNNING' ? null : r;
        });
        expect(ended).toMatchObject({ id: run.id, status: 'FAILED', exitCode: 3, failureReason: null });
      } finally {
        await client.dispose();
      }
      // This egg's only: the other hosting suite may run crons on the same Engine meanwhile.
      const cronContainers = () => d.listContainers({ all: true, filters: { label: [LABELS.cronRun, `${LABELS.app}=${slug}`] } });
      expect(await cronContainers()).toEqual([]);

      // A long one, cancelled: its container goes.
      const { createCron: long } = await gqlOk(gateway.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 0 1 1 *', command: 'sleep 600' });
      const { runCronNow: sleeping } = await gqlOk(gateway.url, owner.token, RunCronNowDocument, { app: slug, id: long.id });
      await until('the cron container to run', async () =>
        (await cronContainers()).find((c) => c.Labels[LABELS.cronRun] === sleeping.id && c.State === 'running'),
      );
      const { cancelCronRun } = await gqlOk(gateway.url, owner.token, CancelCronRunDocument, { app: slug, id: long.id, run: sleeping.id });
      expect(cancelCronRun).toMatchObject({ status: 'FAILED', exitCode: null, failureReason: 'cancelled' });
      expect(await cronContainers()).toEqual([]);

      // One whose run another gateway gave up (its row says so): the reaper removes its container.
      const { runCronNow: orphan } = await gqlOk(gateway.url, owner.token, RunCronNowDocument, { app: slug, id: long.id });
      await until('the orphan cron container to run', async () =>
        (await cronContainers()).find((c) => c.Labels[LABELS.cronRun] === orphan.id && c.State === 'running'),
      );
      await gateway.ds.query(`UPDATE cron_runs SET status = 'failed', finished_at = now() WHERE id = $1`, [orphan.id]);
      expect(await gateway.services.crons.reap()).toBe(1);
      expect(await cronContainers()).toEqual([]);

      // No live deployment: the run fails without an exit code.
      const bare = await newEgg();
      const { createCron: none } = await gqlOk(gateway.url, owner.token, CreateCronDocument, { app: bare, schedule: '0 0 1 1 *', command: 'exit 0' });
      await gqlOk(gateway.url, owner.token, RunCronNowDocument, { app: bare, id: none.id });
      const failed = await until('the run without a deployment to end', async () => {
        const [r] = (await gqlOk(gateway.url, owner.token, CronRunsDocument, { app: bare, id: none.id, first: 1 })).cronRuns.nodes;
        return r.status === 'RUNNING' ? null : r;
      });
      expect(failed).toMatchObject({ status: 'FAILED', exitCode: null, failureReason: `${bare} has no live deployment to run the command in` });
    }, 120_000);

    it('a volume is a Docker volume at /data: used_mb grows as the egg writes; erasing it now removes the data', async () => {
      const vol = await newEgg();
      await gateway.services.apps.setTier(vol, 'always_on');
      {
        expect((await rest(gateway.url, owner.token, 'POST', `/v1/apps/${vol}/volume`, { size_mb: 20 })).status).toBe(201);
        const writer = `
const fs = require('fs');
require('http').createServer((q, r) => {
  if (q.url.startsWith('/write/')) fs.writeFileSync('/data/blob', Buffer.alloc(Number(q.url.slice(7)) * 1024 * 1024, 1));
  r.end(fs.existsSync('/data/blob') ? String(fs.statSync('/data/blob').size) : 'none');
}).listen(process.env.PORT);
`;
        const live = await deployFiles(vol, { 'package.json': JSON.stringify({ name: 'vol', scripts: { start: 'node server.js' } }), 'server.js': writer });
        expect(live.status).toBe('LIVE');
        expect((await rest(gateway.url, owner.token, 'GET', `/v1/apps/${vol}/volume`)).body).toMatchObject({ size_mb: 20, used_mb: 0, over_quota: false });
        expect((await get(vol, '/write/25')).body).toBe(String(25 * 1024 * 1024));
        expect((await rest(gateway.url, owner.token, 'GET', `/v1/apps/${vol}/volume`)).body).toMatchObject({ used_mb: 25, over_quota: true });
        // The job's measurement (every minute) sees the same.
        expect((await gateway.services.volumes.measure()).get(vol)).toBe(25);
        expect((await get(vol, '/write/5')).body).toBe(String(5 * 1024 * 1024));
        expect((await rest(gateway.url, owner.token, 'GET', `/v1/apps/${vol}/volume`)).body).toMatchObject({ used_mb: 5, over_quota: false });

        expect((await rest(gateway.url, owner.token, 'DELETE', `/v1/apps/${vol}/volume?now=true`)).status).toBe(204);
        // The running egg still mounts it, but what it held is gone.
        expect((await get(vol, '/')).body).toBe('none');
      }
    }, 120_000);

    it('a hostile archive is refused on the Docker runtime too, with nothing stored', async () => {
      const rows = await storedRows({ ...t, gateway });
      const res = await upload({ url: gateway.url }, owner.token, slug, tarGz([{ path: '../escape.js', body: 'x' }]));
      expect(res.status).toBe(422);
      expect(res.body.errors[0].field).toBe('source');
      expect(await storedRows({ ...t, gateway })).toEqual(rows);
    });

    it('a free egg sleeps when idle (no energy metered meanwhile) and a request wakes it and is answered', async () => {
      const free = await newEgg();
      {
        const live = await deployFiles(free, eggFiles('zz'));
        expect(live.status).toBe('LIVE');
        const client = wsClient(gateway.url, owner.token);
        try {
          const stream = collect(client, DeploymentLogStreamDocument, { id: live.id, type: 'RUNTIME' });
          await waitForItem(stream, (i) => i.deploymentLogs.message.startsWith('==> Sleeping:'));
          const [c] = await containersOf(live.id);
          expect(c.State).not.toBe('running');
          const [row] = await gateway.ds.query<Array<{ slept_at: Date | null }>>('SELECT slept_at FROM deployments WHERE id = $1', [live.id]);
          expect(row.slept_at).toBeInstanceOf(Date);

          const woken = await get(free, '/wake');
          expect(woken).toMatchObject({ status: 200, body: 'zz /wake' });
          await waitForItem(stream, (i) => i.deploymentLogs.message.startsWith('==> Waking'));
          const [after] = await gateway.ds.query<Array<{ slept_at: Date | null }>>('SELECT slept_at FROM deployments WHERE id = $1', [live.id]);
          expect(after.slept_at).toBeNull();
          stream.unsubscribe();
        } finally {
          await client.dispose();
        }
      }
    }, 120_000);

    more?.(() => ({ gateway, owner, newEgg, deployFiles, get, hostOf, runtimeLines }));
  });
}
