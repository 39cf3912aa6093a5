import { AddressGuard } from '../../src/modules/webhooks/address-guard';
import { WebhookSender } from '../../src/modules/webhooks/webhook-sender';
import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { closedPort } from '../support/ports';
import { FakeDns } from './fake-dns';
import { createWebhook, deliveriesOf, Receiver, testWebhook } from './helpers';

/**
 * Issue 12, item 14, on the delivery side: what a user reads about a failed attempt (the
 * `error` of `Webhook.deliveries`) never says what the webhook's host name resolved to. Node's
 * own messages do (`connect ECONNREFUSED 127.0.0.1:443`, a certificate's altnames naming its IP),
 * so the sender words them itself. `hooks.test` is an operator's allow-listed internal name
 * that resolves (through the DNS stub of fake-dns.ts) to 127.0.0.1, standing in for an internal
 * address: a closed port there, and a receiver whose certificate names 127.0.0.1 and localhost
 * but not hooks.test.
 */
const HOST = 'hooks.test';
const ECONNREFUSED = 'connect ECONNREFUSED';
const ALTNAME = 'the certificate does not name the host (ERR_TLS_CERT_ALTNAME_INVALID)';

function expectNoAddress(text: string): void {
  expect(text).not.toContain('127.0.0.1');
  expect(text).not.toContain('localhost');
}

describe('delivery errors do not echo what a host name resolved to', () => {
  const dns = new FakeDns();
  let receiver: Receiver;
  let closed: number;

  beforeAll(async () => {
    dns.install();
    dns.set(HOST, ['127.0.0.1']);
    receiver = await Receiver.start();
    closed = await closedPort();
  });
  afterAll(async () => {
    await receiver.stop();
    dns.restore();
  });

  describe('WebhookSender', () => {
    const sender = () => new WebhookSender(new AddressGuard([HOST]), { timeoutMs: 5000, ca: receiver.cert });

    it('connection refused at the resolved address: the error names the failure, not the address', async () => {
      const sent = await sender().send(`https://${HOST}:${closed}/hook`, `whsec_${Buffer.alloc(32, 1).toString('base64')}`, 'msg_1', new Date(), '{}');
      expect(sent).toMatchObject({ ok: false, status: null, error: ECONNREFUSED });
      expectNoAddress(sent.error!);
    });

    it('a certificate that does not name the host: the error does not list the names it holds', async () => {
      const sent = await sender().send(
        `https://${HOST}:${receiver.port}/altname`,
        `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        'msg_2',
        new Date(),
        '{}',
      );
      expect(sent).toMatchObject({ ok: false, status: null, error: ALTNAME });
      expectNoAddress(sent.error!);
      expect(receiver.received('/altname')).toEqual([]);
    });

    it('by IP literal the same receiver answers, so the failures above come from the name (control)', async () => {
      const sent = await new WebhookSender(new AddressGuard(['127.0.0.1']), { timeoutMs: 5000, ca: receiver.cert }).send(
        receiver.url('/control'),
        `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        'msg_3',
        new Date(),
        '{}',
      );
      expect(sent).toMatchObject({ ok: true, status: 200, error: null });
    });
  });

  describe('through the gateway: the test ping and the delivery history', () => {
    let t: TestGateway;
    let owner: TestUser;

    beforeAll(async () => {
      t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: HOST, HATCHERY_WEBHOOK_CA_FILE: receiver.certFile, HATCHERY_WEBHOOK_TIMEOUT_MS: '5000' });
      owner = await makeUser(t.gateway);
    });
    afterAll(() => t.stop());

    it.each([
      ['a closed port', () => `https://${HOST}:${closed}/hook`, ECONNREFUSED],
      ['a certificate for other names', () => `https://${HOST}:${receiver.port}/hook`, ALTNAME],
    ])('%s: POST …/test answers failed, and Webhook.deliveries says why without the address', async (_what, url, error) => {
      const { slug } = await makeApp(t.url, owner);
      const hook = await createWebhook(t, owner.token, slug, url());
      const ping = await testWebhook(t, owner.token, slug, hook.id);
      expect(ping.status).toBe(200);
      expect(ping.body).toMatchObject({ status: 'failed', response_status: null });
      expectNoAddress(JSON.stringify(ping.body));
      const [delivery] = await deliveriesOf(t, owner.token, slug, hook.id);
      expect(delivery).toMatchObject({ event: 'ping', status: 'FAILED', error });
      expectNoAddress(JSON.stringify(delivery));
    });
  });
});
