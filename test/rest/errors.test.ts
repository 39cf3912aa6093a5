import { Writable } from 'node:stream';
import pino from 'pino';
import { print } from 'graphql';
import { DeploymentLogsDocument } from '../../src/client/generated';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { checkRestResponse } from '../support/openapi-check';
import { deploy, makeApp, makeUser, settle, TestUser, unique } from '../support/factories';
import { expectInvalid, expectProblem, RestResponse, UNKNOWN_DEPLOYMENT_ID, writesNothing } from './problem';

describe('REST errors and input handling', () => {
  const serverLog: string[] = [];
  let t: TestGateway;
  let owner: TestUser;
  let stranger: TestUser;
  let slug: string;
  let strangerSlug: string;
  /** A finished (failed) deployment of the owner's egg: it writes no more log lines. */
  let depId: string;
  /** A finished deployment of an egg the owner cannot see. */
  let strangerDepId: string;

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _encoding, done) {
        serverLog.push(chunk.toString());
        done();
      },
    });
    t = await startGateway({}, { logger: pino({ level: 'error' }, stream) });
    owner = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    strangerSlug = (await makeApp(t.url, stranger)).slug;
    depId = (await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' })).id;
    strangerDepId = (await deploy(t.url, stranger, strangerSlug, { HATCHERY_SIMULATE: 'fail' })).id;
    expect(await settle(t.url, owner, depId)).toBe('FAILED');
    expect(await settle(t.url, stranger, strangerDepId)).toBe('FAILED');
  });
  afterAll(() => t.stop());

  const post = (body: unknown, headers: Record<string, string> = {}) => rest(t.url, owner.token, 'POST', '/deploy', body, headers);
  const get = (path: string) => rest(t.url, owner.token, 'GET', path);
  /** A problem body without what legitimately differs per request (its id) or names the key asked for. */
  const shapeOf = (res: RestResponse, key: string) => {
    const { request_id: _requestId, ...rest } = res.body;
    return { status: res.status, ...rest, detail: String(rest.detail).split(key).join('<key>') };
  };

  describe('problem details', () => {
    it('are application/problem+json with type, title, status, code, detail, and errors on a 422', async () => {
      const res = await get('/deployments?limit=0');
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toEqual(
        expect.objectContaining({
          type: expect.stringMatching(/\S/),
          title: expect.stringMatching(/\S/),
          status: 422,
          code: 'validation_failed',
          detail: expect.stringMatching(/\S/),
          errors: [{ field: 'limit', message: expect.stringMatching(/\S/) }],
        }),
      );
    });

    it('are application/problem+json on a 404 of an unknown route', async () => {
      const res = await get('/no-such-endpoint');
      expectProblem(res, 404, 'not_found');
    });
  });

  describe('400 bad_request for a body that is not a JSON object, writing nothing', () => {
    it.each([
      ['invalid JSON', '{"project": '],
      ['a JSON array', '[{"project": "x"}]'],
      ['a JSON string', '"hello"'],
      ['a JSON number', '42'],
      ['JSON null', 'null'],
    ])('%s', async (_name, raw) => {
      const res = await writesNothing(t, () => post(raw));
      expectProblem(res, 400, 'bad_request');
    });
  });

  describe('415 unsupported_media_type for a body that is not application/json, writing nothing', () => {
    it('text/plain', async () => {
      const res = await writesNothing(t, () => post(JSON.stringify({ project: slug }), { 'content-type': 'text/plain' }));
      expectProblem(res, 415, 'unsupported_media_type');
    });

    it('application/x-www-form-urlencoded', async () => {
      const res = await writesNothing(t, () => post(`project=${slug}`, { 'content-type': 'application/x-www-form-urlencoded' }));
      expectProblem(res, 415, 'unsupported_media_type');
    });
  });

  describe('422 validation_failed on POST /deploy names the field and writes nothing', () => {
    it.each<[string, () => unknown, string]>([
      ['an unknown body field', () => ({ project: slug, region: 'eu' }), 'region'],
      ['an unknown camelCase body field, named as sent', () => ({ project: slug, buildCommand: 'make' }), 'buildCommand'],
      ['project missing', () => ({}), 'project'],
      ['project missing with env present', () => ({ env: { A: '1' } }), 'project'],
      ['project null', () => ({ project: null }), 'project'],
      ['project a number', () => ({ project: 42 }), 'project'],
      ['env a string', () => ({ project: slug, env: 'A=1' }), 'env'],
      ['env an array', () => ({ project: slug, env: ['A=1'] }), 'env'],
      ['env value a number', () => ({ project: slug, env: { NAME: 5 } }), 'env.NAME'],
      ['env value an object', () => ({ project: slug, env: { NAME: { nested: 'x' } } }), 'env.NAME'],
      ['env key starting with a digit', () => ({ project: slug, env: { '1BAD': 'x' } }), 'env.1BAD'],
      ['env key with a dash', () => ({ project: slug, env: { 'BAD-KEY': 'x' } }), 'env.BAD-KEY'],
    ])('%s', async (_name, body, field) => {
      const res = await writesNothing(t, () => post(body()));
      expectInvalid(res, field);
    });

    it('an unknown query parameter', async () => {
      const res = await writesNothing(t, () => rest(t.url, owner.token, 'POST', '/deploy?dry_run=1', { project: slug }));
      expectInvalid(res, 'dry_run');
    });

    it('an Idempotency-Key reused with another body', async () => {
      const key = unique('idem');
      const first = await post({ project: slug, env: { HATCHERY_SIMULATE: 'fail', A: '1' } }, { 'Idempotency-Key': key });
      expect(first.status).toBe(201);
      expect(await settle(t.url, owner, first.body.id)).toBe('FAILED');

      const res = await writesNothing(t, () => post({ project: slug, env: { HATCHERY_SIMULATE: 'fail', A: '2' } }, { 'Idempotency-Key': key }));
      expectInvalid(res, 'Idempotency-Key');
      expect(res.body.errors).toHaveLength(1);
    });

    it('an Idempotency-Key longer than 255 characters', async () => {
      const res = await writesNothing(t, () => post({ project: slug }, { 'Idempotency-Key': 'k'.repeat(256) }));
      expectInvalid(res, 'Idempotency-Key');
    });
  });

  describe('422 validation_failed on GET /deployments names the query field', () => {
    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['colour=red', 'colour'],
      ['pageSize=5', 'pageSize'],
      ['cursor=not-a-cursor', 'cursor'],
      [`cursor=${Buffer.from('seq:1').toString('base64url')}`, 'cursor'],
      ['status=bogus', 'status'],
    ])('%s', async (query, field) => {
      expectInvalid(await get(`/deployments?${query}`), field);
    });

    it('accepts the boundaries limit=1 and limit=100', async () => {
      expect((await get('/deployments?limit=1')).status).toBe(200);
      expect((await get('/deployments?limit=100')).status).toBe(200);
    });
  });

  describe('422 validation_failed on GET /deployments/:id/logs names the query field', () => {
    it.each([
      ['type=bogus', 'type'],
      ['since=not-a-date', 'since'],
      ['since=2026-13-45T00:00:00Z', 'since'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
      ['level=debug', 'level'],
    ])('%s', async (query, field) => {
      expectInvalid(await get(`/deployments/${depId}/logs?${query}`), field);
    });

    it('accepts type=build and an ISO since', async () => {
      const res = await get(`/deployments/${depId}/logs?type=build&since=2000-01-01T00:00:00.000Z`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
    });
  });

  describe('404 not_found', () => {
    it.each([
      ['GET', `/deployments/${UNKNOWN_DEPLOYMENT_ID}`],
      ['DELETE', `/deployments/${UNKNOWN_DEPLOYMENT_ID}`],
      ['GET', `/deployments/${UNKNOWN_DEPLOYMENT_ID}/logs`],
      ['GET', '/deployments/not-an-id'],
    ])('%s %s (unknown deployment id)', async (method, path) => {
      expectProblem(await rest(t.url, owner.token, method, path), 404, 'not_found');
    });

    it.each([
      ['GET', ''],
      ['DELETE', ''],
      ['GET', '/logs'],
    ])("%s another account's deployment%s looks exactly like an unknown one", async (method, suffix) => {
      const theirs = await rest(t.url, owner.token, method, `/deployments/${strangerDepId}${suffix}`);
      const unknown = await rest(t.url, owner.token, method, `/deployments/${UNKNOWN_DEPLOYMENT_ID}${suffix}`);
      expectProblem(theirs, 404, 'not_found');
      expect(shapeOf(theirs, strangerDepId)).toEqual(shapeOf(unknown, UNKNOWN_DEPLOYMENT_ID));
      // and it is still there for its owner
      expect((await rest(t.url, stranger.token, 'GET', `/deployments/${strangerDepId}`)).status).toBe(200);
    });

    it('an unknown route', async () => {
      expectProblem(await get('/v1/no-such-thing'), 404, 'not_found');
    });

    it('POST /deploy for an egg of another account, with the same body as for an unknown slug, writing nothing', async () => {
      const missing = unique('nosuch');
      const theirs = await writesNothing(t, () => post({ project: strangerSlug }));
      const unknown = await writesNothing(t, () => post({ project: missing }));
      expectProblem(theirs, 404, 'not_found');
      expectProblem(unknown, 404, 'not_found');
      expect(shapeOf(theirs, strangerSlug)).toEqual(shapeOf(unknown, missing));
    });

    it('GET /deployments?project= an egg of another account, like an unknown slug', async () => {
      const missing = unique('nosuch');
      const theirs = await get(`/deployments?project=${strangerSlug}`);
      const unknown = await get(`/deployments?project=${missing}`);
      expectProblem(theirs, 404, 'not_found');
      expectProblem(unknown, 404, 'not_found');
      expect(shapeOf(theirs, strangerSlug)).toEqual(shapeOf(unknown, missing));
    });
  });

  describe('500 internal_error masks the cause', () => {
    /** Makes every read of log lines fail while `fn` runs. */
    async function withLogLinesGone<T>(fn: () => Promise<T>): Promise<T> {
      await t.gateway.ds.query('ALTER TABLE log_lines RENAME TO log_lines_gone');
      try {
        return await fn();
      } finally {
        await t.gateway.ds.query('ALTER TABLE log_lines_gone RENAME TO log_lines');
      }
    }

    it('on REST: a problem with an error_id that is in the server log, and no SQL or stack in the body', async () => {
      const res = await withLogLinesGone(async () => {
        const r = await fetch(`${t.url}/deployments/${depId}/logs`, { headers: { authorization: `Bearer ${owner.token}` } });
        const text = await r.text();
        checkRestResponse('GET', `/deployments/${depId}/logs`, r.status, r.headers, text, JSON.parse(text));
        return { status: r.status, headers: r.headers, text };
      });
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = JSON.parse(res.text);
      expect(body).toEqual(
        expect.objectContaining({ type: expect.any(String), title: expect.any(String), status: 500, code: 'internal_error', detail: 'internal error' }),
      );
      expect(body.error_id).toEqual(expect.stringMatching(/\S/));
      for (const leak of ['log_lines', 'at ', 'relation', 'SELECT', 'QueryFailedError', 'stack', '.ts:']) {
        expect(res.text).not.toContain(leak);
      }
      expect(serverLog.some((line) => line.includes(body.error_id))).toBe(true);

      // the cause was the database, not the request: with the table back, the same request works
      expect((await get(`/deployments/${depId}/logs`)).status).toBe(200);
    });

    it('on GraphQL: extensions.code INTERNAL_SERVER_ERROR with an errorId that is in the server log, and no SQL', async () => {
      const text = await withLogLinesGone(async () => {
        const r = await fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
          body: JSON.stringify({ query: print(DeploymentLogsDocument), variables: { id: depId } }),
        });
        return r.text();
      });
      const body = JSON.parse(text);
      expect(body.errors?.[0]).toEqual(
        expect.objectContaining({ message: 'internal error', extensions: expect.objectContaining({ code: 'INTERNAL_SERVER_ERROR' }) }),
      );
      const errorId = body.errors[0].extensions.errorId;
      expect(errorId).toEqual(expect.stringMatching(/\S/));
      for (const leak of ['log_lines', 'at ', 'relation', 'SELECT', 'QueryFailedError', 'stacktrace']) {
        expect(text).not.toContain(leak);
      }
      expect(serverLog.some((line) => line.includes(errorId))).toBe(true);
    });
  });
});
