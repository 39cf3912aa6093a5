import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { createCron, MINUTE_MS, runsOf, settleRuns, ShiftedClock, TrackingRuntime } from './helpers';

/**
 * The other scheduler tests call `tick()` by hand. This one runs the gateway's own tick timer
 * (HATCHERY_CRON_TICK_MS) with a clock placed shortly before a due time, and checks that the run
 * starts by itself, for that due time, within a few seconds of it.
 */
describe('cron scheduler on its own timer', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const clock = new ShiftedClock();
  const TICK_MS = 250;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_CRON_TICK_MS: String(TICK_MS) }, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
  });
  afterAll(() => t.stop());

  it('fires a due time once, a few seconds at most after it, with no tick() called by the test', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    // A few seconds before a minute boundary (the schedule is every minute): room for the
    // request that creates the cron on a busy machine.
    const boundary = new Date(Math.ceil((Date.now() + 10 * MINUTE_MS) / MINUTE_MS) * MINUTE_MS);
    clock.moveTo(new Date(boundary.getTime() - 3000));
    const cron = await createCron(t, owner.token, slug, '* * * * *', 'echo on time');
    expect(cron.next_run_at).toBe(boundary.toISOString());

    const started = await sim.started(slug, 1);
    expect(started.command).toBe('echo on time');
    const startedAt = clock.now().getTime();
    expect(startedAt).toBeGreaterThanOrEqual(boundary.getTime());
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);

    const [run] = await runsOf(t, owner.token, slug, cron.id);
    expect(run).toMatchObject({ status: 'success', exit_code: 0, scheduled_at: boundary.toISOString() });
    const lateness = new Date(run.started_at!).getTime() - boundary.getTime();
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThan(5000); // "within a few seconds"; the tick is 250 ms
    // Later ticks of the same minute start nothing more.
    expect(sim.commands(slug)).toBe(1);
  });
});
