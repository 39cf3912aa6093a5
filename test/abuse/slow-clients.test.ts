import { ViewerDocument } from '../../src/client/generated';
import { collect, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { rawExchange, request, wsClientFrom } from './helpers';

/**
 * Issue 12, item 13: slow bodies time out, idle connections close, and one client address holds
 * a bounded number of connections. Timeouts are short here so the test waits little.
 */
describe('slow clients and connection floods', () => {
  let t: TestGateway;
  let user: TestUser;
  const REQUEST_TIMEOUT_MS = 1500;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HATCHERY_MAX_CONNECTIONS_PER_IP: '4' });
    user = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  /** The head of a request whose 40-byte body is still to come. */
  const head = () =>
    `POST /v1/apps/none/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${user.token}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n`;

  it('a body sent a byte at a time is cut off with 408 once the request timeout passes', async () => {
    const bytes = Array.from({ length: 40 }, () => ' ');
    const res = await rawExchange(t.url, [head(), ...bytes], { everyMs: 300, timeoutMs: REQUEST_TIMEOUT_MS + 5000, from: '127.0.0.2' });
    expect(res.status).toBe(408);
    expect(res.body).toMatchObject({ status: 408, code: 'request_timeout' });
    // Cut between the timeout and the next check a second later, long before the body would end (12 s).
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
  });

  it('headers sent a line at a time are cut off the same way', async () => {
    const lines = ['GET /healthz HTTP/1.1\r\n', ...Array.from({ length: 30 }, (_, i) => `X-Slow-${i}: 1\r\n`), '\r\n'];
    const res = await rawExchange(t.url, lines, { everyMs: 300, timeoutMs: REQUEST_TIMEOUT_MS + 5000, from: '127.0.0.2' });
    expect(res.status).toBe(408);
  });

  it('a connection that never sends a request is closed', async () => {
    const res = await rawExchange(t.url, [], { timeoutMs: REQUEST_TIMEOUT_MS + 5000, from: '127.0.0.2' });
    expect(res.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + 5000);
  });

  it('a request that arrives whole in time is served, and a graphql-ws connection outlives the request timeout', async () => {
    const ok = await request(t.url, 'GET', '/deployments', { token: user.token, from: '127.0.0.2' });
    expect(ok.status).toBe(200);
    const client = wsClientFrom(t.url, user.token, '127.0.0.2');
    try {
      const first = collect(client, ViewerDocument, {});
      await first.done;
      expect(first.items[0].viewer.id).toBe(user.id);
      // Idle past the request timeout and the next check, then use the same connection again.
      await new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS + 1500));
      const second = collect(client, ViewerDocument, {});
      await second.done;
      expect(second.items[0].viewer.id).toBe(user.id);
    } finally {
      await client.dispose();
    }
  });

  it('one address holds at most HATCHERY_MAX_CONNECTIONS_PER_IP connections: one more gets 429 and is closed; others are not affected', async () => {
    const from = '127.0.0.3';
    // Four connections held open with a slow request each (none finishes before the test ends them).
    const held = Array.from({ length: 4 }, () => rawExchange(t.url, [head()], { timeoutMs: 20_000, from }).catch(() => null));
    await new Promise((r) => setTimeout(r, 200));
    const fifth = await rawExchange(t.url, ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], { timeoutMs: 5000, from });
    expect(fifth.status).toBe(429);
    expect(fifth.text).toMatch(/retry-after: \d+/i);
    expect(fifth.body).toMatchObject({ status: 429, code: 'rate_limited' });
    // Another address is served meanwhile.
    expect((await request(t.url, 'GET', '/healthz', { from: '127.0.0.4' })).status).toBe(200);
    // Once those connections close (their requests time out), the address is served again.
    await Promise.all(held);
    expect((await request(t.url, 'GET', '/healthz', { from })).status).toBe(200);
  });
});

describe('the connection cap and trusted proxies', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_MAX_CONNECTIONS_PER_IP: '2', HATCHERY_TRUST_PROXY: 'loopback', HATCHERY_REQUEST_TIMEOUT_MS: '1500' });
  });
  afterAll(() => t.stop());

  it('a trusted proxy carries many clients: its connections are not capped', async () => {
    // Three connections held open by requests still arriving, then a fourth request.
    const held = Array.from({ length: 3 }, () => rawExchange(t.url, ['GET /healthz HTTP/1.1\r\n'], { timeoutMs: 20_000 }));
    await new Promise((r) => setTimeout(r, 200));
    expect((await request(t.url, 'GET', '/healthz')).status).toBe(200);
    for (const res of await Promise.all(held)) expect(res.status).toBe(408);
  });
});
