import { Writable } from 'node:stream';
import { ApolloServer } from '@apollo/server';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { OperationGuard } from '../../src/graphql/limits';
import { limitsPlugin } from '../../src/http/limits';
import { createLogger } from '../../src/log';
import { loadConfig } from '../../src/config';
import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { StatementLog } from '../support/statements';
import { rawExchange, request } from './helpers';

/** Every page of deployments, each with its egg's deployments: 1 + 100 × (1 + 1 + 100 × 3) and more, far over 10,000. */
const OVER_COST = '{ deployments(first: 100) { edges { node { app { deployments(first: 100) { edges { node { id app { id } } } } } } } } }';

describe('GraphQL over HTTP, as an attacker writes it (issue 12, items 5–7)', () => {
  let t: TestGateway;
  let user: TestUser;
  const lines: Array<{ level: number; msg?: string; err?: unknown }> = [];
  const statements = new StatementLog();

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    t = await startGateway({}, { logger: createLogger('info', sink), db: { onQuery: statements.onQuery } });
    user = await makeUser(t.gateway);
    await makeApp(t.url, user);
  });
  afterAll(() => t.stop());

  const get = (target: string, headers: string[] = []) =>
    rawExchange(t.url, [`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`]);
  const bearer = () => `Authorization: Bearer ${user.token}`;

  describe('item 5: the cost limit holds for every way of writing a GET', () => {
    // With a preflight header, as an attacker with a token would send: item 6 aside.
    const preflight = 'apollo-require-preflight: 1';

    it('a fragment (#) in the request target is a 400, and nothing runs', async () => {
      const { result: res, statements: ran } = await statements.during(() =>
        get(`/graphql?query=${encodeURIComponent(OVER_COST)}#&query=${encodeURIComponent('{ viewer { id } }')}`, [bearer(), preflight]),
      );
      expect(res.status).toBe(400);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors[0].extensions.code).toBe('BAD_REQUEST');
      expect(ran).toEqual([]);
    });

    it.each(['query', 'variables', 'operationName', 'extensions'])('`%s` given twice is a 400 naming it, and nothing runs', async (name) => {
      const params = new URLSearchParams({ query: '{ viewer { id } }' });
      params.append(name, name === 'query' ? OVER_COST : name === 'variables' ? '{}' : name === 'extensions' ? '{}' : 'A');
      if (name !== 'query') params.append(name, name === 'operationName' ? 'B' : '{}');
      const { result: res, statements: ran } = await statements.during(() => get(`/graphql?${params.toString()}`, [bearer(), preflight]));
      expect(res.status).toBe(400);
      expect(res.body.errors[0].message).toContain(`\`${name}\``);
      expect(res.body.data).toBeUndefined();
      expect(ran).toEqual([]);
    });

    it('the over-cost query alone is refused with the cost limit, over GET as over POST', async () => {
      const res = await get(`/graphql?query=${encodeURIComponent(OVER_COST)}`, [bearer(), preflight]);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'cost' });
    });

    it('inside Apollo too: an operation that reaches the server unchecked is held to the limits on the text it executes', async () => {
      const schema = buildGatewaySchema();
      const guard = new OperationGuard(schema, loadConfig({}).graphqlLimits);
      const apollo = new ApolloServer({ schema, plugins: [limitsPlugin(guard, () => undefined)] });
      await apollo.start();
      try {
        const over = await apollo.executeOperation({ query: OVER_COST });
        expect(over.http.status).toBe(400);
        const body = over.body as { kind: 'single'; singleResult: { errors?: Array<{ extensions?: Record<string, unknown> }> } };
        expect(body.singleResult.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'cost' });
        // A list variable over the limit, too: the plugin checks the variables Apollo got.
        const list = await apollo.executeOperation({
          query: 'mutation($e: [String!]!) { createWebhook(app: "x", input: { url: "https://example.com", events: $e }) { webhook { id } } }',
          variables: { e: Array.from({ length: 101 }, () => 'deploy') },
        });
        expect((list.body as typeof body).singleResult.errors?.[0]?.extensions).toMatchObject({ limit: 'list' });
      } finally {
        await apollo.stop();
      }
    });
  });

  describe('item 6: GET queries with a bearer token are served (the GraphQL-over-HTTP spec)', () => {
    it('a GET query carrying Authorization runs; without it or a preflight header it stays refused as CSRF', async () => {
      const ok = await get(`/graphql?query=${encodeURIComponent('{ viewer { id email } }')}`, [bearer()]);
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ data: { viewer: { id: user.id, email: user.email } } });

      const simple = await get(`/graphql?query=${encodeURIComponent('{ viewer { id } }')}`);
      expect(simple.status).toBe(400);
      expect(simple.body.errors[0].message).toMatch(/Cross-Site Request Forgery/);
    });

    it('mutations over GET stay 405, and change nothing', async () => {
      const slug = `via-get-${Date.now().toString(36)}`;
      const res = await get(`/graphql?query=${encodeURIComponent(`mutation { createApp(input: { slug: "${slug}" }) { id } }`)}`, [bearer()]);
      expect(res.status).toBe(405);
      expect(await t.gateway.ds.query('SELECT 1 FROM apps WHERE slug = $1', [slug])).toEqual([]);
    });
  });

  describe('item 7: what the framework cannot parse is a 400 problem, never a 5xx', () => {
    const malformedHosts = ['[::1', '[::1]x', 'a b', 'host:99999', 'a/b', 'user@host', 'h?x=1'];

    it.each(malformedHosts)(
      'Host %p: 400 on REST (problem), GraphQL (errors) and /healthz, with or without a token; nothing logged as an error',
      async (host) => {
        const errorsBefore = lines.filter((l) => l.level >= 50).length;
        const send = (target: string, headers: string[] = []) =>
          rawExchange(t.url, [`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`]);
        for (const [target, headers] of [
          ['/deployments', []],
          ['/deployments', [bearer()]],
          ['/graphql?query=%7Bviewer%7Bid%7D%7D', [bearer()]],
          ['/graphql?query=%7Bviewer%7Bid%7D%7D', []],
          ['/healthz', []],
        ] as Array<[string, string[]]>) {
          const res = await send(target, headers);
          expect({ target, status: res.status }).toEqual({ target, status: 400 });
          if (target.startsWith('/graphql')) expect(res.body.errors[0].extensions.code).toBe('BAD_REQUEST');
          else {
            expect(res.text).toMatch(/content-type: application\/problem\+json/i);
            expect(res.body).toMatchObject({ status: 400, code: 'bad_request' });
          }
        }
        expect(lines.filter((l) => l.level >= 50).length).toBe(errorsBefore);
      },
    );

    it('a request without Host (HTTP/1.0) is a 400 on /graphql and served elsewhere', async () => {
      const graphql = await rawExchange(t.url, [`GET /graphql?query=%7Bviewer%7Bid%7D%7D HTTP/1.0\r\n${bearer()}\r\n\r\n`]);
      expect(graphql.status).toBe(400);
      const health = await rawExchange(t.url, ['GET /healthz HTTP/1.0\r\n\r\n']);
      expect(health.status).toBe(200);
    });

    it('a request line or header Node cannot parse gets a problem body', async () => {
      for (const raw of [
        'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
        'NONSENSE\r\n\r\n',
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`,
      ]) {
        const res = await rawExchange(t.url, [raw]);
        expect(res.status).toBe(400);
        expect(res.text).toMatch(/content-type: application\/problem\+json/i);
        expect(res.body).toMatchObject({ status: 400, code: 'bad_request' });
      }
    });

    it('a well-formed Host is served as before', async () => {
      for (const host of ['127.0.0.1', 'localhost:4000', '[::1]:80', 'example.com']) {
        const res = await request(t.url, 'GET', '/deployments', { token: user.token, headers: { host } });
        expect(res.status).toBe(200);
      }
    });
  });
});
