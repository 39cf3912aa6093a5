import { loadConfig } from '../../src/config';
import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { createCron, MINUTE_MS, runsOf, settleRuns, ShiftedClock, TrackingRuntime } from './helpers';

/**
 * "Fires within a few seconds of the due time" must hold as shipped, not only with the 250 ms tick
 * test/crons/real-timer.test.ts sets: the default tick is pinned, and the timer is run with it.
 */
describe('cron scheduler defaults', () => {
  it('ticks by itself every second at most by default, and keeps the missed-after window at least two ticks long', () => {
    const config = loadConfig({});
    expect(config.cronTickMs).toBeGreaterThan(0); // 0 would mean no timer at all
    expect(config.cronTickMs).toBeLessThanOrEqual(1000);
    expect(config.cronMissedAfterMs).toBeGreaterThanOrEqual(2 * config.cronTickMs);
  });

  describe('on the default tick', () => {
    let t: TestGateway;
    let sim: TrackingRuntime;
    const clock = new ShiftedClock();
    const defaultTickMs = loadConfig({}).cronTickMs;

    beforeAll(async () => {
      // startGateway turns the timer off unless told; this passes the shipped default back in.
      t = await startGateway({ HATCHERY_CRON_TICK_MS: String(defaultTickMs) }, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
    });
    afterAll(() => t.stop());

    it('fires a due time once, within a few seconds of it, with no tick() called by the test', async () => {
      expect(t.config.cronTickMs).toBe(defaultTickMs);
      const owner = await makeUser(t.gateway);
      const { slug } = await makeApp(t.url, owner);
      const boundary = new Date(Math.ceil((Date.now() + 10 * MINUTE_MS) / MINUTE_MS) * MINUTE_MS);
      clock.moveTo(new Date(boundary.getTime() - 2000));
      const cron = await createCron(t, owner.token, slug, '* * * * *', 'echo on time');
      expect(cron.next_run_at).toBe(boundary.toISOString());

      await sim.started(slug, 1);
      await sim.ended(slug, 1);
      await settleRuns(t.gateway.ds, cron.id);
      const [run] = await runsOf(t, owner.token, slug, cron.id);
      expect(run).toMatchObject({ status: 'success', exit_code: 0, scheduled_at: boundary.toISOString() });
      const lateness = new Date(run.started_at!).getTime() - boundary.getTime();
      expect(lateness).toBeGreaterThanOrEqual(0);
      expect(lateness).toBeLessThan(5000);
      expect(sim.commands(slug)).toBe(1);
    });
  });
});
