import { makeApp, makeUser, TestUser } from '../support/factories';
import { startGateway, TestGateway } from '../support/gateway';
import { checkRestResponse } from '../support/openapi-check';

/**
 * Requests to /graphql that never reach a resolver (malformed JSON, a `__proto__` key, another
 * media type) are refused with a 4xx in GraphQL's own error shape, and write nothing.
 */
describe('malformed GraphQL requests over HTTP', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;
  const count = async (table: string) => (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n as number;

  beforeAll(async () => {
    t = await startGateway();
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
  });
  afterAll(() => t.stop());

  async function post(body: string, contentType = 'application/json') {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': contentType, authorization: `Bearer ${user.token}` },
      body,
    });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      body: JSON.parse(text) as { errors?: Array<{ message: string; extensions: Record<string, unknown> }>; code?: string },
    };
  }

  const provision = 'mutation($app: String!, $input: ProvisionVolumeInput!) { provisionVolume(app: $app, input: $input) { created } }';

  it.each([
    ['truncated JSON', '{"query": "{ viewer { id } }"'],
    ['single quotes', "{'query': '{ viewer { id } }'}"],
    ['a __proto__ key in the variables', `{"query": ${JSON.stringify(provision)}, "variables": {"app": {"__proto__": true}, "input": {"sizeMb": 64}}}`],
    ['a constructor.prototype key', '{"query": "{ viewer { id } }", "variables": {"constructor": {"prototype": {"polluted": true}}}}'],
  ])('%s: 400 with a BAD_REQUEST GraphQL error, nothing written', async (_what, body) => {
    const volumes = await count('volumes');
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/json/);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0].extensions).toMatchObject({ code: 'BAD_REQUEST', requestId: expect.stringMatching(/^req_/) });
    expect(res.body.errors![0].message).toMatch(/JSON/);
    expect(res.body.code).toBeUndefined();
    expect(await count('volumes')).toBe(volumes);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a JSON array', '[]'],
    ['a batch of operations', '[{"query": "mutation { createApp(input: {slug: \\"batched-egg\\"}) { id } }"}]'],
    ['a JSON string', '"x"'],
    ['JSON null', 'null'],
    ['a JSON number', '42'],
  ])('%s as the body: 400 with a BAD_REQUEST GraphQL error, nothing run', async (_what, body) => {
    const apps = await count('apps');
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/json/);
    expect(res.body.code).toBeUndefined();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0].extensions).toMatchObject({ code: 'BAD_REQUEST' });
    expect((res.body as { data?: unknown }).data).toBeUndefined();
    expect(await count('apps')).toBe(apps);
  });

  it('another media type: 415 with an UNSUPPORTED_MEDIA_TYPE GraphQL error', async () => {
    const res = await post('query { viewer { id } }', 'text/plain');
    expect(res.status).toBe(415);
    expect(res.body.errors![0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('REST keeps problem details for the same faults', async () => {
    const res = await fetch(`${t.url}/v1/apps/${slug}/volume`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: '{"size_mb": {"__proto__": true}}',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const text = await res.text();
    checkRestResponse('POST', `/v1/apps/${slug}/volume`, res.status, res.headers, text, JSON.parse(text));
    expect(JSON.parse(text)).toMatchObject({ status: 400, code: 'bad_request' });
  });
});
