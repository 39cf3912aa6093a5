import { CreateApiTokenDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { loadConfig } from '../../src/config';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, unique } from '../support/factories';
import { graphql, openStream, request, RawResponse, wsClientFrom } from './helpers';
import { print } from 'graphql';

/**
 * 5 requests a minute per token, 3 per IP without one. Each test acts as its own client IPs
 * (127.0.0.x) and users, so their budgets do not mix.
 */
const PER_MIN = 5;
const ANON_PER_MIN = 3;

const STATUS = print(DeploymentStatusDocument);

function expectHeaders(res: RawResponse, limit: number, remaining: number) {
  expect(res.headers['ratelimit-limit']).toBe(String(limit));
  expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
  const reset = Number(res.headers['ratelimit-reset']);
  expect(Number.isInteger(reset) && reset >= 1 && reset <= 60).toBe(true);
}

function expectRetryAfter(res: RawResponse) {
  const retry = Number(res.headers['retry-after']);
  expect(Number.isInteger(retry) && retry >= 1 && retry <= 60).toBe(true);
  expect(res.headers['retry-after']).toBe(res.headers['ratelimit-reset']);
}

describe('rate limits', () => {
  let t: TestGateway;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startGateway(
      { HATCHERY_RATE_LIMIT_PER_MIN: String(PER_MIN), HATCHERY_RATE_LIMIT_ANON_PER_MIN: String(ANON_PER_MIN), HATCHERY_SIM_BUILD_MS: '1500' },
      { db: { onQuery: (sql) => statements.push(sql) } },
    );
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('REST: headers count down per token; past the limit 429 rate_limited with Retry-After, running no SQL', async () => {
    const user = await makeUser(t.gateway);
    for (let i = 1; i <= PER_MIN; i++) {
      const res = await request(t.url, 'GET', '/deployments', { token: user.token });
      expect(res.status).toBe(200);
      expectHeaders(res, PER_MIN, PER_MIN - i);
    }
    const before = statements.length;
    const res = await request(t.url, 'GET', '/deployments', { token: user.token });
    expect(statements.slice(before)).toEqual([]);
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 429, code: 'rate_limited', title: 'Too Many Requests' });
    expect(res.body.detail).toMatch(/retry in \d+ s/);
    expectHeaders(res, PER_MIN, 0);
    expectRetryAfter(res);
  });

  it('GraphQL over HTTP shares the token’s budget and answers 429 with RATE_LIMITED', async () => {
    const user = await makeUser(t.gateway);
    for (let i = 1; i <= 2; i++) expect((await request(t.url, 'GET', '/deployments', { token: user.token })).status).toBe(200);
    for (let i = 3; i <= PER_MIN; i++) {
      const res = await graphql(t.url, user.token, '{ viewer { id } }');
      expect(res.status).toBe(200);
      expectHeaders(res, PER_MIN, PER_MIN - i);
    }
    const res = await graphql(t.url, user.token, '{ viewer { id } }');
    expect(res.status).toBe(429);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([
      {
        message: expect.stringMatching(/Too many requests/),
        extensions: { code: 'RATE_LIMITED', retryAfter: Number(res.headers['retry-after']), requestId: expect.stringMatching(/^req_/) },
      },
    ]);
    expectRetryAfter(res);
    expect((await request(t.url, 'GET', '/deployments', { token: user.token })).status).toBe(429);
  });

  it('an account’s tokens share its budget (minting tokens buys no requests); another account has its own', async () => {
    const user = await makeUser(t.gateway);
    const fresh = async () => (await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: unique('t') })).createApiToken.token;
    const tokens = [await fresh(), await fresh()];
    // Two requests spent minting; the rest of the account's budget over two other tokens.
    for (let i = 3; i <= PER_MIN; i++) expect((await request(t.url, 'GET', '/deployments', { token: tokens[i % 2] })).status).toBe(200);
    for (const token of [...tokens, user.token]) {
      const res = await request(t.url, 'GET', '/deployments', { token });
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({ status: 429, code: 'rate_limited' });
      expectHeaders(res, PER_MIN, 0);
      expectRetryAfter(res);
    }
    // Over GraphQL too, with a token minted now (its own budget is fresh, the account's is not).
    const gql = await graphql(t.url, tokens[0], '{ viewer { id } }');
    expect(gql.status).toBe(429);
    expect(gql.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expectRetryAfter(gql);

    // And over graphql-ws: the connection_init of a fresh token is turned away with 4429.
    const closed = new Promise<number>((resolve) => {
      const client = wsClientFrom(t.url, tokens[1], '127.0.0.11', resolve);
      openStream(client, STATUS, { id: 'dep_x' });
    });
    expect(await closed).toBe(4429);

    const stranger = await request(t.url, 'GET', '/deployments', { token: (await makeUser(t.gateway)).token });
    expect(stranger.status).toBe(200);
    expectHeaders(stranger, PER_MIN, PER_MIN - 1);
  });

  it('requests refused before authentication count against the client IP, even with a random bearer value', async () => {
    const from = '127.0.0.9';
    const random = () => `hatch_${Math.random().toString(36).slice(2)}${Date.now()}`;
    // A bad API-Version and an operation over the limits are refused before any token lookup.
    for (let i = 1; i <= ANON_PER_MIN; i++) {
      const res =
        i % 2
          ? await request(t.url, 'GET', '/deployments', { token: random(), from, headers: { 'api-version': 'nope' } })
          : await graphql(t.url, random(), `{ ${Array.from({ length: 20 }, (_, n) => `a${n}: viewer { id }`).join(' ')} }`, undefined, from);
      expect(res.status).toBe(400);
    }
    // The address is spent, whatever fresh bearer value it tries next.
    const next = await request(t.url, 'GET', '/deployments', { token: random(), from });
    expect(next.status).toBe(429);
    expect(next.body.code).toBe('rate_limited');
    // Another address is not.
    expect((await request(t.url, 'GET', '/deployments', { token: random(), from: '127.0.0.10' })).status).toBe(401);
  });

  it('per IP without a token: its own budget per address, apart from tokens', async () => {
    const from = '127.0.0.2';
    for (let i = 1; i <= ANON_PER_MIN; i++) {
      const res = await request(t.url, 'GET', '/deployments', { from });
      expect(res.status).toBe(401);
      expectHeaders(res, ANON_PER_MIN, ANON_PER_MIN - i);
    }
    const over = await request(t.url, 'POST', '/graphql', { from, body: { query: '{ viewer { id } }' } });
    expect(over.status).toBe(429);
    expect(over.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expectRetryAfter(over);
    const rest429 = await request(t.url, 'GET', '/deployments', { from });
    expect(rest429.status).toBe(429);
    expect(rest429.body.code).toBe('rate_limited');

    // Another address has its own budget; a token from the same address is counted under the token.
    const elsewhere = await request(t.url, 'GET', '/deployments', { from: '127.0.0.4' });
    expect(elsewhere.status).toBe(401);
    expectHeaders(elsewhere, ANON_PER_MIN, ANON_PER_MIN - 1);
    const withToken = await request(t.url, 'GET', '/deployments', { from, token: (await makeUser(t.gateway)).token });
    expect(withToken.status).toBe(200);
    expectHeaders(withToken, PER_MIN, PER_MIN - 1);
  });

  it('bad tokens count against their IP: past the anonymous allowance the address gets 429 whatever token it sends', async () => {
    const from = '127.0.0.3';
    const user = await makeUser(t.gateway);
    for (let i = 1; i <= ANON_PER_MIN; i++) {
      expect((await request(t.url, 'GET', '/deployments', { from, token: `hatch_${unique('bogus')}` })).status).toBe(401);
    }
    const before = statements.length;
    const guessed = await request(t.url, 'GET', '/deployments', { from, token: `hatch_${unique('bogus')}` });
    expect(guessed.status).toBe(429);
    expect(statements.slice(before)).toEqual([]); // no token lookup any more
    expectRetryAfter(guessed);
    expect((await request(t.url, 'GET', '/deployments', { from, token: user.token })).status).toBe(429);
    // graphql-ws from there is turned away at connection_init with 4429.
    const closed = new Promise<number>((resolve) => {
      const client = wsClientFrom(t.url, user.token, from, resolve);
      openStream(client, '{ viewer { id } }');
    });
    expect(await closed).toBe(4429);
    // The same token from another address is fine.
    expect((await request(t.url, 'GET', '/deployments', { token: user.token })).status).toBe(200);
  });

  it('does not limit probes, metrics, the API documents or the explorer page', async () => {
    const from = '127.0.0.5';
    for (let i = 0; i <= ANON_PER_MIN; i++) expect((await request(t.url, 'GET', '/deployments', { from })).status).not.toBe(200);
    expect((await request(t.url, 'GET', '/deployments', { from })).status).toBe(429);
    for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs']) {
      for (let i = 0; i <= ANON_PER_MIN; i++) {
        const res = await request(t.url, 'GET', path, { from });
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-limit']).toBeUndefined();
      }
    }
    const page = await request(t.url, 'GET', '/graphql', { from, headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
  });

  // Last: the deployment it leaves running does background SQL, which the no-SQL checks above must not see.
  it('graphql-ws: connection_init and each subscribe count; past the limit a subscribe gets RATE_LIMITED and the connection keeps streaming', async () => {
    const user = await makeUser(t.gateway);
    const app = await makeApp(t.url, user); // 1
    const d = await deploy(t.url, user, app.slug); // 2
    const closes: number[] = [];
    const client = wsClientFrom(t.url, user.token, '127.0.0.1', (code) => closes.push(code));
    try {
      const first = openStream(client, STATUS, { id: d.id }); // connection_init 3, subscribe 4
      expect(await first.first).toMatchObject({ data: { deploymentStatus: { status: 'BUILDING' } } });
      const second = openStream(client, STATUS, { id: d.id }); // 5
      await second.first;
      const third = openStream(client, STATUS, { id: d.id }); // 6: over
      expect(await third.ended).toEqual({
        errors: [
          {
            message: expect.stringMatching(/Too many requests/),
            extensions: { code: 'RATE_LIMITED', retryAfter: expect.any(Number), requestId: expect.stringMatching(/^req_/) },
          },
        ],
      });
      // The refused subscribe leaves the connection and its streams alone: the build still reports in.
      expect((await first.waitFor(2))[1]).toMatchObject({ data: { deploymentStatus: { status: 'LIVE' } } });
      expect(closes).toEqual([]);
      expect((await graphql(t.url, user.token, '{ viewer { id } }')).status).toBe(429);
      first.unsubscribe();
      second.unsubscribe();
    } finally {
      await client.dispose();
    }
  });

  it('settings: 600 a minute per token and 60 per IP by default; 0 turns a limit off', async () => {
    expect(loadConfig({}).rateLimit).toEqual({ perMin: 600, anonPerMin: 60 });
    expect(loadConfig({}).wsMaxSubscriptions).toBe(100);
    expect(() => loadConfig({ HATCHERY_RATE_LIMIT_PER_MIN: '-1' })).toThrow(/HATCHERY_RATE_LIMIT_PER_MIN/);
    const off = await startGateway({ HATCHERY_RATE_LIMIT_PER_MIN: '0', HATCHERY_RATE_LIMIT_ANON_PER_MIN: '0' });
    try {
      const user = await makeUser(off.gateway);
      for (let i = 0; i < 12; i++) {
        const res = await request(off.url, 'GET', '/deployments', { token: user.token });
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-limit']).toBeUndefined();
      }
    } finally {
      await off.stop();
    }
  });
});
