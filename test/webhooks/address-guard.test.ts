import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AddressGuard, ForbiddenTarget } from '../../src/modules/webhooks/address-guard';
import { WebhookSender } from '../../src/modules/webhooks/webhook-sender';
import { expectSigned, Receiver } from './helpers';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

/** Calls a lookup function the way Node's http client does, and reports what it answered. */
function lookupOnce(lookup: LookupFunction, host: string, options: object): Promise<{ err: Error | null; address: unknown }> {
  return new Promise((resolve) => {
    lookup(host, options, (err: NodeJS.ErrnoException | null, address: unknown) => resolve({ err, address }));
  });
}

/**
 * The connect-time check (no DNS rebinding): the guard's `lookup` refuses non-public answers
 * when the HTTP client connects, and the sender re-checks every target before each request.
 * `localhost` resolves to 127.0.0.1 here, which stands in for a name that turned private after
 * registration. The receiver's certificate names both 127.0.0.1 and localhost.
 */
describe('AddressGuard and WebhookSender at connect time', () => {
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await Receiver.start();
  });
  afterAll(() => receiver.stop());

  it('lookupFor(localhost) refuses the loopback answer through its callback (single and all-addresses lookups)', async () => {
    const lookup = new AddressGuard([]).lookupFor('localhost');
    expect(lookup).toBeDefined();
    for (const options of [{}, { all: true }, { family: 4 }]) {
      const { err, address } = await lookupOnce(lookup, 'localhost', options);
      expect(err).toBeInstanceOf(ForbiddenTarget);
      // The issue's own example: the refusal does not say that localhost is 127.0.0.1.
      expect(err!.message).toBe('localhost is not an allowed address');
      expect(address === '' || address === undefined).toBe(true);
    }
  });

  it('an https request to localhost using that lookup fails before connecting; the receiver gets nothing', async () => {
    const path = '/guard-lookup';
    const lookup = new AddressGuard([]).lookupFor('localhost');
    const err = await new Promise<Error>((resolve, reject) => {
      const req = https.request(`https://localhost:${receiver.port}${path}`, { method: 'POST', lookup, ca: receiver.cert, agent: false }, () =>
        reject(new Error('the request reached the receiver')),
      );
      req.on('error', resolve);
      req.end('{}');
    });
    expect(err).toBeInstanceOf(ForbiddenTarget);
    expect(receiver.received(path)).toEqual([]);
  });

  it('WebhookSender.send to https://localhost:<port>/ without allow-listing is refused and nothing arrives; allow-listed it is delivered, signed', async () => {
    const path = '/guard-sender';
    const body = JSON.stringify({ type: 'ping', timestamp: new Date().toISOString(), data: {} });

    const refused = await new WebhookSender(new AddressGuard([]), { timeoutMs: 2000, ca: receiver.cert }).send(
      `https://localhost:${receiver.port}${path}`,
      SECRET,
      'msg_refused',
      new Date(),
      body,
    );
    expect(refused).toMatchObject({ ok: false, status: null });
    expect(refused.error).toMatch(/refused|not a public address/i);
    // The IP literal is refused as well (Node does not look literals up, so it is checked first).
    const literal = await new WebhookSender(new AddressGuard([]), { timeoutMs: 2000, ca: receiver.cert }).send(
      `https://127.0.0.1:${receiver.port}${path}`,
      SECRET,
      'msg_literal',
      new Date(),
      body,
    );
    expect(literal).toMatchObject({ ok: false, status: null });
    expect(literal.error).toMatch(/refused|not a public address/i);
    expect(receiver.received(path)).toEqual([]);

    const allowed = await new WebhookSender(new AddressGuard(['localhost']), { timeoutMs: 2000, ca: receiver.cert }).send(
      `https://localhost:${receiver.port}${path}`,
      SECRET,
      'msg_allowed',
      new Date(),
      body,
    );
    expect(allowed).toMatchObject({ ok: true, status: 200, error: null });
    expect(allowed.durationMs).toBeGreaterThanOrEqual(0);
    const got = receiver.received(path);
    expect(got).toHaveLength(1);
    expect(got[0].body).toBe(body);
    expect(got[0].headers['webhook-id']).toBe('msg_allowed');
    expectSigned(SECRET, got[0]);
  });

  it('the allow-list matches names case-insensitively and IPs by address; localhost does not imply [::1]', async () => {
    const byName = new AddressGuard(['LocalHost']);
    expect(await byName.refusal(new URL('https://localhost/x'))).toBeNull();
    expect(await byName.refusal(new URL('https://[::1]/x'))).toEqual(expect.any(String));
    expect(await byName.refusal(new URL('https://127.0.0.1/x'))).toEqual(expect.any(String));

    const byIp = new AddressGuard(['127.0.0.1']);
    for (const url of ['https://127.0.0.1/x', 'https://127.1/x', 'https://0x7f000001/x', 'https://2130706433/x']) {
      expect(await byIp.refusal(new URL(url))).toBeNull();
    }
    expect(await byIp.refusal(new URL('https://127.0.0.2/x'))).toEqual(expect.any(String));
    expect(await byIp.refusal(new URL('https://localhost/x'))).toEqual(expect.any(String));

    const v6 = new AddressGuard(['::1']);
    expect(await v6.refusal(new URL('https://[0:0:0:0:0:0:0:1]/x'))).toBeNull();
    expect(await v6.refusal(new URL('https://127.0.0.1/x'))).toEqual(expect.any(String));

    // Nothing allow-listed: loopback in any form, and a public address passes.
    const none = new AddressGuard([]);
    for (const url of ['https://localhost/x', 'https://127.1/x', 'https://[::ffff:127.0.0.1]/x', 'https://[::1]/x']) {
      expect(await none.refusal(new URL(url))).toEqual(expect.any(String));
    }
    expect(await none.refusal(new URL('https://93.184.216.34/x'))).toBeNull();
  });

  it('the sender does not follow redirects, needs a trusted certificate, and gives up after timeoutMs', async () => {
    const guard = new AddressGuard(['127.0.0.1']);
    const sender = new WebhookSender(guard, { timeoutMs: 300, ca: receiver.cert });
    const body = '{"type":"ping"}';

    receiver.reply('/guard-redirect', { status: 307, headers: { location: receiver.url('/guard-redirect-target') } });
    const redirected = await sender.send(receiver.url('/guard-redirect'), SECRET, 'msg_redirect', new Date(), body);
    expect(redirected).toMatchObject({ ok: false, status: 307 });
    expect(receiver.received('/guard-redirect')).toHaveLength(1);
    expect(receiver.received('/guard-redirect-target')).toEqual([]);

    const untrusted = await new WebhookSender(guard, { timeoutMs: 2000 }).send(receiver.url('/guard-untrusted'), SECRET, 'msg_untrusted', new Date(), body);
    expect(untrusted).toMatchObject({ ok: false, status: null });
    expect(untrusted.error).toEqual(expect.any(String));
    expect(receiver.received('/guard-untrusted')).toEqual([]);

    receiver.reply('/guard-hang', 'hang');
    const hung = await sender.send(receiver.url('/guard-hang'), SECRET, 'msg_hang', new Date(), body);
    expect(hung).toMatchObject({ ok: false, status: null });
    expect(hung.error).toMatch(/timed out/i);
    expect(hung.durationMs).toBeGreaterThanOrEqual(250);
    expect(receiver.received('/guard-hang')).toHaveLength(1);
  });
});
