import { Client as WsClient, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { graphql, runWs } from './helpers';

/**
 * Refused operations cost nothing downstream: under the default limits, a list argument of 101
 * items (as a variable or a literal), a fragment bomb and a query of 1001 tokens are refused over
 * HTTP and graphql-ws before anything runs: no SQL statement, and no token lookup (the bearer
 * token is never resolved to its user). graphql-limits.test.ts proves the limits themselves at
 * configured values; this file holds the ones it leaves out at the defaults.
 */

const create = `mutation($slug: String!, $input: CreateWebhookInput!) { createWebhook(app: $slug, input: $input) { secret } }`;
const events = (n: number) => Array(n).fill('deploy');
const literal = (slug: string, n: number) =>
  `mutation { createWebhook(app: "${slug}", input: { url: "https://hooks.invalid/x", events: [${events(n)
    .map((e) => `"${e}"`)
    .join(', ')}] }) { secret } }`;

/** 4 levels of fragments spreading the next one 30 times: within the other default limits (about 200 tokens), but 27,000 copies of `id`. */
function fragmentBomb(): string {
  const levels = 4;
  const spread = (i: number) =>
    Array(30)
      .fill(`...F${i + 1}`)
      .join(' ');
  const fragments = Array.from({ length: levels }, (_, i) => (i === levels - 1 ? `fragment F${i} on User { id }` : `fragment F${i} on User { ${spread(i)} }`));
  return `query { viewer { ...F0 } } ${fragments.join(' ')}`;
}

/** `{ viewer { id … } }`: 5 tokens plus one per `id`. */
const tokenQuery = (tokens: number) =>
  `{ viewer { ${Array(tokens - 5)
    .fill('id')
    .join(' ')} } }`;

describe('refused operations cost nothing downstream (default limits)', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;
  let client: WsClient;
  /** Connections the client opened, and closes it saw: one connection, kept, is the expectation. */
  let connections = 0;
  const closes: number[] = [];
  const statements: string[] = [];
  let lookups: jest.SpyInstance;

  beforeAll(async () => {
    t = await startGateway({}, { db: { onQuery: (sql) => statements.push(sql) } });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
    lookups = jest.spyOn(t.gateway.services.accounts, 'authenticate');
    // Not lazy: one connection for the whole file, so each refusal is seen on a connection that stays open.
    client = createClient({
      url: t.url.replace(/^http/, 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${user.token}` },
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => undefined,
      on: { connected: () => void connections++, closed: (e) => void closes.push((e as { code: number }).code) },
    });
    await runWs(client, '{ viewer { id } }'); // connected and authenticated before anything is counted
  });
  afterAll(async () => {
    lookups?.mockRestore();
    await client?.dispose();
    await t?.stop();
  });

  /** SQL statements and token lookups while `fn` runs. */
  async function downstreamOf<T>(fn: () => Promise<T>): Promise<{ result: T; sql: string[]; tokenLookups: number }> {
    const before = statements.length;
    const calls = lookups.mock.calls.length;
    const result = await fn();
    return { result, sql: statements.slice(before), tokenLookups: lookups.mock.calls.length - calls };
  }

  const cases = [
    {
      name: 'a list variable of 101 items',
      query: () => create,
      variables: () => ({ slug, input: { url: 'https://hooks.invalid/x', events: events(101) } }),
      extensions: { code: 'BAD_USER_INPUT', limit: 'list', max: 100, found: 101 },
      message: /\$input\.events holds 101 items; the limit is 100/,
    },
    {
      name: 'a list literal of 101 items',
      query: () => literal(slug, 101),
      variables: () => undefined,
      extensions: { code: 'BAD_USER_INPUT', limit: 'list', max: 100, found: 101 },
      message: /holds 101 items; the limit is 100/,
    },
    {
      name: 'a fragment bomb',
      query: fragmentBomb,
      variables: () => undefined,
      extensions: { code: 'BAD_USER_INPUT', limit: 'cost', max: 10_000 },
      message: /Cost limit of 10000 exceeded/,
    },
    {
      name: 'a query of 1001 tokens',
      query: () => tokenQuery(1001),
      variables: () => undefined,
      extensions: { code: 'BAD_USER_INPUT', limit: 'tokens', max: 1000 },
      message: /Token limit of 1000 exceeded/,
    },
  ];

  it('the recorders see what a request that runs costs: one token lookup and its SQL', async () => {
    const { result: res, sql, tokenLookups } = await downstreamOf(() => graphql(t.url, user.token, '{ viewer { email } }'));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ viewer: { email: user.email } });
    expect(tokenLookups).toBe(1);
    expect(sql.length).toBeGreaterThanOrEqual(1);
    expect(sql.some((s) => /token_hash/.test(s))).toBe(true);
  });

  it.each(cases)(
    '$name: over HTTP, 400 BAD_USER_INPUT naming the limit, with no SQL and no token lookup',
    async ({ query, variables, extensions, message }) => {
      const { result: res, sql, tokenLookups } = await downstreamOf(() => graphql(t.url, user.token, query(), variables()));
      expect(res.status).toBe(400);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors).toHaveLength(1);
      expect(res.body.errors[0].extensions).toEqual({ ...extensions, requestId: expect.stringMatching(/^req_/) });
      expect(res.body.errors[0].message).toMatch(message);
      expect(sql).toEqual([]);
      expect(tokenLookups).toBe(0);
    },
  );

  it.each(cases)(
    '$name: over graphql-ws, the same error on a connection that stays open, with no SQL and no token lookup',
    async ({ query, variables, extensions, message }) => {
      const { result: ws, sql, tokenLookups } = await downstreamOf(() => runWs(client, query(), variables()));
      expect(ws.data).toBeUndefined();
      expect(ws.errors).toHaveLength(1);
      expect(ws.errors![0].extensions).toEqual({ ...extensions, requestId: expect.stringMatching(/^req_/) });
      expect(ws.errors![0].message).toMatch(message);
      expect(sql).toEqual([]);
      expect(tokenLookups).toBe(0);
      expect((await runWs(client, '{ viewer { email } }')).data).toEqual({ viewer: { email: user.email } });
      expect({ connections, closes }).toEqual({ connections: 1, closes: [] });
    },
  );

  it('a list of 100 items is not refused by the limit: over graphql-ws it reaches the service', async () => {
    const { result: ws, sql } = await downstreamOf(() => runWs(client, create, { slug, input: { url: 'https://hooks.invalid/x', events: events(100) } }));
    expect(ws.errors).toBeUndefined();
    expect(ws.data).toEqual({ createWebhook: { secret: expect.any(String) } });
    expect(sql.some((s) => /INSERT INTO "webhooks"/.test(s))).toBe(true);
  });
});
