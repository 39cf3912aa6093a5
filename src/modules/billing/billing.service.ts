import Stripe from 'stripe';
import { DataSource } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction } from '../../db/transaction';
import { BadRequest, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { newId } from '../../ids';
import { EnergyBucket, EnergyReason } from '../energy/energy.entity';
import { EnergyService, PACK_MINUTES } from '../energy/energy.service';
import { CheckoutSession, CheckoutStatus } from './billing.entity';
import { PaymentProvider, SandboxProvider } from './payment-provider';

const SIGNATURE_TOLERANCE_S = 300;
const FULFILLING_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);

export interface CheckoutView {
  sessionId: string;
  checkoutUrl: string;
  expiresAt: Date;
}

export interface BillingDeps {
  ds: DataSource;
  clock: Clock;
  energy: EnergyService;
  provider: PaymentProvider;
  stripe: Stripe;
  webhookSecret: string;
  baseUrl: () => string;
}

/** Energy-pack checkout and its one fulfilment path, shared by Stripe and the sandbox. */
export class BillingService {
  constructor(private readonly deps: BillingDeps) {}

  async createCheckout(actor: Actor): Promise<CheckoutView> {
    const now = this.deps.clock.now();
    const id = newId('chk', now);
    const base = this.deps.baseUrl();
    const session = await this.deps.provider.createSession(
      { checkoutId: id, userId: actor.user.id, successUrl: `${base}/billing/checkout/${id}/done`, cancelUrl: `${base}/billing/checkout/${id}/canceled` },
      now,
    );
    await this.deps.ds.getRepository(CheckoutSession).insert({
      id,
      userId: actor.user.id,
      provider: this.deps.provider.name,
      providerSessionId: session.providerSessionId,
      url: session.url,
      status: CheckoutStatus.OPEN,
      expiresAt: session.expiresAt,
      createdAt: now,
      paidAt: null,
    });
    return { sessionId: id, checkoutUrl: session.url, expiresAt: session.expiresAt };
  }

  /**
   * The payment webhook: verifies the provider's signature over the raw body, then credits the
   * pack for a paid session. Duplicate, unknown-session and other events credit nothing.
   */
  async handleWebhook(rawBody: Buffer | string, signature: string | undefined): Promise<{ credited: boolean }> {
    let event: Stripe.Event;
    try {
      if (!signature) throw new Error('missing Stripe-Signature header');
      event = this.deps.stripe.webhooks.constructEvent(rawBody, signature, this.deps.webhookSecret, SIGNATURE_TOLERANCE_S);
    } catch (err) {
      throw new BadRequest(`Webhook signature verification failed: ${(err as Error).message}`);
    }
    if (!FULFILLING_EVENTS.has(event.type)) return { credited: false };
    const session = event.data.object as { id?: unknown; payment_status?: unknown };
    if (typeof session.id !== 'string') return { credited: false };
    if (event.type === 'checkout.session.completed' && session.payment_status !== 'paid') return { credited: false };
    return { credited: await this.fulfil(session.id) };
  }

  /** Credits the pack once per session: the fulfilment row's key and the credit share a transaction. */
  private fulfil(providerSessionId: string): Promise<boolean> {
    return inTransaction(this.deps.ds, async (tx) => {
      const checkout = await tx.findOneBy(CheckoutSession, { providerSessionId });
      if (!checkout) return false;
      const now = this.deps.clock.now();
      const inserted = await tx.query<unknown[]>(
        `INSERT INTO pack_fulfilments (provider_session_id, checkout_id, user_id, credited_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING provider_session_id`,
        [providerSessionId, checkout.id, checkout.userId, now],
      );
      if (inserted.length === 0) return false;
      await this.deps.energy.credit(tx, checkout.userId, EnergyBucket.PACK, PACK_MINUTES, EnergyReason.PACK_PURCHASE, checkout.id);
      await tx.update(CheckoutSession, { id: checkout.id }, { status: CheckoutStatus.PAID, paidAt: now });
      return true;
    });
  }

  /** A sandbox session, for its hosted page (no bearer token: the session id is the capability). */
  async sandboxSession(id: string): Promise<CheckoutSession> {
    const session = await this.deps.ds.getRepository(CheckoutSession).findOneBy({ id, provider: 'sandbox' });
    if (!session) throw new NotFound('Checkout session', id);
    return session;
  }

  /** Paying on the sandbox page: the signed event to deliver to the payment webhook. */
  async sandboxPayment(id: string): Promise<{ payload: string; signature: string }> {
    const session = await this.sandboxSession(id);
    const now = this.deps.clock.now();
    if (session.status === CheckoutStatus.CANCELED) throw ValidationFailed.field('session', 'was canceled');
    if (session.status === CheckoutStatus.PAID) throw ValidationFailed.field('session', 'is already paid');
    if (session.status === CheckoutStatus.OPEN && session.expiresAt <= now) throw ValidationFailed.field('session', 'has expired');
    return SandboxProvider.paidEvent(this.deps.stripe, this.deps.webhookSecret, session, now);
  }

  async sandboxCancel(id: string): Promise<CheckoutSession> {
    const session = await this.sandboxSession(id);
    if (session.status === CheckoutStatus.OPEN) {
      session.status = CheckoutStatus.CANCELED;
      await this.deps.ds.getRepository(CheckoutSession).update({ id, status: CheckoutStatus.OPEN }, { status: CheckoutStatus.CANCELED });
    }
    return session;
  }
}
