import { ManualClock } from '../../src/clock';
import { ConfigError, loadConfig } from '../../src/config';
import { RedeliverWebhookDeliveryDocument, WebhooksDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle } from '../support/factories';
import { createWebhook, deliveriesOf, MINUTE_MS, Receiver } from './helpers';

const BASE = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/unused' };
const SECOND = 1000;
const HOUR = 60 * MINUTE_MS;
/** Standard Webhooks' retry schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
const STANDARD_SCHEDULE = [5 * SECOND, 5 * MINUTE_MS, 30 * MINUTE_MS, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

describe('webhook settings (HATCHERY_WEBHOOK_*)', () => {
  it('defaults: 15 s timeout, the Standard Webhooks retry schedule, disabled after 5 events, nothing allow-listed, the worker on', () => {
    for (const env of [BASE, { ...BASE, HATCHERY_WEBHOOK_TIMEOUT_MS: '', HATCHERY_WEBHOOK_RETRY_SCHEDULE: '', HATCHERY_WEBHOOK_DISABLE_AFTER: '' }]) {
      const { webhooks } = loadConfig(env);
      expect(webhooks).toEqual({
        allowHosts: [],
        timeoutMs: 15_000,
        retryScheduleMs: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
        disableAfter: 5,
        caFile: null,
        worker: true,
      });
    }
  });

  it('reads overrides: a schedule in ms, s, m and h (spaces allowed), the timeout and the threshold at their bounds, allow-listed hosts trimmed', () => {
    const { webhooks } = loadConfig({
      ...BASE,
      HATCHERY_WEBHOOK_RETRY_SCHEDULE: '250ms, 1s ,2m,1h',
      HATCHERY_WEBHOOK_TIMEOUT_MS: '100',
      HATCHERY_WEBHOOK_DISABLE_AFTER: '1',
      HATCHERY_WEBHOOK_ALLOW_HOSTS: ' hooks.invalid , 10.9.8.7,,',
      HATCHERY_WEBHOOK_WORKER: 'off',
    });
    expect(webhooks).toMatchObject({
      retryScheduleMs: [250, 1000, 120_000, 3_600_000],
      timeoutMs: 100,
      disableAfter: 1,
      allowHosts: ['hooks.invalid', '10.9.8.7'],
      worker: false,
    });
    expect(loadConfig({ ...BASE, HATCHERY_WEBHOOK_TIMEOUT_MS: '120000', HATCHERY_WEBHOOK_DISABLE_AFTER: '1000' }).webhooks).toMatchObject({
      timeoutMs: 120_000,
      disableAfter: 1000,
    });
  });

  it.each([
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', 'abc'],
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', '5'],
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', '5s,'],
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', '5s;5m'],
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', '-5s'],
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', '1.5h'],
    ['HATCHERY_WEBHOOK_RETRY_SCHEDULE', '2d'],
    ['HATCHERY_WEBHOOK_TIMEOUT_MS', 'abc'],
    ['HATCHERY_WEBHOOK_TIMEOUT_MS', '99'],
    ['HATCHERY_WEBHOOK_TIMEOUT_MS', '120001'],
    ['HATCHERY_WEBHOOK_TIMEOUT_MS', '1500.5'],
    ['HATCHERY_WEBHOOK_TIMEOUT_MS', '-1'],
    ['HATCHERY_WEBHOOK_DISABLE_AFTER', '0'],
    ['HATCHERY_WEBHOOK_DISABLE_AFTER', '1001'],
    ['HATCHERY_WEBHOOK_DISABLE_AFTER', 'five'],
    ['HATCHERY_WEBHOOK_DISABLE_AFTER', '2.5'],
    ['HATCHERY_WEBHOOK_WORKER', 'yes'],
  ])('%s=%s is refused with a ConfigError naming the setting', (name, value) => {
    expect(() => loadConfig({ ...BASE, [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...BASE, [name]: value })).toThrow(new RegExp(`^${name} `));
  });
});

/**
 * The defaults reach the deliveries: a gateway with no HATCHERY_WEBHOOK_RETRY_SCHEDULE or
 * _DISABLE_AFTER, on a ManualClock, whose worker is off so that only the test runs
 * `deliverDue()` (no in-process timer races it). The receiver answers 500 throughout.
 */
