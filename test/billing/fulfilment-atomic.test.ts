import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { deliver, energyOf, expectLedgerConsistent, packPurchases, sessionEvent, signature, WEBHOOK_SECRET } from '../energy/helpers';

const COMPLETED = 'checkout.session.completed';

/**
 * "Credit 1,000 pack minutes at most once per session: a unique constraint on the session in the
 * same transaction as the credit." If the credit fails after the fulfilment row was written, the
 * row must go with it; else the session is marked fulfilled and no redelivery ever credits it.
 * The billing service uses the same EnergyService instance as `services.energy`
 * (src/services.ts), so a spy there makes the credit fail inside the fulfilment transaction.
 */
describe('pack fulfilment and its credit commit together', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
  });
  afterAll(() => t.stop());
  afterEach(() => jest.restoreAllMocks());

  async function checkout(): Promise<{ user: TestUser; sessionId: string; url: string }> {
    const user = await makeUser(t.gateway);
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    await energyOf(t.url, user.token); // the account exists before any event
    return { user, sessionId: res.body.session_id, url: res.body.checkout_url };
  }

  const fulfilments = async (sessionId: string): Promise<number> =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM pack_fulfilments WHERE provider_session_id = $1', [sessionId]))[0].n;
  const sessionRow = async (sessionId: string) => (await t.gateway.ds.query('SELECT status, paid_at FROM checkout_sessions WHERE id = $1', [sessionId]))[0];

  /** The next credit writes its ledger row and balance, then fails before the transaction commits. */
  function failNextCreditAfterWriting() {
    const energy = t.gateway.services.energy;
    const real = energy.credit.bind(energy);
    return jest.spyOn(energy, 'credit').mockImplementationOnce(async (...args) => {
      await real(...args);
      throw new Error('credit failed on purpose');
    });
  }

  async function expectNothingFulfilled(user: TestUser, sessionId: string): Promise<void> {
    expect(await fulfilments(sessionId)).toBe(0);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(0);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
    expect(await sessionRow(sessionId)).toEqual({ status: 'open', paid_at: null });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  }

  it('a webhook delivery whose credit fails answers 5xx and leaves no fulfilment row; the redelivery credits exactly once', async () => {
    const { user, sessionId } = await checkout();
    const spy = failNextCreditAfterWriting();
    const payload = sessionEvent(COMPLETED, sessionId);

    const failed = await deliver(t.url, payload, signature(payload));
    expect(spy).toHaveBeenCalledTimes(1);
    expect(failed.status).toBe(500);
    expect(failed.body).toMatchObject({ status: 500, code: 'internal_error' });
    expect(JSON.stringify(failed.body)).not.toContain('credit failed on purpose');
    await expectNothingFulfilled(user, sessionId);

    // Stripe retries the same event: this time it goes through, once.
    const retried = await deliver(t.url, payload, signature(payload));
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ received: true, credited: true });
    expect((await deliver(t.url, payload, signature(payload))).body).toEqual({ received: true, credited: false });
    expect(spy).toHaveBeenCalledTimes(2);
    expect(await fulfilments(sessionId)).toBe(1);
    expect((await packPurchases(t.gateway.ds, user.id)).map((r) => [r.bucket, r.delta, r.balance_after, r.ref])).toEqual([['pack', 1000, 1000, sessionId]]);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000 });
    expect((await sessionRow(sessionId)).status).toBe('paid');
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('a failed credit behind the sandbox Pay shows an error page, keeps the session open, and the next Pay credits once', async () => {
    const { user, sessionId, url } = await checkout();
    const spy = failNextCreditAfterWriting();
    const pay = () => fetch(`${url}/pay`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });

    const failed = await pay();
    expect(spy).toHaveBeenCalledTimes(1);
    expect(failed.status).toBe(502);
    expect(await failed.text()).not.toMatch(/payment received/i);
    await expectNothingFulfilled(user, sessionId);

    const paid = await pay();
    expect(paid.status).toBe(200);
    expect(await paid.text()).toMatch(/payment received/i);
    expect(await fulfilments(sessionId)).toBe(1);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000 });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });
});
