import { createServer, IncomingMessage, request as httpRequest, Server } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import Fastify, { FastifyInstance } from 'fastify';
import { Client } from 'pg';
import { registerBilling } from '../../src/http/billing';
import type { BillingService } from '../../src/modules/billing/billing.service';
import { startGateway, TestGateway } from '../support/gateway';
import { makeUser } from '../support/factories';
import { packPurchases, storedBalances, WEBHOOK_SECRET } from '../energy/helpers';

/**
 * Paying on the sandbox checkout page posts the signed event to the gateway's own payment webhook
 * (src/http/billing.ts). That call has a timeout (docs/operations.md, "Limits": "the sandbox page's call to the
 * payment webhook after 10 s"), so a webhook that never answers gives the payer an error page
 * instead of a request left hanging (fetch's own limit is undici's 300 s header timeout).
 *
 * The 10 s is a constant (SELF_CALL_TIMEOUT_MS in src/http/billing.ts), not a setting, and jest's
 * fake timers cannot reach AbortSignal.timeout (Node arms it on its internal timers). So these
 * tests check that the call asks AbortSignal.timeout for 10,000 ms, and hand it a real timeout
 * signal of SHORT_MS instead: what happens when the timeout fires is real; only its length is
 * shortened.
 *
 * The test's own requests go over node:http on fresh `Connection: close` connections, not fetch:
 * fetch would share undici's global connection pool with the gateway's self-call in this process.
 */

const SELF_CALL_TIMEOUT_MS = 10_000;
const SHORT_MS = 300;
/** A Pay still unanswered after this has hung: well past SHORT_MS, well short of the real 10 s. */
const HANG_MS = 5000;

/** Every AbortSignal.timeout(ms) asked for; the self-call's 10 s becomes SHORT_MS, others pass through. */
function shortenSelfCallTimeout(): number[] {
  const asked: number[] = [];
  const real = AbortSignal.timeout.bind(AbortSignal);
  jest.spyOn(AbortSignal, 'timeout').mockImplementation((ms: number) => {
    asked.push(ms);
    return real(ms === SELF_CALL_TIMEOUT_MS ? SHORT_MS : ms);
  });
  return asked;
}

interface Answer {
  status: number;
  contentType: string | undefined;
  text: string;
  ms: number;
}

/** One request on a connection of its own; fails (instead of hanging the test) after HANG_MS. */
function send(url: string, method: string, headers: Record<string, string> = {}, body = ''): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method, agent: false, headers: { connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], text, ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.setTimeout(HANG_MS, () => req.destroy(new Error(`${method} ${url} still unanswered after ${HANG_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The sandbox page's Pay button: a form post. */
const pay = (checkoutUrl: string) => send(`${checkoutUrl}/pay`, 'POST', { 'content-type': 'application/x-www-form-urlencoded' });

afterEach(() => jest.restoreAllMocks());

describe('the sandbox Pay call to a payment webhook that never answers', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  const received: IncomingMessage[] = [];
  let app: FastifyInstance;
  let base: string;

  beforeAll(async () => {
    // Takes the request and never answers.
    silent = createServer((req) => {
      received.push(req);
    });
    silent.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const selfUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;

    // Only what the Pay route uses of the billing service: the signed event of a payable session.
    const billing = {
      sandboxPayment: () => Promise.resolve({ payload: '{"type":"checkout.session.completed"}', signature: 't=1,v1=abc' }),
    } as unknown as BillingService;
    app = Fastify();
    await registerBilling(app, { billing, selfUrl: () => selfUrl });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await app?.close();
    await new Promise((resolve) => silent?.close(resolve));
  });

  it('gives up after its timeout and answers 502 "Payment could not be confirmed"', async () => {
    const asked = shortenSelfCallTimeout();
    const res = await pay(`${base}/billing/sandbox/checkout/chk_x`);

    expect(asked).toEqual([SELF_CALL_TIMEOUT_MS]); // the call is bounded, by the documented 10 s
    expect(res.status).toBe(502);
    expect(res.contentType).toMatch(/^text\/html/);
    expect(res.text).toMatch(/Payment could not be confirmed/);
    expect(res.text).not.toMatch(/payment received/i);
    // It was sent, signed, to the webhook and left unanswered: not refused, not skipped.
    expect(received).toHaveLength(1);
    expect(received[0].method).toBe('POST');
    expect(received[0].url).toBe('/billing/webhooks/stripe');
    expect(received[0].headers['stripe-signature']).toBe('t=1,v1=abc');
    // It waited for the timeout, and not much longer.
    expect(res.ms).toBeGreaterThanOrEqual(SHORT_MS - 5);
    expect(res.ms).toBeLessThan(SHORT_MS + 3000);
  });
});

describe('the sandbox Pay on a gateway whose own payment webhook is stuck', () => {
  let t: TestGateway;
  let locker: Client | undefined;

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
  });
  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await t?.stop();
  });

  it('answers 502 once the self-call times out; the stuck fulfilment still credits once when it gets through', async () => {
    const user = await makeUser(t.gateway);
    const checkout = await send(`${t.url}/billing/energy-pack/checkout`, 'POST', { authorization: `Bearer ${user.token}` });
    expect(checkout.status).toBe(201);
    const url: string = JSON.parse(checkout.text).checkout_url;
    const sessionId: string = JSON.parse(checkout.text).session_id;
    const sessionStatus = async () => (await t.gateway.ds.query('SELECT status FROM checkout_sessions WHERE id = $1', [sessionId]))[0].status;

    // The webhook's fulfilment waits behind this lock (the statement timeout, 30 s, is far off), so
    // the gateway's call to its own webhook goes unanswered.
    locker = new Client({ connectionString: t.db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE pack_fulfilments IN ACCESS EXCLUSIVE MODE');

    const asked = shortenSelfCallTimeout();
    const paid = await pay(url);
    expect(asked).toContain(SELF_CALL_TIMEOUT_MS);
    expect(paid.status).toBe(502);
    expect(paid.contentType).toMatch(/^text\/html/);
    expect(paid.text).toMatch(/Payment could not be confirmed/);
    expect(paid.ms).toBeGreaterThanOrEqual(SHORT_MS - 5);
    expect(paid.ms).toBeLessThan(SHORT_MS + 3000);
    // The webhook was reached and is still waiting for the lock: the 502 came from the timeout.
    const waiting = await locker.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%pack_fulfilments%'`,
    );
    expect(waiting.rows[0].n).toBe(1);
    expect(await sessionStatus()).toBe('open');

    // Let it through, then wait for its transaction to end: SHARE conflicts with the ROW EXCLUSIVE
    // lock its INSERT holds from now until it commits.
    await locker.query('ROLLBACK');
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE pack_fulfilments IN SHARE MODE');
    await locker.query('ROLLBACK');

    // "Could not be confirmed", not "failed": the payment landed after all, exactly once.
    expect(await sessionStatus()).toBe('paid');
    expect((await packPurchases(t.gateway.ds, user.id)).map((r) => r.delta)).toEqual([1000]);
    expect(await storedBalances(t.gateway.ds, user.id)).toMatchObject({ pack: 1000 });
    const again = await pay(url);
    expect(again.status).toBe(422);
    expect(again.text).toMatch(/already paid/i);
  });
});
