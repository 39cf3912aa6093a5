import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { deliver, energyOf, expectLedgerConsistent, packPurchases, sessionEvent, signature, WEBHOOK_SECRET } from '../energy/helpers';

const COMPLETED = 'checkout.session.completed';

describe('payment webhook POST /billing/webhooks/stripe', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
  });
  afterAll(() => t.stop());

  /** A user with a fresh checkout session. */
  async function checkout(): Promise<{ user: TestUser; sessionId: string }> {
    const user = await makeUser(t.gateway);
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    await energyOf(t.url, user.token); // the account exists before any event
    return { user, sessionId: res.body.session_id };
  }

  const signed = (payload: string) => deliver(t.url, payload, signature(payload));
  const packOf = async (user: TestUser) => (await energyOf(t.url, user.token)).pack;

  it('credits 1,000 pack minutes for a paid checkout.session.completed, once', async () => {
    const { user, sessionId } = await checkout();
    const payload = sessionEvent(COMPLETED, sessionId);
    expect((await signed(payload)).status).toBe(200);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 120, weekly: 600, bonus: 0, pack: 1000, total: 1720 });
    const rows = await packPurchases(t.gateway.ds, user.id);
    expect(rows.map((r) => [r.bucket, r.delta, r.balance_after, r.ref])).toEqual([['pack', 1000, 1000, sessionId]]);

    // The same event again, and a new event for the same session: 200, nothing more.
    expect((await signed(payload)).status).toBe(200);
    expect((await signed(sessionEvent(COMPLETED, sessionId))).status).toBe(200);
    expect((await signed(sessionEvent('checkout.session.async_payment_succeeded', sessionId))).status).toBe(200);
    expect(await packOf(user)).toBe(1000);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('credits exactly once under 20 concurrent duplicate deliveries', async () => {
    const { user, sessionId } = await checkout();
    const payload = sessionEvent(COMPLETED, sessionId);
    const header = signature(payload);
    const results = await Promise.all(Array.from({ length: 20 }, () => deliver(t.url, payload, header)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(await packOf(user)).toBe(1000);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('credits exactly once when completed and async_payment_succeeded race for one session', async () => {
    const { user, sessionId } = await checkout();
    const payloads = Array.from({ length: 10 }, (_, i) => sessionEvent(i % 2 ? 'checkout.session.async_payment_succeeded' : COMPLETED, sessionId));
    const results = await Promise.all(payloads.map((p) => signed(p)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(await packOf(user)).toBe(1000);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);
  });

  it('credits two sessions of one account once each', async () => {
    const { user, sessionId: first } = await checkout();
    const second = (await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout')).body.session_id;
    expect((await signed(sessionEvent(COMPLETED, first))).status).toBe(200);
    expect((await signed(sessionEvent(COMPLETED, second))).status).toBe(200);
    expect(await packOf(user)).toBe(2000);
    expect((await packPurchases(t.gateway.ds, user.id)).map((r) => r.ref).sort()).toEqual([first, second].sort());
  });

  it('credits on checkout.session.async_payment_succeeded', async () => {
    const { user, sessionId } = await checkout();
    expect((await signed(sessionEvent('checkout.session.async_payment_succeeded', sessionId))).status).toBe(200);
    expect(await packOf(user)).toBe(1000);
  });

  it('credits nothing for a completed session whose payment_status is unpaid, then credits when the payment succeeds', async () => {
    const { user, sessionId } = await checkout();
    expect((await signed(sessionEvent(COMPLETED, sessionId, { payment_status: 'unpaid' }))).status).toBe(200);
    expect(await packOf(user)).toBe(0);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(0);
    expect((await signed(sessionEvent('checkout.session.async_payment_succeeded', sessionId, { payment_status: 'paid' }))).status).toBe(200);
    expect(await packOf(user)).toBe(1000);
  });

  it('answers 200 and credits nothing for an unknown session', async () => {
    const before = (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM energy_ledger WHERE reason = 'pack_purchase'`))[0].n;
    const res = await signed(sessionEvent(COMPLETED, 'chk_01kzzzzzzzzzzzzzzzzzzzzzzz'));
    expect(res.status).toBe(200);
    expect((await signed(sessionEvent(COMPLETED, 'cs_test_unknown'))).status).toBe(200);
    expect((await t.gateway.ds.query(`SELECT count(*)::int AS n FROM energy_ledger WHERE reason = 'pack_purchase'`))[0].n).toBe(before);
    expect(
      (
        await t.gateway.ds.query('SELECT count(*)::int AS n FROM pack_fulfilments WHERE provider_session_id IN ($1, $2)', [
          'chk_01kzzzzzzzzzzzzzzzzzzzzzzz',
          'cs_test_unknown',
        ])
      )[0].n,
    ).toBe(0);
  });

  it.each(['checkout.session.expired', 'checkout.session.async_payment_failed', 'payment_intent.succeeded', 'charge.succeeded'])(
    'answers 200 and credits nothing for a %s event',
    async (type) => {
      const { user, sessionId } = await checkout();
      expect((await signed(sessionEvent(type, sessionId))).status).toBe(200);
      expect(await packOf(user)).toBe(0);
      expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(0);
    },
  );

  describe('signature', () => {
    async function expectRejected(send: (payload: string, sessionId: string) => Promise<{ status: number; body: any }>) {
      const { user, sessionId } = await checkout();
      const res = await send(sessionEvent(COMPLETED, sessionId), sessionId);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 400, code: 'bad_request' });
      expect(await packOf(user)).toBe(0);
      expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(0);
      // The same event, properly signed, still credits: nothing was used up by the bad one.
      const ok = sessionEvent(COMPLETED, sessionId);
      expect((await signed(ok)).status).toBe(200);
      expect(await packOf(user)).toBe(1000);
    }

    it('answers 400 without a Stripe-Signature header', () => expectRejected((payload) => deliver(t.url, payload)));

    it('answers 400 for an empty Stripe-Signature header', () => expectRejected((payload) => deliver(t.url, payload, '')));

    it('answers 400 for a garbage Stripe-Signature header', () => expectRejected((payload) => deliver(t.url, payload, 'not-a-signature')));

    it('answers 400 for a signature made with another secret', () =>
      expectRejected((payload) => deliver(t.url, payload, signature(payload, 'whsec_someone_else'))));

    it('answers 400 for a tampered body', () =>
      expectRejected(async (payload) => {
        const header = signature(payload);
        return deliver(t.url, payload.replace('"payment_status":"paid"', '"payment_status":"paid" '), header);
      }));

    it('answers 400 when the signed event names another session than the one sent', async () => {
      const victim = await checkout();
      const attacker = await checkout();
      const signedForAttacker = sessionEvent(COMPLETED, attacker.sessionId);
      const header = signature(signedForAttacker);
      const forged = signedForAttacker.replace(attacker.sessionId, victim.sessionId);
      expect((await deliver(t.url, forged, header)).status).toBe(400);
      expect(await packOf(victim.user)).toBe(0);
      expect(await packOf(attacker.user)).toBe(0);
    });

    it('answers 400 for a timestamp older than 300 s', () =>
      expectRejected((payload) => deliver(t.url, payload, signature(payload, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 301))));

    it('accepts a timestamp within 300 s', async () => {
      const { user, sessionId } = await checkout();
      const payload = sessionEvent(COMPLETED, sessionId);
      expect((await deliver(t.url, payload, signature(payload, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 240))).status).toBe(200);
      expect(await packOf(user)).toBe(1000);
    });

    it('answers 400 for a body that is not JSON, signed or not', async () => {
      const body = 'this is not json';
      expect((await deliver(t.url, body, signature(body))).status).toBe(400);
      expect((await deliver(t.url, body)).status).toBe(400);
    });
  });

  it('needs no bearer token, and ignores one', async () => {
    const { user, sessionId } = await checkout();
    const payload = sessionEvent(COMPLETED, sessionId);
    const res = await fetch(`${t.url}/billing/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature(payload), authorization: 'Bearer hatch_bogus' },
      body: payload,
    });
    expect(res.status).toBe(200);
    expect(await packOf(user)).toBe(1000);
  });
});
