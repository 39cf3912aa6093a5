import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser } from '../support/factories';
import { WEBHOOK_SECRET } from '../energy/helpers';
import { page } from './helpers';

/**
 * "Plain HTML, works offline": the page must render and its buttons work with nothing but the
 * gateway reachable. So no script at all, nothing loaded from another origin (no src/href/action
 * to http(s):// or protocol-relative //, no CSS url() or @import), and forms that post to paths on
 * the gateway itself.
 */
function expectSelfContained(html: string): void {
  expect(html).toMatch(/^<!doctype html>/i);
  expect(html).not.toMatch(/<script\b/i);
  expect(html).not.toMatch(/\bon[a-z]+\s*=/i); // no inline event handlers either
  expect(html).not.toMatch(/javascript:/i);
  expect(html).not.toMatch(/<link\b/i);
  expect(html).not.toMatch(/<(iframe|img|object|embed|video|audio|source)\b/i);
  expect(html).not.toMatch(/@import|url\(/i);
  for (const m of html.matchAll(/\b(?:src|href|action|formaction|srcset|poster|data)\s*=\s*["']?([^"'\s>]*)/gi)) {
    expect(m[1]).not.toMatch(/^(?:[a-z][a-z0-9+.-]*:|\/\/)/i);
  }
}

/** Every form's method and action, in page order. */
function formsOf(html: string): Array<{ method: string; action: string; button: string }> {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map((m) => ({
    method: /\bmethod="([^"]*)"/i.exec(m[1])?.[1].toLowerCase() ?? '',
    action: /\baction="([^"]*)"/i.exec(m[1])?.[1] ?? '',
    button: /<button[^>]*>([^<]*)<\/button>/i.exec(m[2])?.[1].trim() ?? '',
  }));
}

describe('the sandbox hosted checkout page works offline', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
  });
  afterAll(() => t.stop());

  async function checkout(): Promise<{ url: string; sessionId: string }> {
    const user = await makeUser(t.gateway);
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    return { url: res.body.checkout_url, sessionId: res.body.session_id };
  }

  it('loads no script and nothing from another origin; Pay and Cancel post to same-origin paths of this session', async () => {
    const { url, sessionId } = await checkout();
    const shown = await page(url);
    expect(shown.status).toBe(200);
    expect(shown.contentType).toMatch(/^text\/html/);
    expectSelfContained(shown.html);

    const forms = formsOf(shown.html);
    expect(forms).toEqual([
      { method: 'post', action: `/billing/sandbox/checkout/${sessionId}/pay`, button: 'Pay' },
      { method: 'post', action: `/billing/sandbox/checkout/${sessionId}/cancel`, button: 'Cancel' },
    ]);
    // Resolved against the page, each action stays on the gateway that served it.
    for (const f of forms) expect(new URL(f.action, url).origin).toBe(new URL(url).origin);
  });

  it('the pages after Pay, after Cancel, for a paid session and for an unknown session are self-contained too', async () => {
    const paidSession = await checkout();
    const paid = await page(`${paidSession.url}/pay`, 'POST');
    expect(paid.status).toBe(200);
    expectSelfContained(paid.html);
    const paidShown = await page(paidSession.url);
    expect(paidShown.status).toBe(200);
    expectSelfContained(paidShown.html);
    expect(formsOf(paidShown.html)).toEqual([]);

    const canceledSession = await checkout();
    const canceled = await page(`${canceledSession.url}/cancel`, 'POST');
    expect(canceled.status).toBe(200);
    expectSelfContained(canceled.html);

    const unknown = await page(paidSession.url.replace(paidSession.sessionId, 'chk_01kzzzzzzzzzzzzzzzzzzzzzzz'));
    expect(unknown.status).toBe(404);
    expectSelfContained(unknown.html);
  });
});
