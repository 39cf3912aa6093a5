import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { Scrape, scrape, scrapeUntil } from '../metrics/prom';
import { deliver, energyOf, expectLedgerConsistent, packPurchases, sessionEvent, signature, WEBHOOK_SECRET } from '../energy/helpers';

const HTTP = 'hatchery_http_requests_total';
const WEBHOOK = { method: 'POST', route: '/billing/webhooks/stripe' };
const webhookHits = (s: Scrape, status_class: string) => s.value(HTTP, { ...WEBHOOK, status_class });

async function pay(checkoutUrl: string): Promise<{ status: number; html: string }> {
  const res = await fetch(`${checkoutUrl}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
  });
  return { status: res.status, html: await res.text() };
}

/**
 * The shipped default: no STRIPE_WEBHOOK_SECRET, so the gateway generates one into its data dir,
 * and the sandbox page's Pay reaches the credit only as a signed delivery to the payment webhook
 * over HTTP (what /metrics counts per route).
 */
describe('sandbox checkout with the shipped default webhook secret (none configured)', () => {
  let t: TestGateway;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'hatchery-billing-')), 'data'); // does not exist yet
    t = await startGateway({ HATCHERY_DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await t.stop();
    rmSync(path.dirname(dataDir), { recursive: true, force: true });
  });

  async function checkout(): Promise<{ user: TestUser; url: string; sessionId: string }> {
    const user = await makeUser(t.gateway);
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    return { user, url: res.body.checkout_url, sessionId: res.body.session_id };
  }

  const generatedSecret = () => readFileSync(path.join(dataDir, 'stripe-webhook.secret'), 'utf8').trim();

  it('generates a whsec_ secret into the fresh data dir, readable only by the owner', () => {
    expect(t.config.stripe.webhookSecret).toBeNull();
    expect(generatedSecret()).toMatch(/^whsec_\S{20,}$/);
    expect(statSync(path.join(dataDir, 'stripe-webhook.secret')).mode & 0o777).toBe(0o600);
  });

  it('Pay credits 1,000 pack minutes through exactly one successful signed POST to the payment webhook', async () => {
    const { user, url, sessionId } = await checkout();
    const before = await scrape(t.url);

    const paid = await pay(url);
    expect(paid.status).toBe(200);
    expect(paid.html).toMatch(/payment received/i);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000, total: 1720 });
    expect((await packPurchases(t.gateway.ds, user.id)).map((r) => [r.delta, r.ref])).toEqual([[1000, sessionId]]);
    await expectLedgerConsistent(t.gateway.ds, user.id);

    // The webhook's request is counted when its response has gone out: wait for it, then pin it.
    const after = await scrapeUntil(t.url, (s) => webhookHits(s, '2xx') > webhookHits(before, '2xx'), 'the webhook delivery');
    expect(webhookHits(after, '2xx') - webhookHits(before, '2xx')).toBe(1);
    expect(webhookHits(after, '4xx') - webhookHits(before, '4xx')).toBe(0);
    expect(webhookHits(after, '5xx') - webhookHits(before, '5xx')).toBe(0);
  });

  it('a paid event signed with any other secret (including the test suite’s) is 400 and credits nothing; the generated secret is the one verified', async () => {
    const { user, sessionId } = await checkout();
    const payload = sessionEvent('checkout.session.completed', sessionId);
    for (const secret of ['whsec_someone_else', WEBHOOK_SECRET]) {
      const res = await deliver(t.url, payload, signature(payload, secret));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 400, code: 'bad_request' });
    }
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
    expect(await packPurchases(t.gateway.ds, user.id)).toHaveLength(0);
    expect((await t.gateway.ds.query('SELECT count(*)::int AS n FROM pack_fulfilments WHERE provider_session_id = $1', [sessionId]))[0].n).toBe(0);

    const ok = await deliver(t.url, payload, signature(payload, generatedSecret()));
    expect(ok.status).toBe(200);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 1000 });
  });

  it('a restart on the same data dir keeps the secret', async () => {
    const first = generatedSecret();
    const again = await startGateway({ HATCHERY_DATA_DIR: dataDir });
    try {
      expect(generatedSecret()).toBe(first);
      // The second gateway verifies with it: an event signed with it reaches the fulfilment path.
      const payload = sessionEvent('checkout.session.completed', 'chk_01kzzzzzzzzzzzzzzzzzzzzzzz');
      expect((await deliver(again.url, payload, signature(payload, first))).status).toBe(200);
      expect((await deliver(again.url, payload, signature(payload, 'whsec_someone_else'))).status).toBe(400);
    } finally {
      await again.stop();
    }
  });
});
