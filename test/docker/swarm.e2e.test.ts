import type Docker from 'dockerode';
import { buildApp, Gateway } from '../../src/app';
import {
  CreateCronDocument,
  CronRunsDocument,
  DeployDocument,
  DeploymentLogStreamDocument,
  RestartAppDocument,
  RollbackDocument,
  RunCronNowDocument,
} from '../../src/client/generated';
import WebSocket from 'ws';
import { imageTag, LABELS } from '../../src/runtime/docker/docker.runtime';
import { serviceName, SwarmRuntime } from '../../src/runtime/docker/swarm.runtime';
import { randomUUID } from 'node:crypto';
import { collect, gqlOk, rest, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser } from '../support/factories';
import { docker, dockerHere, ensureNodeImage, sourceArchive } from '../support/docker';
import { upload } from '../sources/helpers';
import { setTimeout as sleep } from 'node:timers/promises';
import { requestLoop, viaRouter } from '../support/router';

/**
 * Swarm mode needs the Engine to be a swarm manager: CI makes it one (.ci/run); elsewhere these
 * run with HATCHERY_TEST_SWARM=1 after `docker swarm init --advertise-addr 127.0.0.1`.
 */
const describeSwarm = dockerHere && (process.env.CI === 'true' || process.env.HATCHERY_TEST_SWARM === '1') ? describe : describe.skip;

/** Answers `<VERSION> <host name>` (which deploy, which task), writes to /data, crashes on /crash, greets a WebSocket. */
const SERVER = `
const fs = require('fs');
const crypto = require('crypto');
const server = require('http').createServer((req, res) => {
  console.log('request ' + req.url);
  if (req.url === '/crash') { console.error('crashing on purpose'); process.exit(3); }
  if (req.url.startsWith('/write/')) fs.writeFileSync('/data/blob', Buffer.alloc(Number(req.url.slice(7)) * 1024 * 1024, 1));
  res.end(process.env.VERSION + ' ' + require('os').hostname());
});
server.on('upgrade', (req, socket) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  const text = Buffer.from('hello over ws from ' + process.env.VERSION);
  socket.write(Buffer.concat([Buffer.from([0x81, text.length]), text]));
});
server.listen(Number(process.env.PORT));
`;

/** Swarm converges in its own time (task states, rolling updates): asks every 100 ms, for up to a minute. */
async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(100);
  }
}

type ServiceInfo = {
  ID: string;
  UpdateStatus?: { State?: string };
  Spec: { Mode?: { Replicated?: { Replicas?: number } }; UpdateConfig?: { Order?: string }; TaskTemplate: Record<string, any> };
};

