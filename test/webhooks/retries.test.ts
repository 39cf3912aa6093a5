import { ManualClock } from '../../src/clock';
import { SetWebhookActiveDocument, WebhooksDocument } from '../../src/client/generated';
import { gqlOk, TestGateway } from '../support/gateway';
import { deploy, makeApp, settle, TestUser } from '../support/factories';
import {
  createWebhook,
  deleteWebhook,
  DeliveryNode,
  deliveriesOf,
  deliveriesWhen,
  deliveryRows,
  expectSigned,
  listWebhooks,
  MINUTE_MS,
  Received,
  Receiver,
  testWebhook,
  startDelivering,
} from './helpers';

/**
 * Retries, backoff and disabling, driven by a ManualClock: the schedule is 10m then 20m (so the
 * in-process wake-ups for retries are real minutes away and never fire during a test); the test
 * moves the clock past the next attempt and runs `deliverDue()` itself. A webhook is disabled
 * after 2 events in a row failed for good; attempts time out after 500 ms.
 */
describe('webhook retries and disabling', () => {
  const clock = new ManualClock(new Date());
  let receiver: Receiver;
  let t: TestGateway;
  let owner: TestUser;
  let n = 0;
  const nextPath = (what: string) => `/${what}-${++n}`;

  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ receiver, t, owner, stop } = await startDelivering(
      { HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m,20m', HATCHERY_WEBHOOK_DISABLE_AFTER: '2', HATCHERY_WEBHOOK_TIMEOUT_MS: '500' },
      { clock },
    ));
  });
  afterAll(() => stop());

  /** Moves the gateway's clock and runs the due deliveries to completion. */
  const advanceAndDeliver = async (ms: number) => {
    clock.advance(ms);
    await t.gateway.services.webhooks.deliverDue();
  };
  /** Verifies signatures as a receiver whose clock agrees with the gateway's. */
  const signed = (secret: string, r: Received) => expectSigned(secret, r, clock.now().getTime());
  const statusOf = (r: Received): string => r.json.data.deployment.status;
  const byMessage = (list: DeliveryNode[], messageId: string) => list.find((x) => x.messageId === messageId)!;

  it('a 500 is retried on the schedule (attempts counted, same webhook-id, signed each time) and succeeds once the receiver recovers', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('recovers');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    receiver.reply(path, { status: 500 });
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const first = await receiver.waitFor(path, 2);
    for (const r of first) signed(hook.secret, r);

    let history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.attempts === 1));
    for (const x of history) {
      expect(x).toMatchObject({ event: 'deploy', status: 'PENDING', attempts: 1, responseStatus: 500 });
      expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 10 * MINUTE_MS);
    }
    expect((await listWebhooks(t, owner.token, slug)).body.data[0].last_delivery).toEqual({
      status: 'pending',
      response_status: 500,
      at: expect.any(String),
    });

    // Not due yet: nothing is sent.
    await advanceAndDeliver(10 * MINUTE_MS - 1000);
    expect(receiver.received(path)).toHaveLength(2);

    // Due: the second attempt, still 500.
    await advanceAndDeliver(2000);
    const second = receiver.received(path).slice(2);
    expect(second).toHaveLength(2);
    for (const r of second) signed(hook.secret, r);
    history = await deliveriesOf(t, owner.token, slug, hook.id);
    for (const x of history) {
      expect(x).toMatchObject({ status: 'PENDING', attempts: 2, responseStatus: 500 });
      expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + 20 * MINUTE_MS);
    }

    // The receiver recovers; the third attempt succeeds.
    receiver.reply(path, { status: 200 });
    await advanceAndDeliver(20 * MINUTE_MS + 1000);
    const third = receiver.received(path).slice(4);
    expect(third).toHaveLength(2);
    for (const r of third) signed(hook.secret, r);
    history = await deliveriesOf(t, owner.token, slug, hook.id);
    for (const x of history) expect(x).toMatchObject({ status: 'SUCCEEDED', attempts: 3, responseStatus: 200, nextAttemptAt: null });

    // Per event: three attempts with one webhook-id and one body, later timestamps each time.
    const all = receiver.received(path);
    for (const status of ['building', 'live']) {
      const attempts = all.filter((r) => statusOf(r) === status);
      expect(attempts).toHaveLength(3);
      expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
      expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
      const stamps = attempts.map((r) => Number(r.headers['webhook-timestamp']));
      expect(stamps[1] - stamps[0]).toBeGreaterThanOrEqual(10 * 60);
      expect(stamps[2] - stamps[1]).toBeGreaterThanOrEqual(20 * 60);
      expect(byMessage(history, attempts[0].headers['webhook-id'])).toBeDefined();
    }
    const listed = (await listWebhooks(t, owner.token, slug)).body.data[0];
    expect(listed).toMatchObject({ active: true, last_delivery: { status: 'succeeded', response_status: 200 } });

    // Done: nothing more is sent later.
    await advanceAndDeliver(60 * MINUTE_MS);
    expect(receiver.received(path)).toHaveLength(6);
  });

  it('after the schedule runs out the delivery fails; two events in a row failed for good disable the webhook; setWebhookActive(true) re-enables it', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('gives-up');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    // First deploy: building is accepted, live keeps failing.
    receiver.reply(path, (r) => ({ status: statusOf(r) === 'live' ? 500 : 200 }));
    const d1 = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d1.id)).toBe('LIVE');
    await receiver.waitFor(path, 2);
    await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.attempts === 1));
    await advanceAndDeliver(10 * MINUTE_MS + 1000);
    await advanceAndDeliver(20 * MINUTE_MS + 1000);
    let history = await deliveriesOf(t, owner.token, slug, hook.id);
    const liveMsg = receiver.received(path).find((r) => statusOf(r) === 'live')!.headers['webhook-id'];
    expect(byMessage(history, liveMsg)).toMatchObject({ status: 'FAILED', attempts: 3, responseStatus: 500, nextAttemptAt: null });
    expect(receiver.received(path).filter((r) => r.headers['webhook-id'] === liveMsg)).toHaveLength(3);
    for (const r of receiver.received(path)) expect(r.json.data.deployment.id).toBe(d1.id);
    // No attempt after the last one in the schedule.
    await advanceAndDeliver(5 * 60 * MINUTE_MS);
    expect(receiver.received(path)).toHaveLength(4);
    // One event failed for good: still active.
    let [w] = (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks;
    expect(w).toMatchObject({ active: true, disabledReason: null });
    expect(w.lastDelivery).toMatchObject({ status: 'FAILED', responseStatus: 500 });

    // Second deploy: both events fail for good → 2 in a row (building's earlier success was before) → disabled.
    receiver.reply(path, { status: 500 });
    const d2 = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d2.id)).toBe('LIVE');
    await receiver.waitFor(path, 6);
    await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 4 && l.every((x) => x.attempts >= 1));
    await advanceAndDeliver(10 * MINUTE_MS + 1000);
    [w] = (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks;
    expect(w.active).toBe(true);
    await advanceAndDeliver(20 * MINUTE_MS + 1000);
    history = await deliveriesOf(t, owner.token, slug, hook.id);
    expect(history).toHaveLength(4);
    for (const x of history.slice(0, 2)) expect(x).toMatchObject({ status: 'FAILED', attempts: 3, responseStatus: 500, nextAttemptAt: null });
    expect(receiver.received(path)).toHaveLength(4 + 6);
    [w] = (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks;
    expect(w.active).toBe(false);
    expect(w.disabledReason).toEqual(expect.any(String));
    expect(w.disabledReason!.length).toBeGreaterThan(0);
    expect((await listWebhooks(t, owner.token, slug)).body.data[0].active).toBe(false);

    // Disabled: a new deploy writes no delivery for it and sends nothing.
    const d3 = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d3.id)).toBe('LIVE');
    await advanceAndDeliver(60 * MINUTE_MS);
    expect(await deliveryRows(t, hook.id)).toHaveLength(4);
    expect(receiver.received(path)).toHaveLength(10);

    // Re-enabled, it receives the next events.
    const { setWebhookActive } = await gqlOk(t.url, owner.token, SetWebhookActiveDocument, { app: slug, id: hook.id, active: true });
    expect(setWebhookActive).toMatchObject({ id: hook.id, active: true, disabledReason: null });
    receiver.reply(path, { status: 200 });
    const d4 = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d4.id)).toBe('LIVE');
    const got = (await receiver.waitFor(path, 12)).slice(10);
    for (const r of got) {
      signed(hook.secret, r);
      expect(r.json.data.deployment.id).toBe(d4.id);
    }
    await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 6 && l.slice(0, 2).every((x) => x.status === 'SUCCEEDED'));
    expect((await listWebhooks(t, owner.token, slug)).body.data[0]).toMatchObject({
      active: true,
      last_delivery: { status: 'succeeded', response_status: 200 },
    });
  });

  it('410 Gone: the delivery fails without retry and the webhook becomes inactive with a disabledReason', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('gone');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    receiver.reply(path, (r) => ({ status: statusOf(r) === 'live' ? 410 : 200 }));
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    await receiver.waitFor(path, 2);
    const history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.attempts === 1 && x.status !== 'PENDING'));
    const liveMsg = receiver.received(path).find((r) => statusOf(r) === 'live')!.headers['webhook-id'];
    expect(byMessage(history, liveMsg)).toMatchObject({ status: 'FAILED', attempts: 1, responseStatus: 410, nextAttemptAt: null });

    const [w] = (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks;
    expect(w.active).toBe(false);
    expect(w.disabledReason).toMatch(/410/);

    await advanceAndDeliver(60 * MINUTE_MS);
    const again = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, again.id)).toBe('LIVE');
    await advanceAndDeliver(60 * MINUTE_MS);
    expect(receiver.received(path)).toHaveLength(2);
    expect(await deliveryRows(t, hook.id)).toHaveLength(2);
  });

  it('a hanging receiver: the attempt fails after HATCHERY_WEBHOOK_TIMEOUT_MS with an error naming the timeout', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('hangs');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    receiver.reply(path, 'hang');

    const res = await testWebhook(t, owner.token, slug, hook.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ delivery_id: expect.any(String), status: 'failed', response_status: null, duration_ms: expect.any(Number) });
    expect(res.body.duration_ms).toBeGreaterThanOrEqual(450);
    expect(receiver.received(path)).toHaveLength(1);
    const [ping] = await deliveriesOf(t, owner.token, slug, hook.id);
    expect(ping).toMatchObject({ id: res.body.delivery_id, status: 'FAILED', responseStatus: null });
    expect(ping.error).toMatch(/timed? ?out|timeout/i);

    // A deploy event: the attempt times out and is retried later.
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const events = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.filter((x) => x.event === 'deploy' && x.attempts === 1).length === 2);
    for (const x of events.filter((e) => e.event === 'deploy')) {
      expect(x).toMatchObject({ status: 'PENDING', responseStatus: null });
      expect(x.error).toMatch(/timed? ?out|timeout/i);
    }
    expect(await deleteWebhook(t, owner.token, slug, hook.id)).toMatchObject({ status: 204 });
  });

  it('a 302 on a deploy event is a failed attempt (response_status 302, retried later), the Location target gets nothing; after DELETE the retries never come', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('redirects');
    const target = nextPath('redirect-target');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    receiver.reply(path, { status: 302, headers: { location: receiver.url(target) } });
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    await receiver.waitFor(path, 2);
    const history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.attempts === 1));
    for (const x of history) expect(x).toMatchObject({ status: 'PENDING', responseStatus: 302 });
    expect((await listWebhooks(t, owner.token, slug)).body.data[0].last_delivery).toMatchObject({ status: 'pending', response_status: 302 });
    expect(receiver.received(target)).toEqual([]);

    expect((await deleteWebhook(t, owner.token, slug, hook.id)).status).toBe(204);
    await advanceAndDeliver(10 * MINUTE_MS + 1000);
    await advanceAndDeliver(20 * MINUTE_MS + 1000);
    expect(receiver.received(path)).toHaveLength(2);
    expect(receiver.received(target)).toEqual([]);
    expect(await deliveryRows(t, hook.id)).toEqual([]);
  });
});
