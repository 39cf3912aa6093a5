import Stripe from 'stripe';

export interface CheckoutRequest {
  checkoutId: string;
  userId: string;
  successUrl: string;
  cancelUrl: string;
}

export interface ProviderSession {
  providerSessionId: string;
  url: string;
  expiresAt: Date;
}

/** The port to whoever takes the money. */
export interface PaymentProvider {
  readonly name: 'stripe' | 'sandbox';
  createSession(req: CheckoutRequest, now: Date): Promise<ProviderSession>;
}

/** A real Stripe Checkout Session for the configured price; the account rides in its metadata. */
export class StripeProvider implements PaymentProvider {
  readonly name = 'stripe';
  constructor(
    private readonly stripe: Stripe,
    private readonly priceId: string,
  ) {}

  async createSession(req: CheckoutRequest): Promise<ProviderSession> {
    const session = await this.stripe.checkout.sessions.create({
      mode: 'payment',
      line_items: [{ price: this.priceId, quantity: 1 }],
      success_url: req.successUrl,
      cancel_url: req.cancelUrl,
      client_reference_id: req.checkoutId,
      metadata: { checkout_id: req.checkoutId, user_id: req.userId },
    });
    if (!session.url) throw new Error(`Stripe returned checkout session ${session.id} without a URL`);
    return { providerSessionId: session.id, url: session.url, expiresAt: new Date(session.expires_at * 1000) };
  }
}

const SANDBOX_SESSION_MS = 24 * 3600 * 1000;

/**
 * The default provider: the gateway serves the hosted payment page itself, and paying there
 * sends a Stripe-format event, signed like Stripe's, to the same payment webhook.
 */
export class SandboxProvider implements PaymentProvider {
  readonly name = 'sandbox';
  constructor(private readonly baseUrl: () => string) {}

  createSession(req: CheckoutRequest, now: Date): Promise<ProviderSession> {
    return Promise.resolve({
      providerSessionId: req.checkoutId,
      url: `${this.baseUrl()}/billing/sandbox/checkout/${req.checkoutId}`,
      expiresAt: new Date(now.getTime() + SANDBOX_SESSION_MS),
    });
  }

  /** The event Stripe would send for a paid session, and its Stripe-Signature header. */
  static paidEvent(stripe: Stripe, secret: string, session: { providerSessionId: string; id: string; userId: string }, now: Date) {
    const payload = JSON.stringify({
      id: `evt_sandbox_${session.id}`,
      object: 'event',
      type: 'checkout.session.completed',
      created: Math.floor(now.getTime() / 1000),
      livemode: false,
      data: {
        object: {
          id: session.providerSessionId,
          object: 'checkout.session',
          mode: 'payment',
          status: 'complete',
          payment_status: 'paid',
          client_reference_id: session.id,
          metadata: { checkout_id: session.id, user_id: session.userId },
        },
      },
    });
    return { payload, signature: stripe.webhooks.generateTestHeaderString({ payload, secret }) };
  }
}
