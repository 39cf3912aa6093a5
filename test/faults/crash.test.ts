import { DataSource } from 'typeorm';
import { CreateAppDocument, DeploymentLogStreamDocument, DeploymentStatusDocument, RunCronNowDocument } from '../../src/client/generated';
import { systemClock } from '../../src/clock';
import { createDataSource } from '../../src/data-source';
import { loadConfig } from '../../src/config';
import { AccountsService } from '../../src/modules/accounts/accounts.service';
import { createTestDatabase, TestDatabase } from '../support/db';
import { collect, gqlOk, rest, wsClient } from '../support/gateway';
import { expectSigned, Receiver } from '../webhooks/helpers';
import { ChildGateway, childEnv, spawnGateway, until } from './helpers';

/**
 * Crash tests with real processes: a gateway (`node src/main.ts`) is killed with SIGKILL at a
 * moment when a build is in progress, a cron run is running, and a status change's webhook
 * delivery is still in the outbox (its worker is off). A new gateway process on the same
 * database then finishes what was left: the build resumes and goes live once (logging that it
 * resumed), the interrupted run is given up as failed and the cron runs again normally, and the
 * delivery arrives exactly once at a local https receiver. Nothing stays stuck, nothing is lost,
 * nothing is done twice.
 */
describe('crash: SIGKILL mid-build, mid-cron-run and before a webhook delivery', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let receiver: Receiver;
  const procs: ChildGateway[] = [];
  let a: ChildGateway;
  let b: ChildGateway;
  let token: string;
  let slug: string;
  let deploymentId: string;
  let cronId: string;
  let runId: string;
  let hook: { id: string; secret: string };
  const HOOK_PATH = '/crash';

  const common = () => ({
    HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    HATCHERY_WEBHOOK_CA_FILE: receiver.certFile,
    HATCHERY_LEASE_MS: '1000',
    HATCHERY_RATE_LIMIT_PER_MIN: '1000000',
    HATCHERY_RATE_LIMIT_ANON_PER_MIN: '1000000',
  });

  const one = async <T>(sql: string, params: unknown[] = []): Promise<T> => (await ds.query(sql, params))[0];

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource(db.url);
    await ds.initialize();
    receiver = await Receiver.start();
    token = (await new AccountsService(ds, systemClock, loadConfig({}).limits).createUser(`crash-${Date.now()}@example.com`)).token;

    // Gateway A: builds and cron commands that take a minute, and no webhook worker, so each is caught in the middle.
    a = await spawnGateway(
      childEnv(db.url, {
        ...common(),
        HATCHERY_SIM_BUILD_MS: '60000',
        HATCHERY_SIM_COMMAND_MS: '60000',
        HATCHERY_WEBHOOK_WORKER: 'off',
        HATCHERY_CRON_TICK_MS: '0',
      }),
    );
    procs.push(a);
    slug = (await gqlOk(a.url, token, CreateAppDocument, { slug: `crash-${Date.now().toString(36)}` })).createApp.slug;
    const created = await rest(a.url, token, 'POST', `/v1/apps/${slug}/webhooks`, { url: receiver.url(HOOK_PATH), events: ['deploy'] });
    expect(created.status).toBe(201);
    hook = { id: created.body.id, secret: created.body.secret };
    const cron = await rest(a.url, token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 0 1 1 *', command: 'backup --all' });
    expect(cron.status).toBe(201);
    cronId = cron.body.id;

    // The moments: the build is under way (BUILDING, and its first build line streamed) ...
    const dep = await rest(a.url, token, 'POST', '/deploy', { project: slug, env: { SECRET: 'kept' } });
    expect(dep.status).toBe(201);
    deploymentId = dep.body.id;
    const client = wsClient(a.url, token);
    const status = collect(client, DeploymentStatusDocument, { id: deploymentId });
    const lines = collect(client, DeploymentLogStreamDocument, { id: deploymentId, type: 'BUILD' });
    expect((await status.waitFor(1))[0].deploymentStatus.status).toBe('BUILDING');
    await lines.waitFor(1);
    await client.dispose();
    // ... a cron run is running ...
    const run = await gqlOk(a.url, token, RunCronNowDocument, { app: slug, id: cronId });
    expect(run.runCronNow.status).toBe('RUNNING');
    runId = run.runCronNow.id;
    expect(await one(`SELECT status FROM cron_runs WHERE id = $1`, [runId])).toEqual({ status: 'running' });
    // ... and the BUILDING event waits in the outbox.
    await until(
      'the building event in the outbox',
      async () => (await ds.query(`SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'`, [hook.id])).length === 1,
    );

    expect(await a.kill('SIGKILL')).toBe('SIGKILL');
  }, 60_000);

  afterAll(async () => {
    for (const p of procs) await p.kill('SIGKILL');
    await ds?.destroy();
    await receiver?.stop();
    await db?.drop();
  }, 30_000);

  it('leaves a build, a run and a delivery unfinished', async () => {
    expect(await one(`SELECT status FROM deployments WHERE id = $1`, [deploymentId])).toEqual({ status: 'building' });
    expect(await one(`SELECT status, finished_at FROM cron_runs WHERE id = $1`, [runId])).toEqual({ status: 'running', finished_at: null });
    const rows = await ds.query(`SELECT status, attempts, payload FROM webhook_deliveries WHERE webhook_id = $1`, [hook.id]);
    expect(
      rows.map((r: { status: string; attempts: number; payload: string }) => [r.status, r.attempts, JSON.parse(r.payload).data.deployment.status]),
    ).toEqual([['pending', 0, 'building']]);
    expect(receiver.received(HOOK_PATH)).toEqual([]);
  });

  it('a new process finishes all of it, each exactly once', async () => {
    // The dead builder's lease lapses (1 s); nothing else announces it.
    await until(
      'the lease of the dead builder to lapse',
      async () => (await one<{ lapsed: boolean }>(`SELECT lease_until < now() AS lapsed FROM deployments WHERE id = $1`, [deploymentId])).lapsed,
      300,
      20,
    );

    b = await spawnGateway(
      childEnv(db.url, {
        ...common(),
        HATCHERY_SIM_BUILD_MS: '300',
        HATCHERY_SIM_COMMAND_MS: '50',
        HATCHERY_CRON_TICK_MS: '100',
        HATCHERY_CRON_RUN_TIMEOUT_MS: '1000',
      }),
    );
    procs.push(b);

    // The build: resumed, live once.
    const client = wsClient(b.url, token);
    const status = collect(client, DeploymentStatusDocument, { id: deploymentId });
    for (let n = 1; (await status.waitFor(n))[n - 1].deploymentStatus.status === 'BUILDING'; n++);
    expect(status.items.map((i) => i.deploymentStatus.status).filter((s) => s !== 'BUILDING')).toEqual(['LIVE']);
    status.unsubscribe();
    await client.dispose();
    const got = await rest(b.url, token, 'GET', `/deployments/${deploymentId}`);
    expect(got.body).toMatchObject({ status: 'live', env_keys: ['SECRET'] });
    const logs = await rest(b.url, token, 'GET', `/deployments/${deploymentId}/logs?type=build&limit=1000`);
    const messages: string[] = logs.body.data.map((l: { message: string }) => l.message);
    expect(messages.filter((m) => /resumed/i.test(m))).toHaveLength(1);
    expect(messages.filter((m) => m === '==> Build succeeded')).toHaveLength(1);
    expect(messages.indexOf('==> Build succeeded')).toBeGreaterThan(messages.findIndex((m) => /resumed/i.test(m)));
    expect((await rest(b.url, token, 'GET', `/deployments?project=${slug}`)).body.data).toHaveLength(1);

    // The webhook: the event A left in the outbox and the one B wrote, each delivered once, signed.
    const delivered = await receiver.waitFor(HOOK_PATH, 2);
    for (const r of delivered) expectSigned(hook.secret, r);
    // (Deliveries carry no ordering promise: the old event may arrive after the new one.)
    expect(delivered.map((r) => r.json.data.deployment.status).sort()).toEqual(['building', 'live']);
    await until('both deliveries to be recorded', async () => {
      const rows: Array<{ status: string }> = await ds.query(`SELECT status FROM webhook_deliveries WHERE webhook_id = $1`, [hook.id]);
      return rows.length === 2 && rows.every((r) => r.status !== 'pending');
    });
    const rows: Array<{ message_id: string; status: string; attempts: number }> = await ds.query(
      `SELECT message_id, status, attempts FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id`,
      [hook.id],
    );
    expect(rows.map((r) => [r.status, r.attempts])).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
    ]);
    expect(delivered.map((r) => r.headers['webhook-id']).sort()).toEqual(rows.map((r) => r.message_id).sort());

    // The cron: the interrupted run is given up (failed, not run again, not charged) ...
    const runs = async () =>
      (await rest(b.url, token, 'GET', `/v1/apps/${slug}/crons/${cronId}/runs`)).body.data as Array<{
        id: string;
        status: string;
        exit_code: number | null;
        finished_at: string | null;
      }>;
    await until('the interrupted run to be failed', async () => (await runs()).find((r) => r.id === runId)?.status === 'failed', 300, 20);
    expect((await runs()).find((r) => r.id === runId)).toMatchObject({ status: 'failed', exit_code: null, finished_at: expect.any(String) });
    // ... and the cron runs again, once.
    const again = await gqlOk(b.url, token, RunCronNowDocument, { app: slug, id: cronId });
    await until('the new run to end', async () => (await runs()).find((r) => r.id === again.runCronNow.id)?.status !== 'running', 300, 20);
    expect((await runs()).map((r) => [r.id, r.status, r.exit_code])).toEqual([
      [again.runCronNow.id, 'success', 0],
      [runId, 'failed', null],
    ]);
    const charged: Array<{ ref: string }> = await ds.query(`SELECT ref FROM energy_ledger WHERE reason = 'cron_run'`);
    expect(charged.map((c) => c.ref)).toEqual([again.runCronNow.id]);

    // Nothing stuck anywhere, and the receiver got nothing more.
    expect(await one(`SELECT count(*)::int AS n FROM deployments WHERE status = 'building'`)).toEqual({ n: 0 });
    expect(await one(`SELECT count(*)::int AS n FROM cron_runs WHERE status = 'running'`)).toEqual({ n: 0 });
    expect(await one(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`)).toEqual({ n: 0 });
    expect(receiver.received(HOOK_PATH)).toHaveLength(2);
    expect(b.output()).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});
