import { createServer, IncomingMessage } from 'node:http';
import { AddressInfo } from 'node:net';
import { CreateEnergyPackCheckoutDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser } from '../support/factories';
import { deliver, energyOf, expectLedgerConsistent, packPurchases, sessionEvent, signature } from '../energy/helpers';

const SECRET = 'whsec_x';

interface Recorded {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  form: URLSearchParams;
}

/** A local stand-in for api.stripe.com: answers checkout session creation, records each request. */
function fakeStripe() {
  const requests: Recorded[] = [];
  const state = { failing: false, lastExpiresAt: 0 };
  let n = 0;
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        form: new URLSearchParams(body),
      });
      if (state.failing) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: 'Something went wrong on Stripe’s end.' } }));
        return;
      }
      if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
        state.lastExpiresAt = Math.floor(Date.now() / 1000) + 24 * 3600;
        const id = n++ === 0 ? 'cs_test_123' : `cs_test_${n}`;
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${n}` });
        res.end(
          JSON.stringify({
            id,
            object: 'checkout.session',
            url: `https://checkout.stripe.test/c/${id}`,
            expires_at: state.lastExpiresAt,
            mode: 'payment',
            status: 'open',
            payment_status: 'unpaid',
          }),
        );
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } }));
    });
  });
  return {
    server: server,
    requests,
    state,
    start: (): Promise<string> =>
      new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
  };
}

describe('Stripe provider, real SDK against a local fake Stripe API', () => {
  let t: TestGateway;
  const stripe = fakeStripe();

  beforeAll(async () => {
    const apiBase = await stripe.start();
    t = await startGateway({
      STRIPE_SECRET_KEY: 'sk_test_fake',
      STRIPE_PRICE_ID: 'price_123',
      STRIPE_WEBHOOK_SECRET: SECRET,
      STRIPE_API_BASE: apiBase,
    });
  });
  afterAll(async () => {
    await t.stop();
    await new Promise<void>((resolve) => stripe.server.close(() => resolve()));
  });

  it('creates a Stripe Checkout session for the pack price, and the signed completed event credits 1,000 to that user', async () => {
    const user = await makeUser(t.gateway);
    const other = await makeUser(t.gateway);
    await energyOf(t.url, other.token);

    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    expect(res.body.checkout_url).toBe('https://checkout.stripe.test/c/cs_test_123');
    expect(res.body.session_id).toMatch(/^chk_/);
    expect(res.body.expires_at).toBe(new Date(stripe.state.lastExpiresAt * 1000).toISOString());

    expect(stripe.requests).toHaveLength(1);
    const [req] = stripe.requests;
    expect(req).toMatchObject({ method: 'POST', path: '/v1/checkout/sessions', authorization: 'Bearer sk_test_fake' });
    expect(req.contentType).toMatch(/^application\/x-www-form-urlencoded/);
    expect(req.form.get('mode')).toBe('payment');
    expect(req.form.get('line_items[0][price]')).toBe('price_123');
    expect(req.form.get('line_items[0][quantity]')).toBe('1');
    expect(req.form.get('metadata[user_id]')).toBe(user.id);
    expect(req.form.get('success_url')).toMatch(/^https?:\/\//);
    expect(req.form.get('cancel_url')).toMatch(/^https?:\/\//);

    // Nothing is credited until Stripe says it was paid.
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
    const payload = sessionEvent('checkout.session.completed', 'cs_test_123', { payment_status: 'paid', metadata: { user_id: user.id } });
    expect((await deliver(t.url, payload, signature(payload, SECRET))).status).toBe(200);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000, total: 1720 });
    expect(await energyOf(t.url, other.token)).toMatchObject({ pack: 0 });
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);

    // Stripe retries deliveries: a redelivery credits nothing more.
    expect((await deliver(t.url, payload, signature(payload, SECRET))).status).toBe(200);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000 });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('does not credit an event naming our own chk_ id instead of Stripe’s session id', async () => {
    const user = await makeUser(t.gateway);
    const { createEnergyPackCheckout: c } = await gqlOk(t.url, user.token, CreateEnergyPackCheckoutDocument, {});
    expect(c.checkoutUrl).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/cs_test_/);
    const payload = sessionEvent('checkout.session.completed', c.sessionId);
    expect((await deliver(t.url, payload, signature(payload, SECRET))).status).toBe(200);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
  });

  it('rejects an event signed with another secret', async () => {
    const user = await makeUser(t.gateway);
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    const stripeId = new URL(res.body.checkout_url).pathname.split('/').at(-1)!;
    const payload = sessionEvent('checkout.session.completed', stripeId);
    expect((await deliver(t.url, payload, signature(payload, 'whsec_test_secret'))).status).toBe(400);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
    expect((await deliver(t.url, payload, signature(payload, SECRET))).status).toBe(200);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000 });
  });

  it('serves no sandbox page for a Stripe session', async () => {
    const user = await makeUser(t.gateway);
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect((await fetch(`${t.url}/billing/sandbox/checkout/${res.body.session_id}`)).status).toBe(404);
    const pay = await fetch(`${t.url}/billing/sandbox/checkout/${res.body.session_id}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(pay.status).toBe(404);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
  });

  it('answers a 5xx without leaking the key or a stack when Stripe fails, and keeps no session', async () => {
    const user = await makeUser(t.gateway);
    stripe.state.failing = true; // every attempt, retries included
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout').finally(() => (stripe.state.failing = false));
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain('sk_test_fake');
    expect(text).not.toMatch(/\n\s+at |node_modules/);
    expect((await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE user_id = $1', [user.id]))[0].n).toBe(0);
  });
});
