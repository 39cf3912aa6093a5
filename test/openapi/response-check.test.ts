import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { checkRestResponse } from '../support/openapi-check';

/**
 * The shared `rest()` helper holds every response the suite receives to the OpenAPI document.
 * These tests show that check passes real answers and throws on each kind of mismatch.
 */
describe('REST responses are checked against the OpenAPI document', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;
  let depId: string;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    depId = (await deploy(t.url, owner, slug, { A: '1' })).id;
    await settle(t.url, owner, depId);
  });
  afterAll(() => t.stop());

  const json = (type = 'application/json') => new Headers({ 'content-type': type, 'api-version': '2026-09-01' });
  const check = (method: string, path: string, status: number, body: unknown, headers = json()) =>
    checkRestResponse(method, path, status, headers, body === undefined ? '' : JSON.stringify(body), body);

  it('passes the gateway’s real answers (rest() checks each one)', async () => {
    const got = await rest(t.url, owner.token, 'GET', `/deployments/${depId}`);
    expect(got.status).toBe(200);
    expect(() => check('GET', `/deployments/${depId}`, 200, got.body, got.headers)).not.toThrow();
    const list = await rest(t.url, owner.token, 'GET', `/deployments?project=${slug}&limit=1`);
    expect(list.body.data).toHaveLength(1);
  });

  it('throws when a body lacks a field, adds one, or has the wrong type', async () => {
    const { body } = await rest(t.url, owner.token, 'GET', `/deployments/${depId}`);
    const { env_keys: _envKeys, ...missing } = body;
    expect(() => check('GET', `/deployments/${depId}`, 200, missing)).toThrow(/GET \/deployments\/dep_\w+ → 200.*env_keys/s);
    expect(() => check('GET', `/deployments/${depId}`, 200, { ...body, secret: 'x' })).toThrow(/additional propert/);
    expect(() => check('GET', `/deployments/${depId}`, 200, { ...body, status: 'LIVE' })).toThrow(/\/status/);
    expect(() => check('GET', `/deployments/${depId}`, 200, { ...body, created_at: '2026-11-20T12:00:00Z' })).toThrow(/\/created_at/);
  });

  it('throws on a status the operation does not document', () => {
    expect(() => check('DELETE', `/deployments/${depId}`, 200, { id: depId })).toThrow(/status 200 is not documented/);
    expect(() => check('GET', '/deployments', 201, { data: [], has_more: false, next_cursor: null })).toThrow(/status 201/);
  });

  it('throws on an undocumented content type, a body on 204, or a missing required header', () => {
    expect(() => check('GET', '/deployments', 200, { data: [], has_more: false, next_cursor: null }, json('text/plain'))).toThrow(/content type/);
    expect(() => check('DELETE', `/deployments/${depId}`, 204, { id: depId })).toThrow(/no body/);
    expect(() =>
      check('GET', '/deployments', 200, { data: [], has_more: false, next_cursor: null }, new Headers({ 'content-type': 'application/json' })),
    ).toThrow(/API-Version/);
    const problem = { type: 'https://hatchery.run/problems/unauthorized', title: 'Unauthorized', status: 401, code: 'unauthorized', detail: 'no' };
    expect(() => check('GET', '/deployments', 401, problem, json('application/problem+json'))).toThrow(/WWW-Authenticate/);
  });

  it('checks problem bodies per status, also outside the route table', () => {
    const problem = {
      type: 'https://hatchery.run/problems/validation_failed',
      title: 'Validation Failed',
      status: 422,
      code: 'validation_failed',
      detail: 'x',
    };
    expect(() => check('POST', '/deploy', 422, problem, json('application/problem+json'))).toThrow(/errors/);
    expect(() => check('POST', '/deploy', 422, { ...problem, code: 'not_found' }, json('application/problem+json'))).toThrow(/\/code/);
    expect(() => check('GET', '/nowhere', 404, { status: 404 }, json('application/problem+json'))).toThrow(/no operation/);
    expect(() => check('GET', '/healthz', 200, { status: 'ok' })).not.toThrow();
  });
});