describeSwarm('swarm mode: eggs as Swarm services (HATCHERY_DOCKER_MODE=swarm)', () => {
  let d: Docker;
  let base: string;
  let t: TestGateway;
  let gateway: Gateway;
  let owner: TestUser;
  let slug: string;
  let live: string;
  const eggs: string[] = [];
  const domain = 'eggs.test';
  const get = (s: string, urlPath = '/') => viaRouter(gateway.routerUrl, `${s}.${domain}`, urlPath);
  const serviceOf = async (s: string, id: string) => {
    const [svc] = (await d.listServices({ filters: { name: [serviceName({ slug: s, deploymentId: id })] } })) as unknown as ServiceInfo[];
    return svc ?? null;
  };
  const runningTasks = async (s: string, id: string) =>
    (
      (await d.listTasks({ filters: { service: [serviceName({ slug: s, deploymentId: id })], 'desired-state': ['running'] } })) as Array<{
        ID: string;
        Status: { State: string };
      }>
    ).filter((x) => x.Status.State === 'running');

  async function deploySource(s: string, version = 'v1'): Promise<string> {
    const up = await upload(
      { url: gateway.url },
      owner.token,
      s,
      await sourceArchive({ Dockerfile: `FROM ${base}\nCOPY server.js /server.js\nCMD ["node", "/server.js"]\n`, 'server.js': SERVER }),
    );
    const { deploy } = await gqlOk(gateway.url, owner.token, DeployDocument, { input: { project: s, source: up.body.id, env: { VERSION: version } } });
    expect(await settle(gateway.url, owner, deploy.id)).toBe('LIVE');
    return deploy.id;
  }

  beforeAll(async () => {
    d = docker();
    base = await ensureNodeImage(d);
    t = await startGateway({
      HATCHERY_RUNTIME: 'docker',
      HATCHERY_DOCKER_MODE: 'swarm',
      HATCHERY_NODE_IMAGE: base,
      HATCHERY_APPS_DOMAIN: domain,
      HATCHERY_HEALTH_TIMEOUT_MS: '60000',
      HATCHERY_SLEEP_AFTER_MS: '1500',
      HATCHERY_VOLUME_USAGE_MAX_AGE_MS: '0',
    });
    gateway = t.gateway;
    owner = await makeUser(gateway);
    slug = (await makeApp(gateway.url, owner)).slug;
    eggs.push(slug);
    await gateway.services.apps.setTier(slug, 'always_on');
    expect((await rest(gateway.url, owner.token, 'POST', `/v1/apps/${slug}/volume`, { size_mb: 50 })).status).toBe(201);
    expect((await rest(gateway.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { replicas: 2 })).status).toBe(200);
    live = await deploySource(slug);
  }, 240_000);

  afterAll(async () => {
    await gateway?.stop();
    await t?.db.drop();
    for (const s of eggs) {
      for (const svc of (await d.listServices({ filters: { label: [`${LABELS.app}=${s}`] } })) as unknown as ServiceInfo[]) await d.getService(svc.ID).remove();
      for (const c of await d.listContainers({ all: true, filters: { label: [`${LABELS.app}=${s}`] } })) {
        await d
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined); // gone with its service meanwhile
      }
    }
  });

  it('a deployment is a service: two replicas, start-first updates, memory as a limit, placed on the node of its volume; the router balances them', async () => {
    const svc = await serviceOf(slug, live);
    expect(svc.Spec.Mode?.Replicated?.Replicas).toBe(2);
    expect(svc.Spec.UpdateConfig?.Order).toBe('start-first');
    expect(svc.Spec.TaskTemplate.Resources.Limits.MemoryBytes).toBe(512 * 1024 * 1024);
    expect(svc.Spec.TaskTemplate.Placement.Constraints).toEqual([expect.stringMatching(/^node\.id==\w+$/)]);
    // Both answered before it went live; Swarm reports their tasks running a moment later.
    await until('both tasks to be reported running', async () => (await runningTasks(slug, live)).length === 2);
    const served = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = await get(slug, `/n${i}`);
      expect(r.status).toBe(200);
      served.add(r.body);
    }
    expect(served.size).toBe(2);
  }, 60_000);

  it('the service’s log lines arrive over deploymentLogs with the replica that wrote them; a crash is logged with its exit code and Swarm starts another', async () => {
    const client = wsClient(gateway.url, owner.token);
    try {
      const stream = collect(client, DeploymentLogStreamDocument, { id: live, type: 'RUNTIME' });
      await get(slug, '/marked');
      await waitForItem(stream, (i) => /^\[replica [12]\] request \/marked$/.test(i.deploymentLogs.message));
      await get(slug, '/crash');
      await waitForItem(stream, (i) => /^==> replica [12] of .* exited with code 3; Swarm starts it again$/.test(i.deploymentLogs.message));
      stream.unsubscribe();
    } finally {
      await client.dispose();
    }
    await until('two tasks running again', async () => (await runningTasks(slug, live)).length === 2);
  }, 90_000);

  it('a volume’s used_mb grows when a task writes to /data', async () => {
    expect((await get(slug, '/write/3')).status).toBe(200);
    expect((await rest(gateway.url, owner.token, 'GET', `/v1/apps/${slug}/volume`)).body).toMatchObject({ used_mb: 3 });
  }, 60_000);

  it('restartApp rolls the service onto the new memory, new tasks first: requests meanwhile are all answered', async () => {
    expect((await rest(gateway.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 384 })).status).toBe(200);
    const before = (await serviceOf(slug, live)).ID;
    let done = false;
    const statuses: number[] = [];
    const loop = (async () => {
      while (!done) statuses.push((await get(slug, '/during')).status);
    })();
    try {
      await gqlOk(gateway.url, owner.token, RestartAppDocument, { slug });
      await until('the rolling update to complete with 384 MB', async () => {
        const svc = await serviceOf(slug, live);
        return svc?.Spec.TaskTemplate.Resources.Limits.MemoryBytes === 384 * 1024 * 1024 && svc.UpdateStatus?.State === 'completed';
      });
    } finally {
      done = true;
      await loop;
    }
    // Each running task is a new one, with the new limit.
    for (const task of await runningTasks(slug, live)) {
      const info = (await d.getTask(task.ID).inspect()) as { Spec: { Resources: { Limits: { MemoryBytes: number } } } };
      expect(info.Spec.Resources.Limits.MemoryBytes).toBe(384 * 1024 * 1024);
    }
    expect((await serviceOf(slug, live)).ID).toBe(before);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  }, 120_000);

  it('restartApp with nothing changed still replaces every task, one at a time', async () => {
    const before = (await runningTasks(slug, live)).map((x) => x.ID);
    await gqlOk(gateway.url, owner.token, RestartAppDocument, { slug });
    await until('every task to be replaced', async () => {
      const svc = await serviceOf(slug, live);
      const now = (await runningTasks(slug, live)).map((x) => x.ID);
      return svc?.UpdateStatus?.State === 'completed' && now.length === 2 && now.every((id) => !before.includes(id));
    });
  }, 120_000);

  it('a cron run is a one-shot job service: its exit code and output, and nothing of it left', async () => {
    const { createCron: cron } = await gqlOk(gateway.url, owner.token, CreateCronDocument, {
      app: slug,
      schedule: '0 0 1 1 *',
      command: 'echo "from a swarm job"; exit 3',
    });
    const client = wsClient(gateway.url, owner.token);
    try {
      const stream = collect(client, DeploymentLogStreamDocument, { id: live, type: 'RUNTIME' });
      await gqlOk(gateway.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
      await waitForItem(stream, (i) => i.deploymentLogs.message === `[cron ${cron.id}] from a swarm job`);
      stream.unsubscribe();
    } finally {
      await client.dispose();
    }
    const ended = await until('the run to end', async () => {
      const [r] = (await gqlOk(gateway.url, owner.token, CronRunsDocument, { app: slug, id: cron.id, first: 1 })).cronRuns.nodes;
      return r.status === 'RUNNING' ? null : r;
    });
    expect(ended).toMatchObject({ status: 'FAILED', exitCode: 3 });
    expect(await d.listServices({ filters: { label: [LABELS.cronRun] } })).toEqual([]);
  }, 120_000);

  it('a gateway restart adopts the service as it is: same service, same tasks', async () => {
    const tasks = (await runningTasks(slug, live)).map((x) => x.ID).sort();
    await gateway.stop();
    gateway = buildApp(t.config);
    await gateway.start(0);
    expect((await get(slug, '/adopted')).status).toBe(200);
    expect((await runningTasks(slug, live)).map((x) => x.ID).sort()).toEqual(tasks);
  }, 120_000);

  it('WebSockets pass through the router to a task', async () => {
    const { port } = new URL(gateway.routerUrl);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: `${slug}.${domain}` } });
    try {
      const greeting = await new Promise<string>((resolve, reject) => {
        ws.once('message', (m: Buffer) => resolve(m.toString()));
        ws.once('error', reject);
      });
      expect(greeting).toBe('hello over ws from v1');
    } finally {
      ws.terminate();
    }
  }, 60_000);

  let second: string;

  it('a second deploy under a request loop: no request fails, the new version takes over, and the old service goes', async () => {
    const { seen, failures, stop } = requestLoop(() => get(slug, '/loop'));
    const versions = () => seen.map((body) => body.split(' ')[0]);
    try {
      second = await deploySource(slug, 'v2');
      await until('the loop to meet v2', () => Promise.resolve(versions().includes('v2')));
    } finally {
      await stop();
    }
    expect(failures).toEqual([]);
    expect(versions()[0]).toBe('v1');
    expect(versions().at(-1)).toBe('v2');
    await until('the superseded service to go, once drained', async () => (await serviceOf(slug, live)) === null);
  }, 180_000);

  it('rollback runs the old image again as a service, without a build', async () => {
    await gqlOk(gateway.url, owner.token, RollbackDocument, { app: slug, to: live });
    await until('the rollback to serve v1', async () => {
      const r = await get(slug, '/back');
      return r.status === 200 && r.body.startsWith('v1 ');
    });
    // The Engine may list a new service a moment after its tasks answer (seen once in CI).
    const svc = await until('the rolled-back service to be listed', () => serviceOf(slug, live));
    expect(svc.Spec.TaskTemplate.ContainerSpec.Image).toBe(`hatchery/${slug}:${live.toLowerCase()}`);
    await until('the v2 service to go', async () => (await serviceOf(slug, second)) === null);
  }, 120_000);

  it('a free egg scales to zero when idle and a request scales it back and is answered', async () => {
    const free = (await makeApp(gateway.url, owner)).slug;
    eggs.push(free);
    const id = await deploySource(free);
    const sleptAt = async () => (await gateway.ds.query<Array<{ slept_at: Date | null }>>('SELECT slept_at FROM deployments WHERE id = $1', [id]))[0].slept_at;
    const client = wsClient(gateway.url, owner.token);
    try {
      const stream = collect(client, DeploymentLogStreamDocument, { id, type: 'RUNTIME' });
      await waitForItem(stream, (i) => i.deploymentLogs.message.startsWith('==> Sleeping:'));
      stream.unsubscribe();
    } finally {
      await client.dispose();
    }
    // Scaled to zero, and recorded asleep (metering stops).
    expect(await sleptAt()).toBeInstanceOf(Date);
    expect((await serviceOf(free, id))?.Spec.Mode?.Replicated?.Replicas).toBe(0);
    expect((await get(free, '/wake')).status).toBe(200);
    expect((await serviceOf(free, id))?.Spec.Mode?.Replicated?.Replicas).toBe(1);
    expect(await sleptAt()).toBeNull();
  }, 120_000);

  it('DELETE removes the service', async () => {
    const id = await deploySource(slug);
    expect(await serviceOf(slug, id)).not.toBeNull();
    expect((await rest(gateway.url, owner.token, 'DELETE', `/deployments/${id}`)).status).toBe(204);
    await until('the service to go', async () => (await serviceOf(slug, id)) === null);
  }, 120_000);

  it('a runner stopped as it starts leaves no service: stop waits for the start before removing', async () => {
    // The race CI met once: the runner's start looked for the service just after DELETE removed it,
    // found none and created it again, with nobody left to remove it.
    const runtime = new SwarmRuntime(d, { nodeImage: base, buildTimeoutMs: 60_000, healthTimeoutMs: 15_000 });
    // The first deployment's image, kept for rollbacks (its service may be gone by now: the deploy
    // of the test before superseded it, and a superseded service goes once drained).
    const image = imageTag({ slug, deploymentId: live });
    for (let i = 0; i < 3; i++) {
      const spec = { deploymentId: randomUUID(), slug, env: { VERSION: 'race' }, memoryMb: 128, sleeps: false };
      const [repo, tag] = [`hatchery/${slug}`, spec.deploymentId.toLowerCase()];
      await d.getImage(image).tag({ repo, tag });
      await runtime.upsertService(spec);
      let startEnded!: () => void;
      const started = new Promise<void>((resolve) => (startEnded = resolve));
      // A start that fails says so in the log: it ended too.
      const egg = runtime.run(spec, (_type, message) => message.includes('lost track') && startEnded(), {
        wake: () => Promise.resolve(null),
        asleep: () => Promise.resolve(false),
        lastActive: () => Promise.resolve(null),
        // The last step of the runner's start.
        lastLineAt: () => {
          startEnded();
          return Promise.resolve(null);
        },
      });
      await egg.stop();
      await started;
      expect(await runtime.findService(spec.deploymentId)).toBeNull();
      await d.getImage(`${repo}:${tag}`).remove();
    }
  }, 60_000);
});
