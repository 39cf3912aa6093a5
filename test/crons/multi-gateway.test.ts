import { buildApp, Gateway } from '../../src/app';
import { ManualClock } from '../../src/clock';
import { loadConfig } from '../../src/config';
import { startGateway, TEST_KEY, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { createCron, runsOf, settleAllRuns } from './helpers';

/** Two gateways on one database, one clock: each due time runs exactly once. */
describe('cron scheduling across two gateways', () => {
  let t: TestGateway;
  let second: Gateway;
  const clock = new ManualClock('2026-11-20T09:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock });
    second = buildApp(
      loadConfig({
        HATCHERY_ROUTER_PORT: '0',
        LOG_LEVEL: 'silent',
        HATCHERY_JOBS: 'off',
        HATCHERY_SIM_BUILD_MS: '150',
        HATCHERY_SIM_RUNTIME_LOG_MS: '60000',
        HATCHERY_SIM_COMMAND_MS: '20',
        HATCHERY_CRON_TICK_MS: '0',
        HATCHERY_ENCRYPTION_KEY: TEST_KEY,
        HOST: '127.0.0.1',
        DATABASE_URL: t.db.url,
      }),
      { clock },
    );
    await second.start(0);
  });
  afterAll(async () => {
    await second?.stop();
    await t.stop();
  });

  /** Runs per (cron, due time), raw SQL. */
  async function runCounts(cronIds: string[]): Promise<Array<{ cron_id: string; scheduled_at: string; n: number }>> {
    const rows: Array<{ cron_id: string; scheduled_at: Date; n: number }> = await t.gateway.ds.query(
      `SELECT cron_id, scheduled_at, count(*)::int AS n FROM cron_runs WHERE cron_id = ANY($1) GROUP BY cron_id, scheduled_at ORDER BY scheduled_at, cron_id`,
      [cronIds],
    );
    return rows.map((r) => ({ cron_id: r.cron_id, scheduled_at: r.scheduled_at.toISOString(), n: r.n }));
  }

  async function crons(day: string, n: number) {
    clock.set(`${day}T09:59:30.000Z`);
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const made = [];
    for (let i = 0; i < n; i++) made.push(await createCron(t, owner.token, slug, '* * * * *', `echo ${i}`));
    return { owner, slug, ids: made.map((c) => c.id) };
  }

  const minutes = (day: string, count: number) => Array.from({ length: count }, (_, i) => `${day}T10:0${i}:00.000Z`);

  it('ticking both gateways at once records exactly one run per cron and due time', async () => {
    const day = '2026-11-20';
    const { owner, slug, ids } = await crons(day, 3);
    const due = minutes(day, 6);
    for (const at of due) {
      clock.set(at);
      await Promise.all([t.gateway.services.crons.tick(), second.services.crons.tick()]);
      await settleAllRuns(t.gateway.ds);
    }
    expect(await runCounts(ids)).toEqual(due.flatMap((at) => [...ids].sort().map((id) => ({ cron_id: id, scheduled_at: at, n: 1 }))));
    for (const id of ids) {
      const runs = await runsOf(t, owner.token, slug, id);
      expect(runs.map((r) => [r.scheduled_at, r.status])).toEqual([...due].reverse().map((at) => [at, 'success']));
    }
  });

  it('ten concurrent ticks spread over both gateways still record exactly one run per cron and due time', async () => {
    const day = '2026-11-21';
    const { ids } = await crons(day, 4);
    const due = minutes(day, 5);
    for (const at of due) {
      clock.set(at);
      await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? second : t.gateway).services.crons.tick()));
      await settleAllRuns(t.gateway.ds);
    }
    expect(await runCounts(ids)).toEqual(due.flatMap((at) => [...ids].sort().map((id) => ({ cron_id: id, scheduled_at: at, n: 1 }))));
    const [row] = await t.gateway.ds.query(`SELECT count(*)::int AS n FROM cron_runs WHERE cron_id = ANY($1) AND status <> 'success'`, [ids]);
    expect(row.n).toBe(0);
  });

  it('a cron created through one gateway is run by whichever gateway ticks, and seen the same through both', async () => {
    const day = '2026-11-22';
    clock.set(`${day}T09:59:30.000Z`);
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(second.url, owner);
    const cron = await createCron({ ...t, url: second.url }, owner.token, slug, '* * * * *', 'exit 2');
    clock.set(`${day}T10:00:00.000Z`);
    await t.gateway.services.crons.tick();
    await settleAllRuns(t.gateway.ds);
    clock.set(`${day}T10:01:00.000Z`);
    await second.services.crons.tick();
    await settleAllRuns(t.gateway.ds);
    const viaFirst = await runsOf(t, owner.token, slug, cron.id);
    const viaSecond = await runsOf({ ...t, url: second.url }, owner.token, slug, cron.id);
    expect(viaSecond).toEqual(viaFirst);
    expect(viaFirst.map((r) => [r.scheduled_at, r.status, r.exit_code])).toEqual([
      [`${day}T10:01:00.000Z`, 'failed', 2],
      [`${day}T10:00:00.000Z`, 'failed', 2],
    ]);
  });
});
