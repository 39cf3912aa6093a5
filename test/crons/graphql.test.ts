import {
  CreateCronDocument,
  CronRunsDocument,
  CronsDocument,
  DeleteCronDocument,
  RunCronNowDocument,
  SetCronEnabledDocument,
} from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { gql, gqlOk, GqlResult, startGateway, TestGateway } from '../support/gateway';
import { makeApp } from '../support/factories';
import { eggWithPeople, listedCron, RUN_ID, settleRuns, storedRuns, TrackingRuntime } from './helpers';

function expectCode(result: GqlResult<unknown>, code: string): void {
  expect(result.errors?.map((e) => e.extensions?.code)).toEqual([code]);
  expect(result.data ?? null).toBeNull();
}

/** Pause, resume and run-now are GraphQL operations; access rules are the egg's. */
describe('crons over GraphQL', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const clock = new ManualClock('2026-11-20T09:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const tick = () => t.gateway.services.crons.tick();
  const runsOf = async (token: string, app: string, id: string) => (await gqlOk(t.url, token, CronRunsDocument, { app, id, first: 100 })).cronRuns.nodes;

  it('createCron answers like POST: enabled, nextRunAt strictly after now, no lastRun; a bad schedule is BAD_USER_INPUT on field schedule', async () => {
    clock.set('2026-11-20T12:00:00.000Z');
    const { owner, slug } = await eggWithPeople(t);
    const { createCron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 12 * * *', command: 'echo hi' });
    expect(createCron).toEqual({
      id: expect.stringMatching(/^cron_/),
      schedule: '0 12 * * *',
      command: 'echo hi',
      enabled: true,
      createdAt: '2026-11-20T12:00:00.000Z',
      nextRunAt: '2026-11-21T12:00:00.000Z',
      lastRun: null,
    });
    const bad = await gql(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 0 * * 8', command: 'echo hi' });
    expectCode(bad, 'BAD_USER_INPUT');
    const errors = bad.errors![0].extensions!.errors as Array<{ field: string; message: string }>;
    expect(errors[0].field).toBe('schedule');
    expect(errors[0].message).toContain('day-of-week');
    const blank = await gql(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '* * * * *', command: ' ' });
    expectCode(blank, 'BAD_USER_INPUT');
    expect((blank.errors![0].extensions!.errors as Array<{ field: string }>)[0].field).toBe('command');
    expect((await gqlOk(t.url, owner.token, CronsDocument, { app: slug })).crons.nodes).toHaveLength(1);
  });

  it('setCronEnabled(false) pauses: nextRunAt null and the old due time records nothing; setCronEnabled(true) resumes at the next due time after now, without catching up', async () => {
    clock.set('2026-11-21T10:02:00.000Z');
    const { owner, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '*/5 * * * *', command: 'echo hi' });
    expect(cron.nextRunAt).toBe('2026-11-21T10:05:00.000Z');

    const paused = (await gqlOk(t.url, owner.token, SetCronEnabledDocument, { app: slug, id: cron.id, enabled: false })).setCronEnabled;
    expect(paused).toMatchObject({ id: cron.id, enabled: false, nextRunAt: null, schedule: '*/5 * * * *' });
    // Pausing again changes nothing.
    expect((await gqlOk(t.url, owner.token, SetCronEnabledDocument, { app: slug, id: cron.id, enabled: false })).setCronEnabled).toMatchObject({
      enabled: false,
      nextRunAt: null,
    });
    expect((await gqlOk(t.url, owner.token, CronsDocument, { app: slug })).crons.nodes[0]).toMatchObject({ enabled: false, nextRunAt: null });
    expect(await listedCron(t, owner.token, slug, cron.id)).toMatchObject({ enabled: false, next_run_at: null });

    clock.set('2026-11-21T10:05:00.000Z');
    await tick();
    clock.set('2026-11-21T10:10:00.000Z');
    await tick();
    expect(await runsOf(owner.token, slug, cron.id)).toEqual([]);
    expect(sim.commands(slug)).toBe(0);

    clock.set('2026-11-21T10:12:30.000Z');
    const resumed = (await gqlOk(t.url, owner.token, SetCronEnabledDocument, { app: slug, id: cron.id, enabled: true })).setCronEnabled;
    expect(resumed).toMatchObject({ enabled: true, nextRunAt: '2026-11-21T10:15:00.000Z' });
    // Resuming again keeps the due time.
    clock.set('2026-11-21T10:13:00.000Z');
    expect((await gqlOk(t.url, owner.token, SetCronEnabledDocument, { app: slug, id: cron.id, enabled: true })).setCronEnabled.nextRunAt).toBe(
      '2026-11-21T10:15:00.000Z',
    );
    await tick();
    expect(await runsOf(owner.token, slug, cron.id)).toEqual([]);
    expect(sim.commands(slug)).toBe(0);

    clock.set('2026-11-21T10:15:00.000Z');
    await tick();
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);
    expect(await runsOf(owner.token, slug, cron.id)).toEqual([
      expect.objectContaining({ status: 'SUCCESS', exitCode: 0, scheduledAt: '2026-11-21T10:15:00.000Z', manual: false }),
    ]);
  });

  it('runCronNow starts a manual run at once, which completes; the schedule is unchanged', async () => {
    clock.set('2026-11-22T10:02:00.000Z');
    const { owner, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 0 1 1 *', command: 'exit 7' });
    const { runCronNow: run } = await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
    expect(run).toMatchObject({
      id: expect.stringMatching(RUN_ID),
      status: 'RUNNING',
      exitCode: null,
      manual: true,
      scheduledAt: '2026-11-22T10:02:00.000Z',
      startedAt: '2026-11-22T10:02:00.000Z',
      finishedAt: null,
    });
    expect((await sim.started(slug, 1)).command).toBe('exit 7');
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);
    expect(await runsOf(owner.token, slug, cron.id)).toEqual([{ ...run, status: 'FAILED', exitCode: 7, finishedAt: '2026-11-22T10:02:00.000Z' }]);
    const listed = (await gqlOk(t.url, owner.token, CronsDocument, { app: slug })).crons.nodes[0];
    expect(listed.nextRunAt).toBe('2027-01-01T00:00:00.000Z');
    expect(listed.lastRun).toEqual({ ...run, status: 'FAILED', exitCode: 7, finishedAt: '2026-11-22T10:02:00.000Z' });
  });

  it('runCronNow while a run is in progress → BAD_USER_INPUT and no second run; once it ended, run-now works again', async () => {
    clock.set('2026-11-23T10:02:00.000Z');
    const { owner, collaborator, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '*/5 * * * *', command: 'echo hi' });
    sim.hold(slug);
    const first = (await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id })).runCronNow;
    await sim.started(slug, 1);

    clock.set('2026-11-23T10:03:00.000Z');
    expectCode(await gql(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id }), 'BAD_USER_INPUT');
    expectCode(await gql(t.url, collaborator.token, RunCronNowDocument, { app: slug, id: cron.id }), 'BAD_USER_INPUT');
    // Nor does the schedule start one meanwhile.
    clock.set('2026-11-23T10:05:00.000Z');
    await tick();
    expect((await runsOf(owner.token, slug, cron.id)).map((r) => [r.id, r.status])).toEqual([[first.id, 'RUNNING']]);
    expect(sim.commands(slug)).toBe(1);

    sim.release(slug);
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);
    clock.set('2026-11-23T10:06:00.000Z');
    const second = (await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id })).runCronNow;
    expect(second).toMatchObject({ manual: true, scheduledAt: '2026-11-23T10:06:00.000Z' });
    await sim.ended(slug, 2);
    await settleRuns(t.gateway.ds, cron.id);
    expect((await runsOf(owner.token, slug, cron.id)).map((r) => [r.id, r.status, r.manual])).toEqual([
      [second.id, 'SUCCESS', true],
      [first.id, 'SUCCESS', true],
    ]);
  });

  it('runCronNow at the very moment a scheduled run was due records a second, manual run', async () => {
    clock.set('2026-11-24T10:02:00.000Z');
    const { owner, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '*/5 * * * *', command: 'echo hi' });
    clock.set('2026-11-24T10:05:00.000Z');
    await tick();
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);

    // Same clock reading as the scheduled run's due time.
    const now = await gql(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
    expect(now.errors).toBeUndefined();
    expect(now.data?.runCronNow).toMatchObject({ manual: true });
    await sim.ended(slug, 2);
    await settleRuns(t.gateway.ds, cron.id);
    expect((await runsOf(owner.token, slug, cron.id)).map((r) => [r.status, r.manual])).toEqual([
      ['SUCCESS', true],
      ['SUCCESS', false],
    ]);
  });

  it('a manual run asked for at the very moment of a due time does not take that due time’s scheduled run away', async () => {
    clock.set('2026-11-24T11:02:00.000Z');
    const { owner, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '*/5 * * * *', command: 'echo hi' });
    clock.set('2026-11-24T11:05:00.000Z');
    await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: cron.id });
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);

    await tick();
    await settleRuns(t.gateway.ds, cron.id);
    const runs = await runsOf(owner.token, slug, cron.id);
    expect(runs.map((r) => [r.manual, r.scheduledAt])).toEqual([
      [false, '2026-11-24T11:05:00.000Z'],
      [true, expect.any(String)],
    ]);
    expect(sim.commands(slug)).toBe(2);
  });

  it('runCronNow with the owner’s energy depleted records a skipped_depleted run without running the command', async () => {
    clock.set('2026-11-24T12:02:00.000Z');
    const { owner, collaborator, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 0 1 1 *', command: 'echo hi' });
    await t.gateway.services.energy.setBuckets(owner.email, { daily: 0, weekly: 0, bonus: 0, pack: 0 });
    const run = (await gqlOk(t.url, collaborator.token, RunCronNowDocument, { app: slug, id: cron.id })).runCronNow;
    expect(run).toMatchObject({ status: 'SKIPPED_DEPLETED', exitCode: null, startedAt: null, manual: true });
    expect(await runsOf(owner.token, slug, cron.id)).toEqual([run]);
    expect(sim.commands(slug)).toBe(0);
  });

  it('a collaborator may manage crons: create, list, pause, resume, run now, list runs, delete', async () => {
    clock.set('2026-11-25T10:02:00.000Z');
    const { owner, collaborator, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, collaborator.token, CreateCronDocument, { app: slug, schedule: '*/5 * * * *', command: 'echo c' });
    expect((await gqlOk(t.url, collaborator.token, CronsDocument, { app: slug })).crons.nodes.map((c) => c.id)).toEqual([cron.id]);
    expect((await gqlOk(t.url, owner.token, CronsDocument, { app: slug })).crons.nodes.map((c) => c.id)).toEqual([cron.id]);
    expect((await gqlOk(t.url, collaborator.token, SetCronEnabledDocument, { app: slug, id: cron.id, enabled: false })).setCronEnabled.enabled).toBe(false);
    expect((await gqlOk(t.url, collaborator.token, SetCronEnabledDocument, { app: slug, id: cron.id, enabled: true })).setCronEnabled.enabled).toBe(true);
    const run = (await gqlOk(t.url, collaborator.token, RunCronNowDocument, { app: slug, id: cron.id })).runCronNow;
    await sim.ended(slug, 1);
    await settleRuns(t.gateway.ds, cron.id);
    expect((await runsOf(collaborator.token, slug, cron.id)).map((r) => r.id)).toEqual([run.id]);
    expect((await gqlOk(t.url, collaborator.token, DeleteCronDocument, { app: slug, id: cron.id })).deleteCron).toBe(cron.id);
    expect((await gqlOk(t.url, owner.token, CronsDocument, { app: slug })).crons.nodes).toEqual([]);
    expectCode(await gql(t.url, owner.token, CronRunsDocument, { app: slug, id: cron.id }), 'NOT_FOUND');
  });

  it('a stranger gets NOT_FOUND for every cron operation and changes nothing; without a token, UNAUTHENTICATED', async () => {
    clock.set('2026-11-26T10:02:00.000Z');
    const { owner, stranger, slug } = await eggWithPeople(t);
    const { createCron: cron } = await gqlOk(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '*/5 * * * *', command: 'echo hi' });
    const ids = { app: slug, id: cron.id };

    expectCode(await gql(t.url, stranger.token, CronsDocument, { app: slug }), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, CronRunsDocument, ids), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, CreateCronDocument, { app: slug, schedule: '* * * * *', command: 'echo x' }), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, SetCronEnabledDocument, { ...ids, enabled: false }), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, RunCronNowDocument, ids), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, DeleteCronDocument, ids), 'NOT_FOUND');
    // Through the stranger's own egg the cron is not found either.
    const own = await makeApp(t.url, stranger);
    expectCode(await gql(t.url, stranger.token, RunCronNowDocument, { app: own.slug, id: cron.id }), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, SetCronEnabledDocument, { app: own.slug, id: cron.id, enabled: false }), 'NOT_FOUND');
    expectCode(await gql(t.url, stranger.token, DeleteCronDocument, { app: own.slug, id: cron.id }), 'NOT_FOUND');

    expectCode(await gql(t.url, null, CronsDocument, { app: slug }), 'UNAUTHENTICATED');
    expectCode(await gql(t.url, null, RunCronNowDocument, ids), 'UNAUTHENTICATED');

    const after = (await gqlOk(t.url, owner.token, CronsDocument, { app: slug })).crons.nodes;
    expect(after).toEqual([expect.objectContaining({ id: cron.id, enabled: true, nextRunAt: '2026-11-26T10:05:00.000Z', lastRun: null })]);
    expect(await storedRuns(t.gateway.ds, cron.id)).toEqual([]);
    expect(sim.commands(slug)).toBe(0);
  });
});
