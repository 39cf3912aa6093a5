import { ManualClock } from '../../src/clock';
import { RunCronNowDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerRows } from '../energy/helpers';
import { createCron, runsOf, settleRuns, TrackingRuntime } from './helpers';

/**
 * "Each cron run [consumes energy] by its duration rounded up to whole minutes": a run whose
 * command fails ran all the same, so it is charged like a successful one. The command is held in
 * the TrackingRuntime while the ManualClock moves, which sets the run's duration exactly.
 */
describe('a failed cron run is charged energy', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const clock = new ManualClock('2026-11-20T09:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const cronCharges = async (owner: TestUser) => (await ledgerRows(t.gateway.ds, owner.id)).filter((r) => r.reason === 'cron_run');

  async function ownerAndEgg(): Promise<{ owner: TestUser; slug: string }> {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    await energyOf(t.url, owner.token); // the allowance is granted before any run
    return { owner, slug };
  }

  it("'exit 3' held for 61 s on the clock → failed, exit_code 3, and one CRON_RUN entry of -2 minutes referring to the run", async () => {
    clock.set('2026-11-20T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *', 'exit 3');

    sim.hold(slug);
    clock.set('2026-11-20T10:05:00.000Z');
    await t.gateway.services.crons.tick();
    await sim.started(slug, 1);
    clock.advance(61_000);
    sim.release(slug);
    expect(await sim.ended(slug, 1)).toEqual({ exitCode: 3 });
    await settleRuns(t.gateway.ds, cron.id);

    const [run] = await runsOf(t, owner.token, slug, cron.id);
    expect(run).toMatchObject({
      status: 'failed',
      exit_code: 3,
      scheduled_at: '2026-11-20T10:05:00.000Z',
      started_at: '2026-11-20T10:05:00.000Z',
      finished_at: '2026-11-20T10:06:01.000Z',
    });
    expect((await cronCharges(owner)).map((r) => [r.bucket, r.delta, r.ref])).toEqual([['daily', -2, run.id]]);
    expect(await energyOf(t.url, owner.token)).toMatchObject({ daily: 118, weekly: 600, total: 718 });
    await expectLedgerConsistent(t.gateway.ds, owner.id);
  });

  it.each([
    ['exit 2', 0, 1], // an instant failure still costs the minimum whole minute
    ['exit 1', 120_000, 2], // exactly two minutes: two, not three
    ['exit 255', 120_001, 3],
  ])("'%s' lasting %i ms on the clock → failed and charged %i minute(s)", async (command, ms, minutes) => {
    clock.set('2026-11-21T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '*/5 * * * *', command);

    sim.hold(slug);
    clock.set('2026-11-21T10:05:00.000Z');
    await t.gateway.services.crons.tick();
    await sim.started(slug, 1);
    clock.advance(ms);
    sim.release(slug);
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);

    const [run] = await runsOf(t, owner.token, slug, cron.id);
    expect(run).toMatchObject({ status: 'failed', exit_code: Number(command.split(' ')[1]) });
    const charges = await cronCharges(owner);
    expect(charges.every((r) => r.ref === run.id)).toBe(true);
    expect(charges.reduce((sum, r) => sum + r.delta, 0)).toBe(-minutes);
    await expectLedgerConsistent(t.gateway.ds, owner.id);
  });

  it('a failed run started with runCronNow is charged too', async () => {
    clock.set('2026-11-22T10:02:00.000Z');
    const { owner, slug } = await ownerAndEgg();
    const cron = await createCron(t, owner.token, slug, '0 0 1 1 *', 'exit 4');

    sim.hold(slug);
    const manual = (await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id })).runCronNow;
    await sim.started(slug, 1);
    clock.advance(90_000);
    sim.release(slug);
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);

    const [run] = await runsOf(t, owner.token, slug, cron.id);
    expect(run).toMatchObject({ id: manual.id, status: 'failed', exit_code: 4 });
    expect((await cronCharges(owner)).map((r) => [r.delta, r.ref])).toEqual([[-2, manual.id]]);
  });
});
