import { EnergyDocument, EnergyLedgerDocument, RunCronNowDocument } from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { newId } from '../../src/ids';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { StatementLog } from '../support/statements';
import { createCron, getRuns, listedCron, MINUTE_MS, RunRecord, runsOf, settleRuns, storedRuns, TrackingRuntime } from './helpers';

const KEPT = 100;

/**
 * Run history is capped at the newest 100 runs per cron, on every path that records runs (the
 * scheduler's batches and runCronNow), so a depleted account's `* * * * *` cron cannot grow
 * cron_runs forever. Driven by a ManualClock and `tick()`; each test has a day of its own.
 */
describe('cron run history: the newest 100 runs per cron', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const sql = new StatementLog();
  const clock = new ManualClock('2026-11-02T09:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds, 0)), db: { onQuery: sql.onQuery } });
  });
  afterAll(() => t.stop());
  // Crons of earlier tests would be due too when the clock jumps ahead.
  beforeEach(() => t.gateway.ds.query('UPDATE crons SET enabled = false, next_run_at = NULL'));

  const tick = () => t.gateway.services.crons.tick();

  async function ownerAndEgg(): Promise<{ owner: TestUser; slug: string }> {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    return { owner, slug };
  }

  const deplete = (owner: TestUser) => t.gateway.services.energy.setBuckets(owner.email, { daily: 0, weekly: 0, bonus: 0, pack: 0 });

  /** `n` finished runs of the cron, one a minute up to `before` (history from before this rule). */
  async function seedHistory(cronId: string, before: Date, n: number): Promise<void> {
    const at = Array.from({ length: n }, (_, i) => new Date(before.getTime() - (n - i) * MINUTE_MS));
    await t.gateway.ds.query(
      `INSERT INTO cron_runs (id, cron_id, status, exit_code, scheduled_at, started_at, finished_at, manual)
       SELECT v.id, $1, 'success', 0, v.at, v.at, v.at, false FROM unnest($2::text[], $3::timestamptz[]) AS v(id, at)`,
      [cronId, at.map((d) => newId('run', d)), at],
    );
  }

  const count = async (cronId: string): Promise<number> => (await storedRuns(t.gateway.ds, cronId)).length;

  it("a depleted account's '* * * * *' cron: 105 due times → the newest 100 runs stored and listed; last_run is the newest", async () => {
    clock.set('2026-11-02T10:00:30.000Z');
    const { owner, slug } = await ownerAndEgg();
    await deplete(owner);
    const cron = await createCron(t, owner.token, slug, '* * * * *');
    const due: string[] = [];
    for (let i = 1; i <= 105; i++) {
      const at = new Date(Date.parse('2026-11-02T10:00:00.000Z') + i * MINUTE_MS);
      clock.set(at);
      expect(await tick()).toBe(1);
      due.push(at.toISOString());
      expect(await count(cron.id)).toBe(Math.min(i, KEPT));
    }
    expect(sim.commands(slug)).toBe(0);

    const stored = await storedRuns(t.gateway.ds, cron.id);
    expect(stored.map((r) => r.scheduled_at.toISOString())).toEqual(due.slice(-KEPT));
    expect(new Set(stored.map((r) => r.status))).toEqual(new Set(['skipped_depleted']));

    const listed = await runsOf(t, owner.token, slug, cron.id);
    expect(listed.map((r) => r.scheduled_at)).toEqual(due.slice(-KEPT).reverse());
    const page = await getRuns(t, owner.token, slug, cron.id, '?limit=100');
    expect(page.body.has_more).toBe(false);
    expect((await listedCron(t, owner.token, slug, cron.id)).last_run).toEqual(listed[0]);
  });

  it('runs that ran are pruned like any other; their energy ledger entries stay, and the balance still equals the ledger', async () => {
    clock.set('2026-11-03T10:00:30.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '* * * * *');
    const at = (i: number) => new Date(Date.parse('2026-11-03T10:00:00.000Z') + i * MINUTE_MS);
    for (const i of [1, 2]) {
      clock.set(at(i));
      expect(await tick()).toBe(1);
      await settleRuns(t.gateway.ds, cron.id);
    }
    const ran = await runsOf(t, owner.token, slug, cron.id);
    expect(ran.map((r) => r.status)).toEqual(['success', 'success']);
    await deplete(owner);
    for (let i = 3; i <= 102; i++) {
      clock.set(at(i));
      expect(await tick()).toBe(1);
    }

    const stored = await storedRuns(t.gateway.ds, cron.id);
    expect(stored).toHaveLength(KEPT);
    expect(stored.map((r) => r.scheduled_at.toISOString())).toEqual(Array.from({ length: KEPT }, (_, i) => at(i + 3).toISOString()));
    expect((await listedCron(t, owner.token, slug, cron.id)).last_run?.scheduled_at).toBe(at(102).toISOString());

    const ledger = (await gqlOk(t.url, owner.token, EnergyLedgerDocument, { first: 100 })).energyLedger.nodes;
    expect(
      ledger
        .filter((n) => n.reason === 'CRON_RUN')
        .map((n) => n.ref)
        .sort(),
    ).toEqual(ran.map((r) => r.id).sort());
    const energy = (await gqlOk(t.url, owner.token, EnergyDocument, {})).energy;
    const [sums] = await t.gateway.ds.query(
      `SELECT coalesce(sum(delta) FILTER (WHERE bucket = 'daily'), 0)::int AS daily, coalesce(sum(delta) FILTER (WHERE bucket = 'weekly'), 0)::int AS weekly
         FROM energy_ledger WHERE user_id = $1`,
      [owner.id],
    );
    expect({ daily: energy.daily, weekly: energy.weekly }).toEqual(sums);
  });

  it('runCronNow prunes too: 100 stored, the manual run newest; a page cursor taken before the prune still pages on', async () => {
    clock.set('2026-11-04T10:00:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '0 0 1 1 *');
    await seedHistory(cron.id, clock.now(), KEPT);
    const first = await getRuns(t, owner.token, slug, cron.id, '?limit=60');
    expect(first.body.has_more).toBe(true);

    clock.set('2026-11-04T10:00:30.000Z');
    const manual = (await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id })).runCronNow;
    await settleRuns(t.gateway.ds, cron.id);
    const stored = await storedRuns(t.gateway.ds, cron.id);
    expect(stored).toHaveLength(KEPT);
    expect(
      stored
        .map((r) => r.id)
        .sort()
        .at(-1),
    ).toBe(manual.id);

    const rest = await getRuns(t, owner.token, slug, cron.id, `?limit=100&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(rest.status).toBe(200);
    expect(rest.body.has_more).toBe(false);
    // 40 older than the first page were stored; the prune took the oldest of them.
    expect(rest.body.data.map((r: RunRecord) => r.id)).toEqual(
      stored
        .map((r) => r.id)
        .sort()
        .reverse()
        .filter((id) => id < first.body.data[59].id),
    );
    expect(rest.body.data).toHaveLength(39);
  });

  it('the scheduler prunes each batch with one statement: a tick runs as many statements for 12 due crons as for 2', async () => {
    const statementsFor = async (crons: number, day: string) => {
      clock.set(`${day}T10:00:30.000Z`);
      const owner = await makeUser(t.gateway);
      await deplete(owner);
      const ids: string[] = [];
      for (let i = 0; i < crons; i++) {
        const { slug } = await makeApp(t.url, owner);
        const cron = await createCron(t, owner.token, slug, '* * * * *');
        await seedHistory(cron.id, new Date(`${day}T10:00:00.000Z`), KEPT + 10);
        ids.push(cron.id);
      }
      clock.set(`${day}T10:01:00.000Z`);
      const { result, statements } = await sql.during(tick);
      expect(result).toBe(crons);
      for (const id of ids) expect(await count(id)).toBe(KEPT);
      await t.gateway.ds.query('UPDATE crons SET enabled = false, next_run_at = NULL WHERE id = ANY($1)', [ids]);
      return statements;
    };
    const two = await statementsFor(2, '2026-11-06');
    const twelve = await statementsFor(12, '2026-11-07');
    expect(twelve).toHaveLength(two.length);
    expect(twelve.filter((s) => /DELETE FROM cron_runs/.test(s))).toHaveLength(1);
  });
});