describe('the default schedule and threshold drive a real gateway', () => {
  const clock = new ManualClock(new Date());
  let receiver: Receiver;
  let t: TestGateway;

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startGateway(
      {
        HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
        HATCHERY_WEBHOOK_CA_FILE: receiver.certFile,
        HATCHERY_WEBHOOK_TIMEOUT_MS: '2000',
        HATCHERY_WEBHOOK_WORKER: 'off',
      },
      { clock },
    );
  });
  afterAll(async () => {
    await t.stop();
    await receiver.stop();
  });

  const deliverDue = () => t.gateway.services.webhooks.deliverDue();
  const activeOf = async (token: string, slug: string) => (await gqlOk(t.url, token, WebhooksDocument, { app: slug })).webhooks[0];

  it('retries 5s, 5m, 30m, 2h, 5h, 10h, 10h after each failed attempt, then fails; the 5th event failed for good in a row disables the webhook', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const path = '/defaults';
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    receiver.reply(path, { status: 500 });

    /**
     * Runs every attempt of the pending events: each is due exactly the default delay after the
     * previous attempt (not a second earlier); with `check`, the history shows it before each step.
     */
    const runSchedule = async (pending: number, check: boolean) => {
      expect(await deliverDue()).toBe(pending);
      for (let i = 0; i < STANDARD_SCHEDULE.length; i++) {
        if (check) {
          const list = (await deliveriesOf(t, owner.token, slug, hook.id)).filter((x) => x.status === 'PENDING');
          expect(list).toHaveLength(pending);
          for (const x of list) {
            expect(x).toMatchObject({ attempts: i + 1, responseStatus: 500 });
            expect(new Date(x.nextAttemptAt!).getTime()).toBe(clock.now().getTime() + STANDARD_SCHEDULE[i]);
          }
        }
        clock.advance(STANDARD_SCHEDULE[i] - 1000);
        expect(await deliverDue()).toBe(0);
        clock.advance(1000);
        expect(await deliverDue()).toBe(pending);
      }
      clock.advance(24 * HOUR);
      expect(await deliverDue()).toBe(0);
    };
    const redeliver = async (n: number) => {
      const [latest] = await deliveriesOf(t, owner.token, slug, hook.id);
      for (let i = 0; i < n; i++) await gqlOk(t.url, owner.token, RedeliverWebhookDeliveryDocument, { app: slug, id: latest.id });
    };

    // A deploy: two events, eight attempts each on the default schedule, then failed for good.
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    await runSchedule(2, true);
    const history = await deliveriesOf(t, owner.token, slug, hook.id);
    expect(history).toHaveLength(2);
    for (const x of history) expect(x).toMatchObject({ status: 'FAILED', attempts: 8, responseStatus: 500, nextAttemptAt: null });
    expect(receiver.received(path)).toHaveLength(2 * 8);
    expect(await activeOf(owner.token, slug)).toMatchObject({ active: true, disabledReason: null });

    // Two more events (redeliveries) fail for good: four in a row, still active.
    await redeliver(2);
    await runSchedule(2, false);
    expect(await activeOf(owner.token, slug)).toMatchObject({ active: true, disabledReason: null });

    // The fifth in a row disables the webhook.
    await redeliver(1);
    await runSchedule(1, false);
    const w = await activeOf(owner.token, slug);
    expect(w.active).toBe(false);
    expect(w.disabledReason).toMatch(/^5 events in a row/);
    expect(await deliveriesOf(t, owner.token, slug, hook.id)).toHaveLength(5);
    expect(receiver.received(path)).toHaveLength(5 * 8);
  });
});
