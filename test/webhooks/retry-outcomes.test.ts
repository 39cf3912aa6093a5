import net from 'node:net';
import { ManualClock } from '../../src/clock';
import { WebhooksDocument } from '../../src/client/generated';
import { gqlOk, TestGateway } from '../support/gateway';
import { deploy, makeApp, settle, TestUser } from '../support/factories';
import { createWebhook, deliveriesOf, deliveriesWhen, expectSigned, listWebhooks, MINUTE_MS, Receiver, startDelivering } from './helpers';

/**
 * Every failed attempt other than 410 is retried: client errors (400, 404, 429) and failures
 * without any answer (connection refused, an untrusted certificate). As in retries.test.ts the
 * gateway runs on a ManualClock with the schedule 10m,20m (so in-process retry timers never fire
 * during a test) and the test runs `deliverDue()` itself; 127.0.0.1 is allow-listed and only the
 * first receiver's certificate is trusted.
 */
describe('webhook attempts that are retried', () => {
  const clock = new ManualClock(new Date());
  let receiver: Receiver;
  let untrusted: Receiver;
  let t: TestGateway;
  let owner: TestUser;
  let n = 0;
  const nextPath = (what: string) => `/${what}-${++n}`;

  let stop: () => Promise<void>;
  beforeAll(async () => {
    untrusted = await Receiver.start();
    ({ receiver, t, owner, stop } = await startDelivering(
      { HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m,20m', HATCHERY_WEBHOOK_DISABLE_AFTER: '2', HATCHERY_WEBHOOK_TIMEOUT_MS: '2000' },
      { clock },
    ));
  });
  afterAll(async () => {
    await stop();
    await untrusted.stop();
  });

  const advanceAndDeliver = async (ms: number) => {
    clock.advance(ms);
    return t.gateway.services.webhooks.deliverDue();
  };
  const webhookOf = async (slug: string) => (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks[0];

  /** Deploys and waits until both deploy events had their first attempt; returns their history. */
  const deployAndFirstAttempts = async (slug: string, hookId: string) => {
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    return deliveriesWhen(t, owner.token, slug, hookId, (l) => l.length === 2 && l.every((x) => x.attempts === 1));
  };

  it.each([400, 404, 429])(
    'a %d is a failed attempt that is retried on the schedule; the webhook stays active, and the retry succeeds once the receiver recovers',
    async (code) => {
      const { slug } = await makeApp(t.url, owner);
      const path = nextPath(`client-error-${code}`);
      const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
      receiver.reply(path, { status: code, headers: code === 429 ? { 'retry-after': '1' } : {} });

      const first = await deployAndFirstAttempts(slug, hook.id);
      for (const x of first) {
        expect(x).toMatchObject({ event: 'deploy', status: 'PENDING', attempts: 1, responseStatus: code });
        expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 10 * MINUTE_MS);
      }
      expect(receiver.received(path)).toHaveLength(2);
      expect(await webhookOf(slug)).toMatchObject({ active: true, disabledReason: null });
      expect((await listWebhooks(t, owner.token, slug)).body.data[0]).toMatchObject({
        active: true,
        last_delivery: { status: 'pending', response_status: code },
      });

      receiver.reply(path, { status: 200 });
      expect(await advanceAndDeliver(10 * MINUTE_MS + 1000)).toBe(2);
      const retried = receiver.received(path).slice(2);
      expect(retried).toHaveLength(2);
      for (const r of retried) expectSigned(hook.secret, r, clock.now().getTime());
      expect(new Set(receiver.received(path).map((r) => r.headers['webhook-id'])).size).toBe(2);
      for (const x of await deliveriesOf(t, owner.token, slug, hook.id)) {
        expect(x).toMatchObject({ status: 'SUCCEEDED', attempts: 2, responseStatus: 200, nextAttemptAt: null });
      }
      expect(await webhookOf(slug)).toMatchObject({ active: true, disabledReason: null });
    },
  );

  it('connection refused: the attempt fails without a response status, with an error, and is retried on the schedule; the webhook stays active', async () => {
    // A port on 127.0.0.1 that nothing listens on any more.
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    const { slug } = await makeApp(t.url, owner);
    const hook = await createWebhook(t, owner.token, slug, `https://127.0.0.1:${port}/refused`);
    const first = await deployAndFirstAttempts(slug, hook.id);
    for (const x of first) {
      expect(x).toMatchObject({ status: 'PENDING', attempts: 1, responseStatus: null });
      expect(x.error).toMatch(/ECONNREFUSED/);
      expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 10 * MINUTE_MS);
    }
    expect(await webhookOf(slug)).toMatchObject({ active: true, disabledReason: null });

    // Due: tried again, refused again, the next retry 20 minutes later.
    expect(await advanceAndDeliver(10 * MINUTE_MS + 1000)).toBe(2);
    for (const x of await deliveriesOf(t, owner.token, slug, hook.id)) {
      expect(x).toMatchObject({ status: 'PENDING', attempts: 2, responseStatus: null });
      expect(x.error).toMatch(/ECONNREFUSED/);
      expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 20 * MINUTE_MS);
    }
    expect(await webhookOf(slug)).toMatchObject({ active: true, disabledReason: null });
  });

  it('an untrusted certificate: the TLS failure is a failed attempt without a response status, retried; the receiver gets no request', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('untrusted');
    const hook = await createWebhook(t, owner.token, slug, untrusted.url(path));
    const first = await deployAndFirstAttempts(slug, hook.id);
    for (const x of first) {
      expect(x).toMatchObject({ status: 'PENDING', attempts: 1, responseStatus: null });
      expect(x.error).toMatch(/certificate/i);
      expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 10 * MINUTE_MS);
    }
    expect(await advanceAndDeliver(10 * MINUTE_MS + 1000)).toBe(2);
    for (const x of await deliveriesOf(t, owner.token, slug, hook.id)) expect(x).toMatchObject({ status: 'PENDING', attempts: 2, responseStatus: null });
    expect(untrusted.received(path)).toEqual([]);
    expect(await webhookOf(slug)).toMatchObject({ active: true, disabledReason: null });
  });
});
