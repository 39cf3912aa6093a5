import { CancelCronRunDocument, CreateCronDocument, CronRunsDocument, RunCronNowDocument } from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { ledgerRows } from '../energy/helpers';
import { eggWithPeople, TrackingRuntime, until } from './helpers';
import { hatch, tempDir } from '../cli-hatch/helpers';

/** cancelCronRun (GraphQL, REST, hatch), the run timeout's reason, and the reaper of commands whose run is over. */
describe('stopping cron runs', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const clock = new ManualClock('2026-11-24T09:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_CRON_RUN_TIMEOUT_MS: '60000' }, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const runsOf = async (token: string, app: string, id: string) => (await gqlOk(t.url, token, CronRunsDocument, { app, id, first: 10 })).cronRuns.nodes;

  it('cancels a running run wherever it runs: FAILED, reason cancelled, exit code null, the minutes it ran charged; the command is stopped', async () => {
    const { owner, collaborator, stranger, slug } = await eggWithPeople(t);
    sim.hold(slug);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 * * * *', command: 'sleep 600' });
    const { runCronNow: run } = await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
    await sim.started(slug, 1);
    clock.advance(90_000);

    // A stranger does not see it; nothing changes.
    const hidden = await gql(t.url, stranger.token, CancelCronRunDocument, { app: slug, id: cron.id, run: run.id });
    expect(hidden.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await runsOf(owner.token, slug, cron.id))[0].status).toBe('RUNNING');
    // Unknown runs are 404s.
    expect((await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons/${cron.id}/runs/run_00000000000000000000000000/cancel`)).status).toBe(404);

    const cancelled = await rest(t.url, collaborator.token, 'POST', `/v1/apps/${slug}/crons/${cron.id}/runs/${run.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({
      id: run.id,
      status: 'failed',
      exit_code: null,
      scheduled_at: run.scheduledAt,
      started_at: run.startedAt,
      finished_at: '2026-11-24T09:01:30.000Z',
    });
    expect(await sim.ended(slug, 1)).toEqual({ aborted: true });
    const [listed] = await runsOf(owner.token, slug, cron.id);
    expect(listed).toMatchObject({ status: 'FAILED', exitCode: null, failureReason: 'cancelled' });
    // 1 min 30 s ran: 2 minutes charged, once.
    const charges = (await ledgerRows(t.gateway.ds, owner.id)).filter((r) => r.reason === 'cron_run' && r.ref === run.id);
    expect(charges.reduce((sum, r) => sum - r.delta, 0)).toBe(2);

    // Over already: a 422 naming `run`, nothing charged again.
    const again = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons/${cron.id}/runs/${run.id}/cancel`);
    expect(again.status).toBe(422);
    expect(again.body.errors).toEqual([{ field: 'run', message: expect.stringContaining('only a running run can be cancelled') }]);
    expect((await ledgerRows(t.gateway.ds, owner.id)).filter((r) => r.reason === 'cron_run')).toHaveLength(charges.length);
    sim.release(slug);
  });

  it('hatch crons cancel <app> <cron> <run> cancels it and says so; --json prints the run', async () => {
    const { owner, slug } = await eggWithPeople(t);
    sim.hold(slug);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 * * * *', command: 'sleep 600' });
    const { runCronNow: run } = await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
    const env = { apiUrl: t.url, configDir: tempDir(), token: owner.token };
    const res = await hatch(env, ['crons', 'cancel', slug, cron.id, run.id]);
    expect(res).toMatchObject({ code: 0, stdout: `Cancelled run ${run.id} of cron ${cron.id}: cancelled\n` });
    const twice = await hatch(env, ['crons', 'cancel', slug, cron.id, run.id, '--json']);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('only a running run can be cancelled');
    sim.release(slug);
  });

  it('the reaper stops commands whose run is over (cancelled elsewhere, given up, its cron deleted), and only those', async () => {
    const { owner, slug } = await eggWithPeople(t);
    sim.hold(slug);
    const { createCron: a } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 * * * *', command: 'sleep 600' });
    const { createCron: b } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 * * * *', command: 'sleep 600' });
    const { runCronNow: ra } = await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: a.id });
    const { runCronNow: rb } = await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: b.id });
    await sim.started(slug, 2);
    expect((await sim.runningCommands()).sort()).toEqual([ra.id, rb.id].sort());
    // Another gateway gave run a up (its row says so); this one still runs the command.
    await t.gateway.ds.query(`UPDATE cron_runs SET status = 'failed', finished_at = now() WHERE id = $1`, [ra.id]);
    expect(await t.gateway.services.crons.reap()).toBe(1);
    expect(await sim.runningCommands()).toEqual([rb.id]);
    expect(await t.gateway.services.crons.reap()).toBe(0);
    sim.release(slug);
  });

  describe('with a 1 s run timeout', () => {
    let short: TestGateway;
    let held: TrackingRuntime;
    beforeAll(async () => {
      short = await startGateway({ HATCHERY_CRON_RUN_TIMEOUT_MS: '1000' }, { runtime: (ds) => (held = new TrackingRuntime(ds)) });
    });
    afterAll(() => short.stop());

    it('a run over its timeout is stopped: FAILED, exit code 137, the reason says it timed out', async () => {
      const { owner, slug } = await eggWithPeople(short);
      held.hold(slug);
      const { createCron: cron } = await gqlOk(short.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 * * * *', command: 'sleep 600' });
      const { runCronNow: run } = await gqlOk(short.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
      expect(await held.ended(slug, 1)).toEqual({ aborted: true });
      const ended = await until('the run to be recorded', async () => {
        const [r] = (await gqlOk(short.url, owner.token, CronRunsDocument, { app: slug, id: cron.id, first: 1 })).cronRuns.nodes;
        return r.status === 'RUNNING' ? null : r;
      });
      expect(ended).toMatchObject({ id: run.id, status: 'FAILED', exitCode: 137, failureReason: 'timed out after 1000 ms' });
      held.release(slug);
    });
  });
});
