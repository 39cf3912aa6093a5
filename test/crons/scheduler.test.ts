import { EnergyDocument, EnergyLedgerDocument } from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { createCron, listCrons, listedCron, RUN_ID, runsOf, settleRuns, storedRuns, TrackingRuntime } from './helpers';

/**
 * The scheduler, driven by a ManualClock and `tick()` (test gateways have no tick timer). Each
 * test runs on a day of its own with an egg of its own; the TrackingRuntime counts commands per egg.
 */
describe('cron scheduler', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const clock = new ManualClock('2026-11-20T09:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const tick = () => t.gateway.services.crons.tick();

  async function ownerAndEgg(): Promise<{ owner: TestUser; slug: string }> {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    return { owner, slug };
  }

  async function cronLedger(owner: TestUser) {
    const nodes = (await gqlOk(t.url, owner.token, EnergyLedgerDocument, { first: 100 })).energyLedger.nodes;
    return nodes.filter((n) => n.reason === 'CRON_RUN');
  }

  it("'*/5 * * * *' created at 10:02 is due at 10:05: nothing at 10:04:59, one successful run at 10:05:01, then due at 10:10", async () => {
    clock.set('2026-11-20T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *', 'echo hi');
    expect(cron.next_run_at).toBe('2026-11-20T10:05:00.000Z');

    clock.set('2026-11-20T10:04:59.999Z');
    await tick();
    expect(await runsOf(t, owner.token, slug, cron.id)).toEqual([]);
    expect(sim.commands(slug)).toBe(0);
    expect((await listedCron(t, owner.token, slug, cron.id)).next_run_at).toBe('2026-11-20T10:05:00.000Z');

    clock.set('2026-11-20T10:05:01.000Z');
    await tick();
    expect((await sim.started(slug, 1)).command).toBe('echo hi');
    expect(await sim.ended(slug, 1)).toEqual({ exitCode: 0 });
    await settleRuns(t.gateway.ds, cron.id);
    const runs = await runsOf(t, owner.token, slug, cron.id);
    expect(runs).toEqual([
      {
        id: expect.stringMatching(RUN_ID),
        status: 'success',
        exit_code: 0,
        scheduled_at: '2026-11-20T10:05:00.000Z',
        started_at: '2026-11-20T10:05:01.000Z',
        finished_at: '2026-11-20T10:05:01.000Z',
      },
    ]);
    const listed = await listedCron(t, owner.token, slug, cron.id);
    expect(listed.next_run_at).toBe('2026-11-20T10:10:00.000Z');
    expect(listed.last_run).toEqual(runs[0]);

    // Ticking again at the same moment, one after another or all at once, records nothing more.
    await tick();
    await Promise.all([tick(), tick(), tick()]);
    await settleRuns(t.gateway.ds, cron.id);
    expect(await runsOf(t, owner.token, slug, cron.id)).toEqual(runs);
    expect(sim.commands(slug)).toBe(1);

    // The next due time runs too.
    clock.set('2026-11-20T10:10:00.000Z');
    await tick();
    await sim.ended(slug, 2);
    await settleRuns(t.gateway.ds, cron.id);
    expect((await runsOf(t, owner.token, slug, cron.id)).map((r) => [r.scheduled_at, r.status])).toEqual([
      ['2026-11-20T10:10:00.000Z', 'success'],
      ['2026-11-20T10:05:00.000Z', 'success'],
    ]);
  });

  it("'exit 3' → failed with exit_code 3; 'exit 0' → success", async () => {
    clock.set('2026-11-21T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const failing = await createCron(t, owner.token, slug, '*/5 * * * *', 'exit 3');
    const passing = await createCron(t, owner.token, slug, '*/5 * * * *', 'exit 0');
    clock.set('2026-11-21T10:05:00.000Z');
    await tick();
    await Promise.all([sim.ended(slug, 1), sim.ended(slug, 2)]);
    await settleRuns(t.gateway.ds, failing.id);
    await settleRuns(t.gateway.ds, passing.id);
    expect(await runsOf(t, owner.token, slug, failing.id)).toEqual([
      expect.objectContaining({ status: 'failed', exit_code: 3, scheduled_at: '2026-11-21T10:05:00.000Z', finished_at: '2026-11-21T10:05:00.000Z' }),
    ]);
    expect(await runsOf(t, owner.token, slug, passing.id)).toEqual([
      expect.objectContaining({ status: 'success', exit_code: 0, scheduled_at: '2026-11-21T10:05:00.000Z' }),
    ]);
    // A failed run does not stop the schedule.
    expect((await listedCron(t, owner.token, slug, failing.id)).next_run_at).toBe('2026-11-21T10:10:00.000Z');
  });

  it('due times missed while the gateways were down are not replayed', async () => {
    clock.set('2026-11-22T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *');
    clock.set('2026-11-22T10:05:00.000Z');
    await tick();
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);

    // "Down" from 10:05 until 11:00:20: 10:10 … 10:55 were missed.
    clock.set('2026-11-22T11:00:20.000Z');
    await tick();
    await tick();
    await settleRuns(t.gateway.ds, cron.id);
    const after = (await runsOf(t, owner.token, slug, cron.id)).map((r) => r.scheduled_at);
    expect(after[after.length - 1]).toBe('2026-11-22T10:05:00.000Z');
    const replayed = after.filter((s) => s !== '2026-11-22T10:05:00.000Z');
    // At most the 11:00 run (the due time just passed); none of the missed ones.
    expect([[], ['2026-11-22T11:00:00.000Z']]).toContainEqual(replayed);
    expect(sim.commands(slug)).toBe(1 + replayed.length);
    expect((await listedCron(t, owner.token, slug, cron.id)).next_run_at).toBe('2026-11-22T11:05:00.000Z');

    // The schedule goes on from there.
    clock.set('2026-11-22T11:05:00.000Z');
    await tick();
    await sim.ended(slug, 2 + replayed.length);
    await settleRuns(t.gateway.ds, cron.id);
    const runs = await runsOf(t, owner.token, slug, cron.id);
    expect(runs[0]).toMatchObject({ scheduled_at: '2026-11-22T11:05:00.000Z', status: 'success', exit_code: 0 });
    expect(runs).toHaveLength(2 + replayed.length);
  });

  it('a due time is not started while the previous run still runs; after it ends the schedule continues', async () => {
    clock.set('2026-11-23T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *', 'echo slow');
    sim.hold(slug);

    clock.set('2026-11-23T10:05:00.000Z');
    await tick();
    await sim.started(slug, 1);
    const running = await runsOf(t, owner.token, slug, cron.id);
    expect(running).toEqual([
      {
        id: expect.stringMatching(RUN_ID),
        status: 'running',
        exit_code: null,
        scheduled_at: '2026-11-23T10:05:00.000Z',
        started_at: '2026-11-23T10:05:00.000Z',
        finished_at: null,
      },
    ]);
    expect((await listedCron(t, owner.token, slug, cron.id)).last_run).toEqual(running[0]);

    clock.set('2026-11-23T10:10:00.000Z');
    await tick();
    await tick();
    expect(await runsOf(t, owner.token, slug, cron.id)).toEqual(running);
    expect(sim.commands(slug)).toBe(1);
    expect((await listedCron(t, owner.token, slug, cron.id)).next_run_at).toBe('2026-11-23T10:15:00.000Z');

    sim.release(slug);
    expect(await sim.ended(slug, 1)).toEqual({ exitCode: 0 });
    await settleRuns(t.gateway.ds, cron.id);
    expect(await runsOf(t, owner.token, slug, cron.id)).toEqual([{ ...running[0], status: 'success', exit_code: 0, finished_at: '2026-11-23T10:10:00.000Z' }]);

    clock.set('2026-11-23T10:15:00.000Z');
    await tick();
    await sim.ended(slug, 2);
    await settleRuns(t.gateway.ds, cron.id);
    expect((await runsOf(t, owner.token, slug, cron.id)).map((r) => [r.scheduled_at, r.status])).toEqual([
      ['2026-11-23T10:15:00.000Z', 'success'],
      ['2026-11-23T10:05:00.000Z', 'success'],
    ]);
  });

  it('with the owner’s energy depleted a due time is recorded as skipped_depleted without running; after a refill the next due time runs', async () => {
    clock.set('2026-11-24T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *', 'echo hi');
    await t.gateway.services.energy.setBuckets(owner.email, { daily: 0, weekly: 0, bonus: 0, pack: 0 });
    expect((await gqlOk(t.url, owner.token, EnergyDocument, {})).energy).toMatchObject({ total: 0, depleted: true });

    clock.set('2026-11-24T10:05:00.000Z');
    await tick();
    await tick();
    const skipped = await runsOf(t, owner.token, slug, cron.id);
    expect(skipped).toEqual([
      expect.objectContaining({
        id: expect.stringMatching(RUN_ID),
        status: 'skipped_depleted',
        exit_code: null,
        scheduled_at: '2026-11-24T10:05:00.000Z',
        started_at: null,
      }),
    ]);
    expect(sim.commands(slug)).toBe(0);
    const listed = await listedCron(t, owner.token, slug, cron.id);
    expect(listed.last_run).toEqual(skipped[0]);
    expect(listed.next_run_at).toBe('2026-11-24T10:10:00.000Z');
    expect(await cronLedger(owner)).toEqual([]);

    await t.gateway.services.energy.setBuckets(owner.email, { pack: 10 });
    clock.set('2026-11-24T10:10:00.000Z');
    await tick();
    expect(await sim.ended(slug, 1)).toEqual({ exitCode: 0 });
    await settleRuns(t.gateway.ds, cron.id);
    const runs = await runsOf(t, owner.token, slug, cron.id);
    expect(runs.map((r) => [r.scheduled_at, r.status, r.exit_code])).toEqual([
      ['2026-11-24T10:10:00.000Z', 'success', 0],
      ['2026-11-24T10:05:00.000Z', 'skipped_depleted', null],
    ]);
    expect(runs[0].started_at).toBe('2026-11-24T10:10:00.000Z');
    expect((await gqlOk(t.url, owner.token, EnergyDocument, {})).energy).toMatchObject({ daily: 0, weekly: 0, bonus: 0, pack: 9, total: 9, depleted: false });
    expect(await cronLedger(owner)).toEqual([expect.objectContaining({ bucket: 'PACK', delta: -1, balanceAfter: 9, ref: runs[0].id })]);
  });

  it('a run consumes energy for its duration rounded up to whole minutes, in a CRON_RUN ledger entry referring to the run', async () => {
    clock.set('2026-11-25T10:00:30.000Z');
    const { owner, slug } = await ownerAndEgg();
    const before = (await gqlOk(t.url, owner.token, EnergyDocument, {})).energy;
    expect(before.daily).toBeGreaterThanOrEqual(10);
    const cron = await createCron(t, owner.token, slug, '* * * * *', 'echo hi');

    /** Runs the due time at `at`, lasting `ms` on the clock; returns the run's id. */
    const runFor = async (n: number, at: string, ms: number): Promise<string> => {
      sim.hold(slug);
      clock.set(at);
      await tick();
      await sim.started(slug, n);
      clock.advance(ms);
      sim.release(slug);
      await sim.ended(slug, n);
      await settleRuns(t.gateway.ds, cron.id);
      const [run] = await runsOf(t, owner.token, slug, cron.id);
      expect(run).toMatchObject({ scheduled_at: at, status: 'success', started_at: at, finished_at: new Date(Date.parse(at) + ms).toISOString() });
      return run.id;
    };
    const short = await runFor(1, '2026-11-25T10:01:00.000Z', 20); // 20 ms → 1 minute
    const minute = await runFor(2, '2026-11-25T10:02:00.000Z', 60_000); // exactly 1 minute → 1
    const longer = await runFor(3, '2026-11-25T10:03:00.000Z', 61_000); // 1 min 1 s → 2 minutes

    const ledger = await cronLedger(owner);
    const byRun = (id: string) => ledger.filter((e) => e.ref === id).reduce((sum, e) => sum + e.delta, 0);
    expect([byRun(short), byRun(minute), byRun(longer)]).toEqual([-1, -1, -2]);
    expect(ledger).toHaveLength(3);
    expect(ledger.every((e) => e.bucket === 'DAILY')).toBe(true);
    const after = (await gqlOk(t.url, owner.token, EnergyDocument, {})).energy;
    expect(after.daily).toBe(before.daily - 4);
    expect(after.total).toBe(before.total - 4);
  });

  it('deleting a cron stops its run in progress, and no further runs happen', async () => {
    clock.set('2026-11-26T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *', 'echo forever');
    sim.hold(slug);
    clock.set('2026-11-26T10:05:00.000Z');
    await tick();
    await sim.started(slug, 1);

    const del = await rest(t.url, owner.token, 'DELETE', `/v1/apps/${slug}/crons/${cron.id}`);
    expect(del.status).toBe(204);
    expect(await sim.ended(slug, 1)).toEqual({ aborted: true });
    sim.release(slug);

    for (const at of ['2026-11-26T10:10:00.000Z', '2026-11-26T10:15:00.000Z']) {
      clock.set(at);
      await tick();
    }
    expect(sim.commands(slug)).toBe(1);
    expect(await storedRuns(t.gateway.ds, cron.id)).toEqual([]);
    expect((await listCrons(t, owner.token, slug)).body.data).toEqual([]);
  });

  it('a run this gateway still runs is not given up as a dead gateway’s, however long ago it started; it is recorded when it ends', async () => {
    // The runs of a gateway that died are given up once they started longer ago than the run
    // timeout (an hour) and its margin; this gateway's own are not, even when recording their end
    // waits (hundreds ending at once), and here for hours.
    clock.set('2026-11-27T09:58:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '0 10 27 11 *', 'echo long');
    sim.hold(slug);
    clock.set('2026-11-27T10:00:00.000Z');
    await tick();
    await sim.started(slug, 1);

    clock.set('2026-11-27T13:30:00.000Z');
    await tick();
    const [run] = await runsOf(t, owner.token, slug, cron.id);
    expect([run.status, run.finished_at]).toEqual(['running', null]);

    sim.release(slug);
    expect(await sim.ended(slug, 1)).toEqual({ exitCode: 0 });
    await settleRuns(t.gateway.ds, cron.id);
    expect(await runsOf(t, owner.token, slug, cron.id)).toEqual([{ ...run, status: 'success', exit_code: 0, finished_at: '2026-11-27T13:30:00.000Z' }]);
  });
});
