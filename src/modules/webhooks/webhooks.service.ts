import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager, In } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction } from '../../db/transaction';
import { LimitExceeded, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { Page, pageByIdDesc } from '../../db/paging';
import { newId } from '../../ids';
import type { Metrics } from '../../metrics';
import { SecretBox } from '../../secrets';
import { AppsService } from '../apps/apps.service';
import { AddressGuard } from './address-guard';
import { WebhookSender } from './webhook-sender';
import { DeliveryStatus, Webhook, WEBHOOK_EVENTS, WebhookDelivery } from './webhook.entity';
import { InFlight } from '../../in-flight';

export const MAX_WEBHOOKS_PER_EGG = 3;
const MAX_URL = 2048;
const CLAIM_BATCH = 20;

export interface WebhooksOptions {
  /** Delays before each retry; the first attempt is immediate. */
  retryScheduleMs: number[];
  /** Disable a webhook after this many events in a row failed for good. */
  disableAfter: number;
  timeoutMs: number;
  /** A claim on a delivery lasts the send timeout plus this margin (HATCHERY_LEASE_MS); default 30 s. */
  leaseMarginMs?: number;
  onError: (err: unknown) => void;
  metrics?: Metrics;
  /** Asks for `deliverDue` to run soon, on this gateway or another (the app decides how). */
  wake?: (delayMs?: number) => void;
}

export interface TestResult {
  deliveryId: string;
  status: DeliveryStatus;
  responseStatus: number | null;
  durationMs: number;
}

/**
 * Webhooks and their deliveries. Events are written to `webhook_deliveries` in the same
 * transaction as the change that caused them (a transactional outbox); `deliverDue` sends what
 * is due, claimed under a lease, retrying on the configured schedule.
 */
export class WebhooksService {
  private readonly running = new InFlight();
  private stopped = false;

  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly box: SecretBox,
    private readonly guard: AddressGuard,
    private readonly sender: WebhookSender,
    private readonly opts: WebhooksOptions,
  ) {}

  /** Asks for `deliverDue` to run soon, on this gateway or another. */
  wake(delayMs = 0): void {
    this.opts.wake?.(delayMs);
  }

  async create(actor: Actor, slug: string, input: { url: string; events: string[] }): Promise<{ webhook: Webhook; secret: string }> {
    const app = await this.apps.getVisible(actor, slug);
    const url = await this.validateUrl(input.url);
    const events = input.events;
    if (!Array.isArray(events) || events.length === 0) throw ValidationFailed.field('events', `must list one or more of: ${WEBHOOK_EVENTS.join(', ')}`);
    const unknown = events.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
    if (unknown.length) throw ValidationFailed.field('events', `unknown event ${JSON.stringify(unknown[0])}; known: ${WEBHOOK_EVENTS.join(', ')}`);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const webhook = await inTransaction(this.ds, async (tx) => {
      await this.apps.lock(tx, app.id);
      if ((await tx.countBy(Webhook, { appId: app.id })) >= MAX_WEBHOOKS_PER_EGG) {
        throw new LimitExceeded('url', `an egg has at most ${MAX_WEBHOOKS_PER_EGG} webhooks; delete one first`);
      }
      const now = this.clock.now();
      const w = tx.create(Webhook, {
        id: newId('wh', now),
        appId: app.id,
        url: url.toString(),
        events: [...new Set(events)],
        active: true,
        disabledReason: null,
        secretSealed: this.box.seal(secret),
        consecutiveFailures: 0,
        createdAt: now,
      });
      await tx.insert(Webhook, w);
      return w;
    });
    return { webhook, secret };
  }

  private async validateUrl(raw: unknown): Promise<URL> {
    if (typeof raw !== 'string' || raw.length > MAX_URL) throw ValidationFailed.field('url', `must be a URL of at most ${MAX_URL} characters`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw ValidationFailed.field('url', 'must be an absolute https URL');
    }
    if (url.protocol !== 'https:') throw ValidationFailed.field('url', 'must use https');
    if (url.username || url.password) throw ValidationFailed.field('url', 'must not carry credentials');
    const refused = await this.guard.refusal(url);
    if (refused) throw ValidationFailed.field('url', `must not point to a private, loopback or internal address: ${refused}`);
    return url;
  }

  async list(actor: Actor, slug: string): Promise<Webhook[]> {
    const app = await this.apps.getVisible(actor, slug);
    return this.ds.getRepository(Webhook).find({ where: { appId: app.id }, order: { id: 'DESC' } });
  }

  async get(actor: Actor, slug: string, id: string): Promise<Webhook> {
    const app = await this.apps.getVisible(actor, slug);
    const webhook = await this.ds.getRepository(Webhook).findOneBy({ id, appId: app.id });
    if (!webhook) throw new NotFound('Webhook', id);
    return webhook;
  }

  async delete(actor: Actor, slug: string, id: string): Promise<string> {
    const webhook = await this.get(actor, slug, id);
    await this.ds.getRepository(Webhook).delete({ id: webhook.id });
    return webhook.id;
  }

  /** Disables or re-enables a webhook; re-enabling clears the failure count. */
  async setActive(actor: Actor, slug: string, id: string, active: boolean): Promise<Webhook> {
    const webhook = await this.get(actor, slug, id);
    Object.assign(webhook, { active, disabledReason: active ? null : 'disabled by a user', consecutiveFailures: active ? 0 : webhook.consecutiveFailures });
    await this.ds.getRepository(Webhook).update({ id }, { active, disabledReason: webhook.disabledReason, consecutiveFailures: webhook.consecutiveFailures });
    return webhook;
  }

  /** The delivery history of a webhook the caller reached already (`Webhook.deliveries`). */
  deliveries(webhookId: string, page: { first?: number | null; after?: string | null }): Promise<Page<WebhookDelivery>> {
    const qb = this.ds.getRepository(WebhookDelivery).createQueryBuilder('d').where('d.webhook_id = :id', { id: webhookId });
    return pageByIdDesc(qb, 'whd', page);
  }

  /**
   * Writes the event for every active webhook of the egg subscribed to it, inside the caller's
   * transaction. The caller wakes the sender after commit (`wake`).
   */
  async enqueue(tx: EntityManager, appId: string, event: string, data: Record<string, unknown>): Promise<number> {
    const hooks = await tx
      .getRepository(Webhook)
      .createQueryBuilder('w')
      .where('w.app_id = :appId AND w.active AND :event = ANY(w.events)', { appId, event })
      .getMany();
    const now = this.clock.now();
    const payload = JSON.stringify({ type: event, timestamp: now.toISOString(), data });
    for (const w of hooks) {
      const id = newId('whd', now);
      await tx.insert(WebhookDelivery, this.newDelivery(id, w.id, id, event, payload, now));
    }
    return hooks.length;
  }

  private newDelivery(id: string, webhookId: string, messageId: string, event: string, payload: string, now: Date): Partial<WebhookDelivery> {
    return {
      id,
      webhookId,
      messageId,
      event,
      payload,
      status: DeliveryStatus.PENDING,
      attempts: 0,
      nextAttemptAt: now,
      leaseUntil: null,
      responseStatus: null,
      error: null,
      durationMs: null,
      lastAttemptAt: null,
      createdAt: now,
    };
  }

  /** Sends a signed ping now and reports the answer; a ping is not retried. */
  async test(actor: Actor, slug: string, id: string): Promise<TestResult> {
    const webhook = await this.get(actor, slug, id);
    const now = this.clock.now();
    const deliveryId = newId('whd', now);
    const payload = JSON.stringify({ type: 'ping', timestamp: now.toISOString(), data: { webhook_id: webhook.id, project: slug } });
    const delivery = { ...this.newDelivery(deliveryId, webhook.id, deliveryId, 'ping', payload, now), nextAttemptAt: null } as WebhookDelivery;
    await this.ds.getRepository(WebhookDelivery).insert(delivery);
    const result = await this.attempt(delivery, webhook, { retry: false });
    return { deliveryId, status: result.status, responseStatus: result.responseStatus, durationMs: result.durationMs };
  }

  /** Sends a past delivery's event again, as a new delivery with the same `webhook-id`. */
  async redeliver(actor: Actor, slug: string, deliveryId: string): Promise<WebhookDelivery> {
    const app = await this.apps.getVisible(actor, slug);
    const past = await this.ds
      .getRepository(WebhookDelivery)
      .createQueryBuilder('d')
      .innerJoin(Webhook, 'w', 'w.id = d.webhook_id')
      .where('d.id = :deliveryId AND w.app_id = :appId', { deliveryId, appId: app.id })
      .getOne();
    if (!past) throw new NotFound('Webhook delivery', deliveryId);
    const now = this.clock.now();
    const delivery = this.newDelivery(newId('whd', now), past.webhookId, past.messageId, past.event, past.payload, now) as WebhookDelivery;
    await this.ds.getRepository(WebhookDelivery).insert(delivery);
    this.wake();
    return delivery;
  }

  /** Sends every delivery that is due and not held by another worker; returns how many were tried. */
  deliverDue(): Promise<number> {
    if (this.stopped) return Promise.resolve(0);
    return this.running.track(this.deliverDueOnce());
  }

  /** Lets attempts in progress finish; nothing new starts. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running.settled();
  }

  private async deliverDueOnce(): Promise<number> {
    let tried = 0;
    for (;;) {
      const now = this.clock.now();
      const [claimed]: [WebhookDelivery[]] = await this.ds.query(
        `UPDATE webhook_deliveries SET lease_until = $2
          WHERE id IN (SELECT id FROM webhook_deliveries
                        WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
                        ORDER BY next_attempt_at LIMIT ${CLAIM_BATCH} FOR UPDATE SKIP LOCKED)
          RETURNING id`,
        [now, new Date(now.getTime() + this.opts.timeoutMs + (this.opts.leaseMarginMs ?? 30_000))],
      );
      if (claimed.length === 0) return tried;
      const rows = await this.ds.getRepository(WebhookDelivery).findBy({ id: In(claimed.map((c) => c.id)) });
      // The batch's webhooks, read once (a batch is usually a few webhooks' events).
      const webhooks = await this.ds.getRepository(Webhook).findBy({ id: In([...new Set(rows.map((d) => d.webhookId))]) });
      const byId = new Map(webhooks.map((w) => [w.id, w]));
      await Promise.all(rows.map((d) => this.attempt(d, byId.get(d.webhookId) ?? null, { retry: true }).catch(this.opts.onError)));
      tried += rows.length;
      if (claimed.length < CLAIM_BATCH) return tried;
    }
  }

  /** One attempt: sign, send, record; schedule the next try, or give up and count the failure. */
  /** `webhook`: the delivery's webhook as read for this attempt; null when it is gone. */
  private async attempt(
    delivery: WebhookDelivery,
    webhook: Webhook | null,
    opts: { retry: boolean },
  ): Promise<{ status: DeliveryStatus; responseStatus: number | null; durationMs: number }> {
    const now = this.clock.now();
    if (!webhook || (!webhook.active && delivery.event !== 'ping')) {
      await this.ds
        .getRepository(WebhookDelivery)
        .update({ id: delivery.id }, { status: DeliveryStatus.FAILED, nextAttemptAt: null, leaseUntil: null, error: 'webhook disabled' });
      this.opts.metrics?.webhookDelivery('failed', delivery.event);
      return { status: DeliveryStatus.FAILED, responseStatus: null, durationMs: 0 };
    }
    const result = await this.sender.send(webhook.url, this.box.open(webhook.secretSealed), delivery.messageId, now, delivery.payload);
    const attempts = delivery.attempts + 1;
    const gone = result.status === 410;
    const retryIn = opts.retry && !result.ok && !gone ? this.opts.retryScheduleMs[attempts - 1] : undefined;
    const status = result.ok ? DeliveryStatus.SUCCEEDED : retryIn !== undefined ? DeliveryStatus.PENDING : DeliveryStatus.FAILED;
    const finishedAt = this.clock.now();
    await inTransaction(this.ds, async (tx) => {
      await tx.update(
        WebhookDelivery,
        { id: delivery.id },
        {
          status,
          attempts,
          nextAttemptAt: retryIn !== undefined ? new Date(finishedAt.getTime() + retryIn) : null,
          leaseUntil: null,
          responseStatus: result.status,
          error: result.error,
          durationMs: result.durationMs,
          lastAttemptAt: now,
        },
      );
      if (delivery.event === 'ping') return;
      if (result.ok) {
        await tx.update(Webhook, { id: webhook.id }, { consecutiveFailures: 0 });
      } else if (gone) {
        await tx.update(Webhook, { id: webhook.id }, { active: false, disabledReason: 'the endpoint answered 410 Gone' });
      } else if (status === DeliveryStatus.FAILED) {
        const [[row]] = await tx.query<[Array<{ consecutive_failures: number }>, number]>(
          'UPDATE webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = $1 RETURNING consecutive_failures',
          [webhook.id],
        );
        if (row && row.consecutive_failures >= this.opts.disableAfter) {
          await tx.update(Webhook, { id: webhook.id }, { active: false, disabledReason: `${row.consecutive_failures} events in a row could not be delivered` });
        }
      }
    });
    this.opts.metrics?.webhookDelivery(result.ok ? 'succeeded' : retryIn !== undefined ? 'retry' : 'failed', delivery.event);
    if (retryIn !== undefined) this.wake(retryIn);
    return { status, responseStatus: result.status, durationMs: result.durationMs };
  }
}
