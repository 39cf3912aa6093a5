import { ManualClock } from '../../src/clock';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, packPurchases, WEBHOOK_SECRET } from '../energy/helpers';
import { page } from './helpers';

/** The page's forms as absolute action URLs, keyed by their button's text. */
function forms(html: string, base: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<form[^>]*action="([^"]+)"[^>]*>[\s\S]*?<button[^>]*>([^<]+)<\/button>[\s\S]*?<\/form>/g)) {
    out[m[2].trim()] = new URL(m[1], base).toString();
  }
  return out;
}

describe('sandbox checkout, end to end', () => {
  let t: TestGateway;
  const clock = new ManualClock(new Date());

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET }, { clock });
  });
  afterAll(() => t.stop());

  async function newCheckout(user?: TestUser): Promise<{ user: TestUser; url: string; sessionId: string }> {
    const u = user ?? (await makeUser(t.gateway));
    const res = await rest(t.url, u.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    return { user: u, url: res.body.checkout_url, sessionId: res.body.session_id };
  }
  const packOf = async (user: TestUser) => (await energyOf(t.url, user.token)).pack;

  it('shows the hosted page; Pay there credits 1,000 pack minutes; paying again credits nothing more', async () => {
    const { user, url, sessionId } = await newCheckout();
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0, total: 720 });

    const hosted = await page(url); // no bearer token: the session id is the capability
    expect(hosted.status).toBe(200);
    expect(hosted.contentType).toMatch(/^text\/html/);
    const buttons = forms(hosted.html, url);
    expect(Object.keys(buttons).sort()).toEqual(['Cancel', 'Pay']);
    expect(buttons.Pay).toBe(`${url}/pay`);
    expect(buttons.Cancel).toBe(`${url}/cancel`);

    const paid = await page(buttons.Pay, 'POST');
    expect(paid.status).toBe(200);
    expect(paid.contentType).toMatch(/^text\/html/);
    expect(paid.html).toMatch(/payment received/i);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000, total: 1720, depleted: false });
    expect((await packPurchases(t.gateway.ds, user.id)).map((r) => [r.delta, r.ref])).toEqual([[1000, sessionId]]);

    // The page no longer offers to pay.
    const after = await page(url);
    expect(after.status).toBe(200);
    expect(forms(after.html, url)).not.toHaveProperty('Pay');

    const again = await page(`${url}/pay`, 'POST');
    expect(again.status).toBeGreaterThanOrEqual(400);
    expect(again.status).toBeLessThan(500);
    expect(again.html).not.toMatch(/payment received/i);
    expect(await packOf(user)).toBe(1000);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('credits once when Pay is pressed several times at once', async () => {
    const { user, url } = await newCheckout();
    const results = await Promise.all(Array.from({ length: 5 }, () => page(`${url}/pay`, 'POST')));
    expect(results.some((r) => r.status === 200)).toBe(true);
    expect(results.every((r) => r.status < 500)).toBe(true);
    expect(await packOf(user)).toBe(1000);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(1);
  });

  it('Cancel shows a canceled page; paying afterwards is refused and credits nothing', async () => {
    const { user, url } = await newCheckout();
    const canceled = await page(`${url}/cancel`, 'POST');
    expect(canceled.status).toBe(200);
    expect(canceled.contentType).toMatch(/^text\/html/);
    expect(canceled.html).toMatch(/cancel/i);

    const pay = await page(`${url}/pay`, 'POST');
    expect(pay.status).toBeGreaterThanOrEqual(400);
    expect(pay.status).toBeLessThan(500);
    expect(pay.html).not.toMatch(/payment received/i);
    expect(await packOf(user)).toBe(0);
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(0);

    const shown = await page(url);
    expect(shown.status).toBe(200);
    expect(shown.html).toMatch(/canceled/i);
    expect(forms(shown.html, url)).not.toHaveProperty('Pay');
  });

  it('Cancel after paying does not claim the checkout was canceled, and keeps the credit', async () => {
    const { user, url } = await newCheckout();
    expect((await page(`${url}/pay`, 'POST')).status).toBe(200);
    const cancel = await page(`${url}/cancel`, 'POST');
    expect(cancel.html).not.toMatch(/nothing was charged/i);
    expect(cancel.html).not.toMatch(/checkout canceled/i);
    expect((await page(url)).html).toMatch(/paid/i);
    expect(await packOf(user)).toBe(1000);
  });

  it('one account’s two sessions are paid independently', async () => {
    const first = await newCheckout();
    const second = await newCheckout(first.user);
    expect((await page(`${first.url}/pay`, 'POST')).status).toBe(200);
    expect((await page(`${second.url}/pay`, 'POST')).status).toBe(200);
    expect(await packOf(first.user)).toBe(2000);
  });

  it('refuses to take payment once the session has expired', async () => {
    const { user, url } = await newCheckout();
    const expiresAt = Date.parse((await t.gateway.ds.query('SELECT expires_at FROM checkout_sessions WHERE user_id = $1', [user.id]))[0].expires_at);
    clock.set(new Date(expiresAt + 1000));
    try {
      const pay = await page(`${url}/pay`, 'POST');
      expect(pay.status).toBeGreaterThanOrEqual(400);
      expect(pay.status).toBeLessThan(500);
      expect(await packOf(user)).toBe(0);
    } finally {
      clock.set(new Date());
    }
  });

  it('answers 404 for an unknown session', async () => {
    const { url, sessionId } = await newCheckout();
    const unknownUrl = url.replace(sessionId, 'chk_01kzzzzzzzzzzzzzzzzzzzzzzz');
    expect(unknownUrl).not.toBe(url);
    const shown = await page(unknownUrl);
    expect(shown.status).toBe(404);
    expect(forms(shown.html, unknownUrl)).not.toHaveProperty('Pay');
    expect((await page(`${unknownUrl}/pay`, 'POST')).status).toBe(404);
    expect((await page(`${unknownUrl}/cancel`, 'POST')).status).toBe(404);
  });
});
