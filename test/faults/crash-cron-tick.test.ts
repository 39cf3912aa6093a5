import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createDataSource } from '../../src/data-source';
import { newId } from '../../src/ids';
import { createTestDatabase, TestDatabase } from '../support/db';
import { TEST_KEY } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { ChildGateway, childEnv, spawnGateway, until } from './helpers';

/**
 * A gateway process killed (SIGKILL) in the middle of a scheduler tick. 800 crons are due at once:
 * 500 of one owner (X, due a minute ago) and 300 of another (Y, due now). The scheduler claims
 * them in batches of 500 in order of due time, each batch in its own transaction, so X's batch is
 * committed and its runs are running when Y's batch is claimed. The test holds Y's energy account
 * row locked (the claim locks the owners' accounts to check their energy), which stops the
 * gateway's second batch in the middle of its transaction: Y's crons locked and moved on, but
 * nothing committed. There the process is killed. A new process on the same database then
 * records each (cron, due time) exactly once: X's runs, left RUNNING by the dead process, are
 * given up as failed and not run again; Y's due times, whose claim died with the process, are run
 * once. Nothing is left running, nothing is charged twice.
 */
describe('crash: SIGKILL in the middle of a cron scheduler tick', () => {
  const X_CRONS = 500; // one full batch of the scheduler (TICK_BATCH)
  const Y_CRONS = 300;
  const MINUTE = 60_000;
  let db: TestDatabase;
  let ds: DataSource;
  let lock: Client;
  const procs: ChildGateway[] = [];
  let x: TestUser;
  let y: TestUser;
  const due = new Date(Math.floor(Date.now() / 1000) * 1000 - 1000);
  const xDue = new Date(due.getTime() - MINUTE);
  const xCrons: string[] = [];
  const yCrons: string[] = [];

  const common = {
    // Both due times stay "not missed" for as long as the test may take.
    HATCHERY_CRON_MISSED_AFTER_MS: '600000',
    HATCHERY_CRON_TICK_MS: '100',
    HATCHERY_JOBS: 'off',
    HATCHERY_WEBHOOK_WORKER: 'off',
    HATCHERY_RATE_LIMIT_PER_MIN: '1000000',
    HATCHERY_RATE_LIMIT_ANON_PER_MIN: '1000000',
  };

  const one = async <T>(sql: string, params: unknown[] = []): Promise<T> => (await ds.query(sql, params))[0];

  async function insertCrons(appId: string, n: number, at: Date): Promise<string[]> {
    const now = new Date();
    const ids = Array.from({ length: n }, () => newId('cron', now));
    await ds.query(
      `INSERT INTO crons (id, app_id, schedule, command, enabled, next_run_at, created_at, updated_at)
       SELECT id, $2, '0 0 1 1 *', 'backup --all', true, $3, $4, $4 FROM unnest($1::text[]) AS id`,
      [ids, appId, at, now],
    );
    return ids;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource(db.url);
    await ds.initialize();
    // Owners, eggs and energy accounts, made by an in-process gateway that never ticks.
    const setup = buildApp(
      loadConfig({
        HATCHERY_ROUTER_PORT: '0',
        LOG_LEVEL: 'silent',
        HATCHERY_JOBS: 'off',
        HATCHERY_CRON_TICK_MS: '0',
        HATCHERY_ENCRYPTION_KEY: TEST_KEY,
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
      }),
    );
    const url = await setup.start(0);
    try {
      x = await makeUser(setup);
      y = await makeUser(setup);
      const xApp = (await makeApp(url, x)).slug;
      const yApp = (await makeApp(url, y)).slug;
      await setup.services.energy.balanceOf(x.id);
      await setup.services.energy.balanceOf(y.id);
      const appId = async (slug: string) => (await one<{ id: string }>('SELECT id FROM apps WHERE slug = $1', [slug])).id;
      // Yearly crons whose next due time is set by hand: one due time each in this test.
      xCrons.push(...(await insertCrons(await appId(xApp), X_CRONS, xDue)));
      yCrons.push(...(await insertCrons(await appId(yApp), Y_CRONS, due)));
    } finally {
      await setup.stop();
    }
    lock = new Client({ connectionString: db.url });
    await lock.connect();
  }, 60_000);

  afterAll(async () => {
    for (const p of procs) await p.kill('SIGKILL');
    await lock?.end().catch(() => undefined);
    await ds?.destroy();
    await db?.drop();
  }, 30_000);

  it('is killed with one batch committed and the next held in the middle of its claim', async () => {
    await lock.query('BEGIN');
    await lock.query('SELECT 1 FROM energy_accounts WHERE user_id = $1 FOR UPDATE', [y.id]);
    const holder = (await lock.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;

    // Gateway A: commands that last a minute, so X's runs are still running when it dies.
    const a = await spawnGateway(childEnv(db.url, { ...common, HATCHERY_SIM_COMMAND_MS: '60000' }));
    procs.push(a);
    const blocked = await until(
      "A's claim of Y's batch to wait for the account lock",
      async () => (await ds.query(`SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [holder]))[0]?.pid as number | undefined,
      1500,
      20,
    );
    expect(await one(`SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'running')::int AS running FROM cron_runs`)).toEqual({
      n: X_CRONS,
      running: X_CRONS,
    });
    expect(await a.kill('SIGKILL')).toBe('SIGKILL');

    // The lock goes; the dead process's transaction can only roll back.
    await lock.query('ROLLBACK');
    await until(
      "the dead process's blocked connection to end",
      async () => (await ds.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [blocked])).length === 0,
      500,
      20,
    );

    const runs: Array<{ cron_id: string; status: string; scheduled_at: Date }> = await ds.query('SELECT cron_id, status, scheduled_at FROM cron_runs');
    expect(runs.map((r) => r.cron_id).sort()).toEqual([...xCrons].sort());
    expect(runs.every((r) => r.status === 'running' && r.scheduled_at.getTime() === xDue.getTime())).toBe(true);
    // X's crons moved on to their next due time; Y's claim was never committed: still due.
    const next: Array<{ id: string; next_run_at: Date }> = await ds.query('SELECT id, next_run_at FROM crons');
    const dueNow = next
      .filter((c) => c.next_run_at.getTime() <= Date.now())
      .map((c) => c.id)
      .sort();
    expect(dueNow).toEqual([...yCrons].sort());
    expect(next.filter((c) => yCrons.includes(c.id)).every((c) => c.next_run_at.getTime() === due.getTime())).toBe(true);
  }, 60_000);

  it('a new process records each (cron, due time) exactly once and leaves none running', async () => {
    const b = await spawnGateway(childEnv(db.url, { ...common, HATCHERY_SIM_COMMAND_MS: '50', HATCHERY_CRON_RUN_TIMEOUT_MS: '5000' }));
    procs.push(b);
    await until(
      'every due time recorded and no run left running',
      async () => {
        const { n, running } = await one<{ n: number; running: number }>(
          `SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'running')::int AS running FROM cron_runs`,
        );
        return n === X_CRONS + Y_CRONS && running === 0;
      },
      1500,
      20,
    );

    // One run per (cron, due time), for every cron, at the due time it had.
    const perDue: Array<{ cron_id: string; scheduled_at: Date; n: number }> = await ds.query(
      `SELECT cron_id, scheduled_at, count(*)::int AS n FROM cron_runs WHERE NOT manual GROUP BY cron_id, scheduled_at`,
    );
    expect(perDue).toHaveLength(X_CRONS + Y_CRONS);
    expect(perDue.filter((r) => r.n !== 1)).toEqual([]);
    const dueOf = new Map(perDue.map((r) => [r.cron_id, r.scheduled_at.getTime()]));
    expect(xCrons.every((id) => dueOf.get(id) === xDue.getTime())).toBe(true);
    expect(yCrons.every((id) => dueOf.get(id) === due.getTime())).toBe(true);
    expect(await one(`SELECT count(*)::int AS n FROM cron_runs WHERE manual`)).toEqual({ n: 0 });

    // X's runs died with A: given up as failed, not run again. Y's ran once each on B.
    const outcome: Array<{ owner: string; status: string; exit_code: number | null; finished: boolean; n: number }> = await ds.query(
      `SELECT a.owner_id AS owner, r.status, r.exit_code, r.finished_at IS NOT NULL AS finished, count(*)::int AS n
         FROM cron_runs r JOIN crons c ON c.id = r.cron_id JOIN apps a ON a.id = c.app_id
        GROUP BY 1, 2, 3, 4 ORDER BY n DESC`,
    );
    expect(outcome).toEqual([
      { owner: x.id, status: 'failed', exit_code: null, finished: true, n: X_CRONS },
      { owner: y.id, status: 'success', exit_code: 0, finished: true, n: Y_CRONS },
    ]);

    // Each of Y's runs charged once; nothing for X's given-up runs.
    const charges: Array<{ user_id: string; ref: string; n: number }> = await ds.query(
      `SELECT user_id, ref, count(*)::int AS n FROM energy_ledger WHERE reason = 'cron_run' GROUP BY user_id, ref`,
    );
    const yRuns: Array<{ id: string }> = await ds.query(`SELECT r.id FROM cron_runs r WHERE r.cron_id = ANY($1)`, [yCrons]);
    expect(charges.map((c) => c.ref).sort()).toEqual(yRuns.map((r) => r.id).sort());
    expect(charges.every((c) => c.user_id === y.id && c.n === 1)).toBe(true);

    // Every cron waits for its next due time (next year), and no error was logged.
    const nextDue = await one<{ min: Date }>('SELECT min(next_run_at) AS min FROM crons');
    expect(nextDue.min.getTime()).toBeGreaterThan(Date.now());
    expect(b.output()).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});
