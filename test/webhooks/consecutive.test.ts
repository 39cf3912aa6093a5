import { ManualClock } from '../../src/clock';
import { RedeliverWebhookDeliveryDocument, SetWebhookActiveDocument, WebhooksDocument } from '../../src/client/generated';
import { gqlOk, TestGateway } from '../support/gateway';
import { deploy, makeApp, settle, TestUser } from '../support/factories';
import { createWebhook, deliveriesOf, deliveriesWhen, MINUTE_MS, Received, Receiver, startDelivering } from './helpers';

/**
 * "Consecutive" failures: a webhook is disabled after HATCHERY_WEBHOOK_DISABLE_AFTER=2 events in
 * a row failed for good. The schedule is one retry after 10 minutes, so an event fails for good
 * at its second failed attempt. The gateway runs on a ManualClock; first attempts go out
 * in-process after commit, retries when the test advances the clock and runs `deliverDue()`.
 * The receiver accepts `building` events and answers 500 to `live` ones, so each deploy is one
 * success followed by one event that fails for good.
 */
describe('webhooks are disabled after failures in a row, not in total', () => {
  const clock = new ManualClock(new Date());
  let receiver: Receiver;
  let t: TestGateway;
  let owner: TestUser;

  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ receiver, t, owner, stop } = await startDelivering(
      { HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m', HATCHERY_WEBHOOK_DISABLE_AFTER: '2', HATCHERY_WEBHOOK_TIMEOUT_MS: '2000' },
      { clock },
    ));
  });
  afterAll(() => stop());

  const statusOf = (r: Received): string => r.json.data.deployment.status;

  it('fail, success, fail keeps the webhook active; disabling and re-enabling (by hand or after it was disabled) starts the count again', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = '/consecutive';
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    receiver.reply(path, (r) => ({ status: statusOf(r) === 'live' ? 500 : 200 }));
    const webhook = async () => (await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks[0];
    const failures = async (): Promise<number> =>
      (await t.gateway.ds.query('SELECT consecutive_failures FROM webhooks WHERE id = $1', [hook.id]))[0].consecutive_failures;
    const history = () => deliveriesOf(t, owner.token, slug, hook.id);
    /** Runs the retry of delivery `id` (after its first attempt failed): it fails for good. */
    const retryFails = async (id: string) => {
      clock.advance(10 * MINUTE_MS + 1000);
      await t.gateway.services.webhooks.deliverDue();
      expect((await history()).find((x) => x.id === id)).toMatchObject({ status: 'FAILED', attempts: 2, responseStatus: 500, nextAttemptAt: null });
    };
    /** One deploy: its `building` event succeeds, then its `live` event fails for good. */
    const deploySuccessThenFailure = async () => {
      const before = receiver.received(path).length;
      const d = await deploy(t.url, owner, slug);
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
      const got = (await receiver.waitFor(path, before + 2)).slice(before);
      const messageOf = (status: string) => got.find((r) => statusOf(r) === status && r.json.data.deployment.id === d.id)!.headers['webhook-id'];
      const [building, live] = [messageOf('building'), messageOf('live')];
      const list = await deliveriesWhen(
        t,
        owner.token,
        slug,
        hook.id,
        (l) => l.some((x) => x.messageId === building && x.status === 'SUCCEEDED') && l.some((x) => x.messageId === live && x.attempts === 1),
      );
      await retryFails(list.find((x) => x.messageId === live)!.id);
    };
    /** Redelivers a past `live` event: one more event, which fails for good. */
    const liveEvent = async () => {
      const msg = receiver.received(path).find((r) => statusOf(r) === 'live')!.headers['webhook-id'];
      const past = (await history()).find((x) => x.messageId === msg)!;
      const { redeliverWebhookDelivery: again } = await gqlOk(t.url, owner.token, RedeliverWebhookDeliveryDocument, { app: slug, id: past.id });
      await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.some((x) => x.id === again.id && x.attempts === 1));
      await retryFails(again.id);
    };

    // One event fails for good, then one succeeds, then one fails for good: never two in a row.
    await deploySuccessThenFailure();
    expect(await failures()).toBe(1);
    await deploySuccessThenFailure();
    expect(await failures()).toBe(1);
    expect(await webhook()).toMatchObject({ active: true, disabledReason: null });

    // Disabled and re-enabled by hand: the count starts again, so one more failure leaves it active.
    await gqlOk(t.url, owner.token, SetWebhookActiveDocument, { app: slug, id: hook.id, active: false });
    const { setWebhookActive } = await gqlOk(t.url, owner.token, SetWebhookActiveDocument, { app: slug, id: hook.id, active: true });
    expect(setWebhookActive).toMatchObject({ active: true, disabledReason: null });
    expect(await failures()).toBe(0);
    await liveEvent();
    expect(await failures()).toBe(1);
    expect(await webhook()).toMatchObject({ active: true, disabledReason: null });

    // A second failure right after it: two in a row disable the webhook.
    await liveEvent();
    let w = await webhook();
    expect(w.active).toBe(false);
    expect(w.disabledReason).toMatch(/^2 events in a row/);

    // Re-enabled after being disabled by failures: again one failure is not enough, two are.
    await gqlOk(t.url, owner.token, SetWebhookActiveDocument, { app: slug, id: hook.id, active: true });
    await liveEvent();
    expect(await webhook()).toMatchObject({ active: true, disabledReason: null });
    await liveEvent();
    w = await webhook();
    expect(w.active).toBe(false);
    expect(w.disabledReason).toMatch(/^2 events in a row/);
  });
});
