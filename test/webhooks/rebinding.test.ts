import { selfSignedCert } from '../support/tls';
import { rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { ManualClock } from '../../src/clock';
import { RedeliverWebhookDeliveryDocument, TestWebhookDocument, WebhooksDocument } from '../../src/client/generated';
import { AddressGuard } from '../../src/modules/webhooks/address-guard';
import { WebhookSender } from '../../src/modules/webhooks/webhook-sender';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { createWebhook, deliveriesOf, deliveriesWhen, expectSigned, MINUTE_MS, testWebhook } from './helpers';
import { FakeDns } from './fake-dns';

/**
 * DNS rebinding: `rebind.test` resolves to a public address when the target is checked
 * (dns.promises.lookup, the pre-check) and to 127.0.0.1 when the client connects (dns.lookup,
 * which the guard's `lookup` hook and Node's default lookup both use). Both are jest.spyOn stubs
 * (fake-dns.ts), so the public address is only ever looked at, never connected to, and nothing
 * asks a real resolver. The target is an https server on 127.0.0.1 whose certificate names
 * rebind.test: without the connect-time guard the request would reach it and succeed, so these
 * tests fail if the `lookup:` option of webhook-sender.ts is removed. The target counts TCP
 * connections as well as requests.
 */
const HOST = 'rebind.test';
const PUBLIC = '93.184.216.34';
/** What a user reads in the delivery history: the host as registered, never what it resolved to. */
const REFUSAL = `refused: ${HOST} is not an allowed address`;
const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;

class Target {
  connections = 0;
  readonly requests: Array<{ path: string; headers: Record<string, string | string[] | undefined>; body: string }> = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: https.Server,
    private readonly dir: string,
    readonly certFile: string,
    readonly cert: Buffer,
    readonly port: number,
  ) {}

  static async start(): Promise<Target> {
    const { dir, certFile, key, cert } = selfSignedCert('hatchery-rebind-', HOST, `DNS:${HOST},IP:127.0.0.1`);
    let self: Target | null = null;
    const server = https.createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        self!.requests.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const target = (self = new Target(server, dir, certFile, cert, (server.address() as AddressInfo).port));
    server.on('connection', (s: Socket) => {
      target.connections++;
      target.sockets.add(s);
      s.on('close', () => target.sockets.delete(s));
    });
    return target;
  }

  url(p: string): string {
    return `https://${HOST}:${this.port}${p}`;
  }

  received(p: string) {
    return this.requests.filter((r) => r.path === p);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

describe('DNS rebinding: the target is checked again when the client connects', () => {
  const dns = new FakeDns();
  let target: Target;

  beforeAll(async () => {
    dns.install();
    target = await Target.start();
  });
  afterAll(async () => {
    await target.stop();
    dns.restore();
  });
  beforeEach(() => dns.rebind(HOST, [PUBLIC], ['127.0.0.1']));

  describe('WebhookSender', () => {
    const body = JSON.stringify({ type: 'ping', timestamp: new Date().toISOString(), data: {} });

    it('allow-listed by name, rebind.test is reached through the stubbed connect-time lookup (the setup can deliver)', async () => {
      const callbacks = dns.count('callback', HOST);
      const sent = await new WebhookSender(new AddressGuard([HOST]), { timeoutMs: 2000, ca: target.cert }).send(
        target.url('/sender-allowed'),
        SECRET,
        'msg_allowed',
        new Date(),
        body,
      );
      expect(sent).toMatchObject({ ok: true, status: 200, error: null });
      expect(dns.count('callback', HOST)).toBeGreaterThan(callbacks);
      const [got] = target.received('/sender-allowed');
      expect(got.body).toBe(body);
      expectSigned(SECRET, {
        path: got.path,
        method: 'POST',
        headers: got.headers as Record<string, string>,
        body: got.body,
        json: JSON.parse(got.body),
        at: Date.now(),
      });
    });

    it('public at the pre-check, 127.0.0.1 at connect time → refused before connecting: {ok: false, status: null}, an error that does not echo the address, nothing at the target', async () => {
      const connections = target.connections;
      const prechecks = dns.count('promises', HOST);
      const callbacks = dns.count('callback', HOST);
      const sent = await new WebhookSender(new AddressGuard([]), { timeoutMs: 2000, ca: target.cert }).send(
        target.url('/sender-refused'),
        SECRET,
        'msg_refused',
        new Date(),
        body,
      );
      expect(sent).toMatchObject({ ok: false, status: null, error: REFUSAL });
      // The pre-check saw the public answer and let it through; the connect-time lookup refused.
      expect(dns.count('promises', HOST)).toBe(prechecks + 1);
      expect(dns.count('callback', HOST)).toBeGreaterThan(callbacks);
      expect(target.connections).toBe(connections);
      expect(target.received('/sender-refused')).toEqual([]);
    });
  });

  describe('through the gateway (registered while public)', () => {
    const clock = new ManualClock(new Date());
    let t: TestGateway;
    let owner: TestUser;

    beforeAll(async () => {
      t = await startGateway(
        {
          HATCHERY_WEBHOOK_CA_FILE: target.certFile,
          HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m,20m',
          HATCHERY_WEBHOOK_TIMEOUT_MS: '2000',
        },
        { clock },
      );
      owner = await makeUser(t.gateway);
    });
    afterAll(() => t.stop());

    it('the ping (REST and GraphQL), both deploy events, their retry and a redelivery are all refused at connect time; the target gets nothing', async () => {
      const connections = target.connections;
      const { slug } = await makeApp(t.url, owner);
      const hookPath = '/gateway-hook';
      // Registration: the name resolves public, so it is accepted.
      const hook = await createWebhook(t, owner.token, slug, target.url(hookPath));

      const ping = await testWebhook(t, owner.token, slug, hook.id);
      expect(ping.status).toBe(200);
      expect(ping.body).toEqual({ delivery_id: expect.any(String), status: 'failed', response_status: null, duration_ms: expect.any(Number) });
      const { testWebhook: gqlPing } = await gqlOk(t.url, owner.token, TestWebhookDocument, { app: slug, id: hook.id });
      expect(gqlPing).toMatchObject({ status: 'FAILED', responseStatus: null });
      let history = await deliveriesOf(t, owner.token, slug, hook.id);
      expect(history).toHaveLength(2);
      for (const x of history) expect(x).toMatchObject({ event: 'ping', status: 'FAILED', attempts: 1, responseStatus: null, error: REFUSAL });

      // A deploy: both events are attempted once, refused, and stay pending for a retry.
      const d = await deploy(t.url, owner, slug);
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
      history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.filter((x) => x.event === 'deploy' && x.attempts === 1).length === 2);
      const events = history.filter((x) => x.event === 'deploy');
      for (const x of events) {
        expect(x).toMatchObject({ status: 'PENDING', attempts: 1, responseStatus: null, error: REFUSAL });
        expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 10 * MINUTE_MS);
      }

      // A redelivery of one of them is refused the same way.
      const { redeliverWebhookDelivery: again } = await gqlOk(t.url, owner.token, RedeliverWebhookDeliveryDocument, { app: slug, id: events[0].id });
      history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.some((x) => x.id === again.id && x.attempts === 1));
      expect(history.find((x) => x.id === again.id)).toMatchObject({
        event: 'deploy',
        messageId: events[0].messageId,
        status: 'PENDING',
        responseStatus: null,
        error: REFUSAL,
      });

      // The retries, once due, are refused again.
      clock.advance(10 * MINUTE_MS + 1000);
      expect(await t.gateway.services.webhooks.deliverDue()).toBe(3);
      history = await deliveriesOf(t, owner.token, slug, hook.id);
      for (const x of history.filter((y) => y.event === 'deploy'))
        expect(x).toMatchObject({ status: 'PENDING', attempts: 2, responseStatus: null, error: REFUSAL });

      expect(target.connections).toBe(connections);
      expect(target.received(hookPath)).toEqual([]);
      // Connection failures are failed attempts like any other: the webhook stays active.
      const [w] = (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks;
      expect(w).toMatchObject({ active: true, disabledReason: null });
    });
  });

  describe('through a gateway that allow-lists rebind.test (control)', () => {
    let t: TestGateway;

    beforeAll(async () => {
      t = await startGateway({ HATCHERY_WEBHOOK_CA_FILE: target.certFile, HATCHERY_WEBHOOK_ALLOW_HOSTS: HOST, HATCHERY_WEBHOOK_TIMEOUT_MS: '2000' });
    });
    afterAll(() => t.stop());

    it('the same registration and ping reach the target, so the refusals above come from the guard', async () => {
      const owner = await makeUser(t.gateway);
      const { slug } = await makeApp(t.url, owner);
      const hook = await createWebhook(t, owner.token, slug, target.url('/control'));
      const ping = await testWebhook(t, owner.token, slug, hook.id);
      expect(ping.body).toMatchObject({ status: 'succeeded', response_status: 200 });
      expect(target.received('/control')).toHaveLength(1);
      expect(JSON.parse(target.received('/control')[0].body)).toMatchObject({ type: 'ping' });
    });
  });
});
