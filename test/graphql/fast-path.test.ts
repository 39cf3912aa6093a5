import { ApolloServer } from '@apollo/server';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { startGateway, TestGateway } from '../support/gateway';

/**
 * GraphQL over HTTP without Apollo Server's pipeline for the common query (src/http/graphql-fast.ts):
 * its answers are Apollo Server's byte for byte, and whatever it does not serve (an error, a
 * mutation, an unusual request) Apollo Server answers as before, the caller authenticated and
 * counted once. Which path answered is seen by counting Apollo Server's HTTP executions.
 */
describe('GraphQL queries answered without Apollo Server’s pipeline', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;
  let apolloRuns: jest.SpyInstance;

  beforeAll(async () => {
    // A rate limit the tests read: each request must count once, whichever path answered it.
    t = await startGateway({ HATCHERY_RATE_LIMIT_PER_MIN: '100000' });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
    for (let i = 0; i < 3; i++) await settle(t.url, user, (await deploy(t.url, user, slug)).id);
    apolloRuns = jest.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');
  });
  afterAll(async () => {
    apolloRuns.mockRestore();
    await t.stop();
  });

  async function post(body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const before = apolloRuns.mock.calls.length;
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, ...headers },
      body: JSON.stringify(body),
    });
    // Every header but the date and the rate limit's count, which move from one request to the next.
    const answered = [...res.headers].filter(([name]) => name !== 'date' && name !== 'ratelimit-remaining' && name !== 'ratelimit-reset');
    return {
      status: res.status,
      headers: answered,
      type: res.headers.get('content-type'),
      remaining: Number(res.headers.get('ratelimit-remaining')),
      text: await res.text(),
      apollo: apolloRuns.mock.calls.length - before,
    };
  }

  const LIST = `query List($first: Int) {
    deployments(first: $first) {
      nodes { id status url createdAt updatedAt finishedAt memoryMb envKeys failureReason app { slug owner { email } } __typename }
      pageInfo { hasNextPage endCursor }
    }
  }`;
  const TWO = 'query A { viewer { id email } } query B { apps(first: 5) { nodes { slug tier } pageInfo { hasNextPage } } }';

  it.each([
    ['a list with variables', { query: LIST, variables: { first: 2 } }, {}],
    ['no variables at all', { query: LIST }, {}],
    ['variables null, operationName null', { query: LIST, variables: null, operationName: null }, {}],
    ['one operation of two, by name', { query: TWO, operationName: 'B' }, {}],
    ['Accept: */*', { query: TWO, operationName: 'A' }, { accept: '*/*' }],
    ['Accept: application/json', { query: LIST, variables: { first: 1 } }, { accept: 'application/json' }],
  ])('%s: answered without Apollo Server, byte for byte as it answers', async (_what, body, headers) => {
    const fast = await post(body, headers);
    // `extensions` (here empty) is one of the things the fast path leaves to Apollo Server.
    const apollo = await post({ ...body, extensions: {} }, headers);
    expect(fast.apollo).toBe(0);
    expect(apollo.apollo).toBe(1);
    expect(fast.status).toBe(200);
    expect(JSON.parse(fast.text)).toHaveProperty('data');
    expect(JSON.parse(fast.text).errors).toBeUndefined();
    expect({ status: fast.status, headers: fast.headers, text: fast.text }).toEqual({ status: apollo.status, headers: apollo.headers, text: apollo.text });
  });

  it.each([
    ['an error in a resolver (no such egg)', { query: '{ app(slug: "no-such-egg") { slug } }' }, {}, 200, 'NOT_FOUND'],
    ['variables that do not coerce', { query: LIST, variables: { first: 'two' } }, {}, 400, 'BAD_USER_INPUT'],
    ['a document that does not validate', { query: '{ deployments(first: 1) { nodes { nope } } }' }, {}, 400, 'GRAPHQL_VALIDATION_FAILED'],
    ['a document that does not parse', { query: '{ deployments(first: 1) { nodes { id }' }, {}, 400, 'GRAPHQL_PARSE_FAILED'],
    ['two operations and no name', { query: TWO }, {}, 400, 'OPERATION_RESOLUTION_FAILURE'],
    ['no token', { query: '{ viewer { id } }' }, { authorization: '' }, 401, 'UNAUTHENTICATED'],
    ['a mutation', { query: 'mutation { createApp(input: { slug: "x" }) { id } }' }, {}, 200, 'BAD_USER_INPUT'],
  ])('%s: Apollo Server answers, as it always did', async (_what, body, headers, status, code) => {
    const res = await post(body, headers);
    expect(res.apollo).toBe(1);
    expect(res.status).toBe(status);
    const errors = (JSON.parse(res.text) as { errors: Array<{ extensions: Record<string, unknown> }> }).errors;
    expect(errors[0].extensions).toMatchObject({ code, requestId: expect.stringMatching(/^req_/) });
  });

  it('a query that fails after it ran is not run again: Apollo Server answers with the result the fast path handed over', async () => {
    const lookups = jest.spyOn(t.gateway.services.apps, 'getVisible');
    try {
      const res = await post({ query: '{ viewer { id } app(slug: "no-such-egg") { slug } }' });
      expect(res.apollo).toBe(1);
      expect(lookups).toHaveBeenCalledTimes(1);
      const body = JSON.parse(res.text) as { errors: Array<{ path: string[]; extensions: Record<string, unknown> }>; data: unknown };
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0]).toMatchObject({ path: ['app'], extensions: { code: 'NOT_FOUND', requestId: expect.stringMatching(/^req_/) } });
      expect(body.data).toBeNull();
      // The same request through Apollo Server alone (an empty `extensions`) answers the same, running it once too.
      lookups.mockClear();
      const apolloOnly = await post({ query: '{ viewer { id } app(slug: "no-such-egg") { slug } }', extensions: {} });
      expect(lookups).toHaveBeenCalledTimes(1);
      const strip = (text: string) => text.replace(/"requestId":"req_[^"]+"/g, '"requestId":"…"');
      expect({ status: res.status, type: res.type, text: strip(res.text) }).toEqual({
        status: apolloOnly.status,
        type: apolloOnly.type,
        text: strip(apolloOnly.text),
      });
    } finally {
      lookups.mockRestore();
    }
  });

  it('Accept: application/graphql-response+json goes to Apollo Server, which answers in that type', async () => {
    const res = await post({ query: LIST }, { accept: 'application/graphql-response+json' });
    expect(res.apollo).toBe(1);
    expect(res.type).toBe('application/graphql-response+json; charset=utf-8');
  });

  it('a query that fails after it ran is authenticated and counted once: the rate limit drops by one per request, whichever path', async () => {
    const first = await post({ query: LIST });
    const failed = await post({ query: '{ app(slug: "no-such-egg") { slug } }' });
    const last = await post({ query: LIST });
    expect([first.apollo, failed.apollo, last.apollo]).toEqual([0, 1, 0]);
    expect(failed.remaining).toBe(first.remaining - 1);
    expect(last.remaining).toBe(failed.remaining - 1);
  });

  it('an answered query is counted in the metrics as Apollo Server’s plugin counts it', async () => {
    const metric = async () => {
      const text = await (await fetch(`${t.url}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('hatchery_graphql_operations_total{') && l.includes('operation="List"') && l.includes('outcome="success"'));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const before = await metric();
    const res = await post({ query: LIST, variables: { first: 1 } });
    expect(res.apollo).toBe(0);
    expect(await metric()).toBe(before + 1);
  });
});
