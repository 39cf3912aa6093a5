import { ManualClock } from '../../src/clock';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp } from '../support/factories';
import { expectInvalid, expectProblem, expectUnauthorized } from '../rest/problem';
import {
  createCron,
  CRON_ID,
  eggWithPeople,
  getRuns,
  ISO_MS,
  listCrons,
  postCron,
  RUN_ID,
  RunRecord,
  runsOf,
  settleRuns,
  storedRuns,
  TrackingRuntime,
} from './helpers';

const countCrons = async (t: TestGateway): Promise<number> => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM crons'))[0].n;

describe('crons over REST: /v1/apps/:slug/crons', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new TrackingRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const tick = () => t.gateway.services.crons.tick();

  describe('POST', () => {
    it('201 with {id, schedule, command, enabled: true, created_at, next_run_at}; next_run_at is strictly after creation', async () => {
      clock.set('2026-11-20T12:00:00.000Z');
      const { owner, slug } = await eggWithPeople(t);
      const res = await postCron(t, owner.token, slug, { schedule: '0 12 * * *', command: 'echo hello' });
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        id: expect.stringMatching(CRON_ID),
        schedule: '0 12 * * *',
        command: 'echo hello',
        enabled: true,
        created_at: '2026-11-20T12:00:00.000Z',
        next_run_at: '2026-11-21T12:00:00.000Z',
      });

      // One millisecond before the due time, the due time itself is next.
      clock.set('2026-11-20T11:59:59.999Z');
      const early = await postCron(t, owner.token, slug, { schedule: '0 12 * * *', command: 'echo early' });
      expect(early.status).toBe(201);
      expect(early.body.next_run_at).toBe('2026-11-20T12:00:00.000Z');
      expect(early.body.created_at).toBe('2026-11-20T11:59:59.999Z');
      expect(early.body.id).not.toBe(res.body.id);
      clock.set('2026-11-20T12:00:00.000Z');
    });

    it('a collaborator may create a cron', async () => {
      const { collaborator, slug } = await eggWithPeople(t);
      const res = await postCron(t, collaborator.token, slug, { schedule: '*/5 * * * *', command: 'node jobs/cleanup.js' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ schedule: '*/5 * * * *', command: 'node jobs/cleanup.js', enabled: true, next_run_at: '2026-11-20T12:05:00.000Z' });
    });

    it.each([
      ['60 * * * *', 'minute'],
      ['0 24 * * *', 'hour'],
      ['0 0 32 * *', 'day-of-month'],
      ['0 0 0 * *', 'day-of-month'],
      ['0 0 * 13 *', 'month'],
      ['0 0 * * 8', 'day-of-week'],
      ['*/0 * * * *', 'minute'],
      ['5-1 * * * *', 'minute'],
      ['0 0 L * *', 'day-of-month'],
      ['0 0 * * 1#2', 'day-of-week'],
      ['0 0 30 2 *', 'day-of-month'],
    ])('bad schedule %j → 422 validation_failed, field schedule, message naming %s; nothing stored', async (schedule, cronField) => {
      const { owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      const res = await postCron(t, owner.token, slug, { schedule, command: 'echo hi' });
      expectInvalid(res, 'schedule');
      expect(res.body.errors[0].field).toBe('schedule');
      expect(res.body.errors[0].message).toContain(cronField);
      expect(await countCrons(t)).toBe(before);
    });

    it.each(['* * * *', '* * * * * *', '@daily', '', '   ', 'every day at noon'])('bad schedule %j → 422 with field schedule', async (schedule) => {
      const { owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      const res = await postCron(t, owner.token, slug, { schedule, command: 'echo hi' });
      expectInvalid(res, 'schedule');
      expect(res.body.errors[0].field).toBe('schedule');
      expect(await countCrons(t)).toBe(before);
    });

    it.each([
      ['missing', { command: 'echo hi' }],
      ['null', { schedule: null, command: 'echo hi' }],
      ['a number', { schedule: 5, command: 'echo hi' }],
      ['a list', { schedule: ['0', '0', '*', '*', '*'], command: 'echo hi' }],
    ])('schedule %s → 422 field schedule', async (_what, body) => {
      const { owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      const res = await postCron(t, owner.token, slug, body);
      expectInvalid(res, 'schedule');
      expect(await countCrons(t)).toBe(before);
    });

    it.each([
      ['missing', { schedule: '* * * * *' }],
      ['null', { schedule: '* * * * *', command: null }],
      ['empty', { schedule: '* * * * *', command: '' }],
      ['blank', { schedule: '* * * * *', command: '   ' }],
      ['a number', { schedule: '* * * * *', command: 42 }],
      ['an object', { schedule: '* * * * *', command: { run: 'echo' } }],
      ['over 4096 characters', { schedule: '* * * * *', command: 'x'.repeat(4097) }],
    ])('command %s → 422 field command', async (_what, body) => {
      const { owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      const res = await postCron(t, owner.token, slug, body);
      expectInvalid(res, 'command');
      expect(res.body.errors[0].field).toBe('command');
      expect(await countCrons(t)).toBe(before);
    });

    it('an unknown body field → 422 naming it; nothing stored', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      const res = await postCron(t, owner.token, slug, { schedule: '* * * * *', command: 'echo hi', timezone: 'Europe/Berlin' });
      expectInvalid(res, 'timezone');
      const enabled = await postCron(t, owner.token, slug, { schedule: '* * * * *', command: 'echo hi', enabled: false });
      expectInvalid(enabled, 'enabled');
      expect(await countCrons(t)).toBe(before);
    });

    it('a body that is not JSON → 400; not a JSON object → 400; not application/json → 415', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      expectProblem(
        await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons`, '{"schedule":', { 'content-type': 'application/json' }),
        400,
        'bad_request',
      );
      expectProblem(
        await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons`, '["* * * * *"]', { 'content-type': 'application/json' }),
        400,
        'bad_request',
      );
      expectProblem(
        await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons`, 'schedule=*&command=x', { 'content-type': 'application/x-www-form-urlencoded' }),
        415,
        'unsupported_media_type',
      );
      expect(await countCrons(t)).toBe(before);
    });

    it('a stranger and an unknown slug → 404 not_found; no token or a bad token → 401; nothing stored', async () => {
      const { stranger, owner, slug } = await eggWithPeople(t);
      const before = await countCrons(t);
      const body = { schedule: '* * * * *', command: 'echo hi' };
      expectProblem(await postCron(t, stranger.token, slug, body), 404, 'not_found');
      expectProblem(await postCron(t, owner.token, 'no-such-egg-here', body), 404, 'not_found');
      expectUnauthorized(await postCron(t, null, slug, body));
      expectUnauthorized(await postCron(t, 'hatch_not-a-real-token', slug, body));
      // A stranger's invalid body still answers 404: the egg's existence is not revealed.
      expectProblem(await postCron(t, stranger.token, slug, { schedule: '99 * * * *', command: 'echo hi' }), 404, 'not_found');
      expect(await countCrons(t)).toBe(before);
    });
  });

  describe('GET list', () => {
    it('{data, has_more, next_cursor}, newest first, each with last_run null before any run and next_run_at; limit and cursor page it', async () => {
      clock.set('2026-11-21T08:00:00.000Z');
      const { owner, collaborator, slug } = await eggWithPeople(t);
      const a = await createCron(t, owner.token, slug, '0 9 * * *', 'echo a');
      const b = await createCron(t, owner.token, slug, '30 * * * *', 'echo b');
      const c = await createCron(t, collaborator.token, slug, '0 0 1 * *', 'echo c');

      const all = await listCrons(t, owner.token, slug);
      expect(all.status).toBe(200);
      expect(all.body).toEqual({
        data: [
          { ...c, last_run: null, next_run_at: '2026-12-01T00:00:00.000Z' },
          { ...b, last_run: null, next_run_at: '2026-11-21T08:30:00.000Z' },
          { ...a, last_run: null, next_run_at: '2026-11-21T09:00:00.000Z' },
        ],
        has_more: false,
        next_cursor: null,
      });
      expect(all.body.data[0]).toEqual({
        id: c.id,
        schedule: '0 0 1 * *',
        command: 'echo c',
        enabled: true,
        created_at: '2026-11-21T08:00:00.000Z',
        next_run_at: '2026-12-01T00:00:00.000Z',
        last_run: null,
      });

      const first = await listCrons(t, collaborator.token, slug, '?limit=2');
      expect(first.status).toBe(200);
      expect(first.body.data.map((x: { id: string }) => x.id)).toEqual([c.id, b.id]);
      expect(first.body.has_more).toBe(true);
      expect(typeof first.body.next_cursor).toBe('string');
      const second = await listCrons(t, collaborator.token, slug, `?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
      expect(second.status).toBe(200);
      expect(second.body.data.map((x: { id: string }) => x.id)).toEqual([a.id]);
      expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    });

    it('another egg’s crons are not listed; an egg without crons lists none', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const other = await makeApp(t.url, owner);
      await createCron(t, owner.token, slug, '* * * * *');
      const res = await listCrons(t, owner.token, other.slug);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], has_more: false, next_cursor: null });
    });

    it('last_run shows the most recent run', async () => {
      clock.set('2026-11-22T10:02:00.000Z');
      const { owner, slug } = await eggWithPeople(t);
      const cron = await createCron(t, owner.token, slug, '*/5 * * * *', 'exit 4');
      clock.set('2026-11-22T10:05:00.000Z');
      await tick();
      await settleRuns(t.gateway.ds, cron.id);
      const listed = (await listCrons(t, owner.token, slug)).body.data[0];
      const [run] = await runsOf(t, owner.token, slug, cron.id);
      expect(listed.last_run).toEqual(run);
      expect(listed.last_run).toMatchObject({ status: 'failed', exit_code: 4, scheduled_at: '2026-11-22T10:05:00.000Z' });
      expect(listed.next_run_at).toBe('2026-11-22T10:10:00.000Z');
    });

    it('limit outside 1..100 → 422 field limit; an unknown query parameter → 422; a bad cursor → 422', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expectInvalid(await listCrons(t, owner.token, slug, '?limit=0'), 'limit');
      expectInvalid(await listCrons(t, owner.token, slug, '?limit=101'), 'limit');
      expectInvalid(await listCrons(t, owner.token, slug, '?limit=two'), 'limit');
      expectInvalid(await listCrons(t, owner.token, slug, '?sort=asc'), 'sort');
      expectInvalid(await listCrons(t, owner.token, slug, '?cursor=not-a-cursor'), 'cursor');
    });

    it('a stranger and an unknown slug → 404; no token → 401', async () => {
      const { owner, stranger, slug } = await eggWithPeople(t);
      await createCron(t, owner.token, slug, '* * * * *');
      expectProblem(await listCrons(t, stranger.token, slug), 404, 'not_found');
      expectProblem(await listCrons(t, owner.token, 'no-such-egg-here'), 404, 'not_found');
      expectUnauthorized(await listCrons(t, null, slug));
    });
  });

  describe('GET runs', () => {
    it('{data: [{id, status, exit_code, scheduled_at, started_at, finished_at}], has_more, next_cursor}, most recent first, with limit and cursor', async () => {
      clock.set('2026-11-23T10:00:30.000Z');
      const { owner, collaborator, slug } = await eggWithPeople(t);
      const cron = await createCron(t, owner.token, slug, '* * * * *', 'echo tick');
      expect(await runsOf(t, owner.token, slug, cron.id)).toEqual([]);

      for (let minute = 1; minute <= 3; minute++) {
        clock.set(`2026-11-23T10:0${minute}:00.000Z`);
        await tick();
        await settleRuns(t.gateway.ds, cron.id);
      }
      const res = await getRuns(t, collaborator.token, slug, cron.id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        data: [3, 2, 1].map((m) => ({
          id: expect.stringMatching(RUN_ID),
          status: 'success',
          exit_code: 0,
          scheduled_at: `2026-11-23T10:0${m}:00.000Z`,
          started_at: `2026-11-23T10:0${m}:00.000Z`,
          finished_at: `2026-11-23T10:0${m}:00.000Z`,
        })),
        has_more: false,
        next_cursor: null,
      });
      const ids = res.body.data.map((r: RunRecord) => r.id);
      expect(new Set(ids).size).toBe(3);

      const page1 = await getRuns(t, owner.token, slug, cron.id, '?limit=2');
      expect(page1.status).toBe(200);
      expect(page1.body.data.map((r: RunRecord) => r.scheduled_at)).toEqual(['2026-11-23T10:03:00.000Z', '2026-11-23T10:02:00.000Z']);
      expect(page1.body.has_more).toBe(true);
      const page2 = await getRuns(t, owner.token, slug, cron.id, `?limit=2&cursor=${encodeURIComponent(page1.body.next_cursor)}`);
      expect(page2.status).toBe(200);
      expect(page2.body.data.map((r: RunRecord) => r.scheduled_at)).toEqual(['2026-11-23T10:01:00.000Z']);
      expect(page2.body).toMatchObject({ has_more: false, next_cursor: null });
      expectInvalid(await getRuns(t, owner.token, slug, cron.id, '?limit=0'), 'limit');
      expectInvalid(await getRuns(t, owner.token, slug, cron.id, '?limit=101'), 'limit');
      for (const r of res.body.data) for (const k of ['scheduled_at', 'started_at', 'finished_at']) expect(r[k]).toMatch(ISO_MS);
    });

    it('runs of a cron through another egg’s slug → 404, even for the owner of both; a stranger → 404; an unknown cron id → 404; no token → 401', async () => {
      const { owner, stranger, slug } = await eggWithPeople(t);
      const other = await makeApp(t.url, owner);
      const cron = await createCron(t, owner.token, slug, '* * * * *');
      expectProblem(await getRuns(t, owner.token, other.slug, cron.id), 404, 'not_found');
      expectProblem(await getRuns(t, stranger.token, slug, cron.id), 404, 'not_found');
      expectProblem(await getRuns(t, owner.token, slug, 'cron_01kzzzzzzzzzzzzzzzzzzzzzzz'), 404, 'not_found');
      expectProblem(await getRuns(t, owner.token, slug, 'nonsense'), 404, 'not_found');
      expectUnauthorized(await getRuns(t, null, slug, cron.id));
      // The stranger's own egg does not open it either.
      const strangersEgg = await makeApp(t.url, stranger);
      expectProblem(await getRuns(t, stranger.token, strangersEgg.slug, cron.id), 404, 'not_found');
    });
  });

  describe('DELETE', () => {
    it('204 with no body; then the cron is not listed, its runs are 404, a second DELETE is 404, and its due time records nothing', async () => {
      clock.set('2026-11-24T10:02:00.000Z');
      const { owner, collaborator, slug } = await eggWithPeople(t);
      const cron = await createCron(t, owner.token, slug, '*/5 * * * *');
      const kept = await createCron(t, owner.token, slug, '*/5 * * * *', 'echo kept');
      clock.set('2026-11-24T10:05:00.000Z');
      await tick();
      await settleRuns(t.gateway.ds, cron.id);
      await settleRuns(t.gateway.ds, kept.id);
      expect(await runsOf(t, owner.token, slug, cron.id)).toHaveLength(1);
      const commandsBefore = sim.commands(slug);

      const del = await rest(t.url, collaborator.token, 'DELETE', `/v1/apps/${slug}/crons/${cron.id}`);
      expect(del.status).toBe(204);
      expect(del.body).toBeUndefined();

      const listed = await listCrons(t, owner.token, slug);
      expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([kept.id]);
      expectProblem(await getRuns(t, owner.token, slug, cron.id), 404, 'not_found');
      expectProblem(await rest(t.url, owner.token, 'DELETE', `/v1/apps/${slug}/crons/${cron.id}`), 404, 'not_found');

      clock.set('2026-11-24T10:10:00.000Z');
      await tick();
      await settleRuns(t.gateway.ds, kept.id);
      expect(await storedRuns(t.gateway.ds, cron.id)).toEqual([]);
      // Only the kept cron ran at 10:10.
      expect(sim.commands(slug)).toBe(commandsBefore + 1);
      expect((await runsOf(t, owner.token, slug, kept.id)).map((r) => r.scheduled_at)).toEqual(['2026-11-24T10:10:00.000Z', '2026-11-24T10:05:00.000Z']);
    });

    it('a stranger, another egg’s slug and an unknown id → 404, no token → 401; the cron stays', async () => {
      const { owner, stranger, slug } = await eggWithPeople(t);
      const other = await makeApp(t.url, owner);
      const cron = await createCron(t, owner.token, slug, '* * * * *');
      expectProblem(await rest(t.url, stranger.token, 'DELETE', `/v1/apps/${slug}/crons/${cron.id}`), 404, 'not_found');
      expectProblem(await rest(t.url, owner.token, 'DELETE', `/v1/apps/${other.slug}/crons/${cron.id}`), 404, 'not_found');
      expectProblem(await rest(t.url, owner.token, 'DELETE', `/v1/apps/${slug}/crons/cron_01kzzzzzzzzzzzzzzzzzzzzzzz`), 404, 'not_found');
      expectUnauthorized(await rest(t.url, null, 'DELETE', `/v1/apps/${slug}/crons/${cron.id}`));
      const listed = await listCrons(t, owner.token, slug);
      expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([cron.id]);
    });
  });
});
