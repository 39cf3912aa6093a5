import { FastifyInstance } from 'fastify';
import { DomainError } from '../errors';
import { CheckoutStatus } from '../modules/billing/billing.entity';
import { BillingService } from '../modules/billing/billing.service';

/** The sandbox's own call to the payment webhook, on this same server. */
const SELF_CALL_TIMEOUT_MS = 10_000;

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · Hatchery</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
.card{border:1px solid #ddd;border-radius:8px;padding:1.5rem}button{font:inherit;padding:.5rem 1.25rem;margin-right:.5rem;border-radius:6px;border:1px solid #888;cursor:pointer}
button.pay{background:#1a7f37;color:#fff;border-color:#1a7f37}.muted{color:#666;font-size:.9rem}</style></head>
<body><div class="card">${body}</div></body></html>`;
}

/**
 * The payment webhook (authenticated by the provider's signature, over the raw body) and the
 * sandbox provider's hosted checkout page. Paying there posts a signed event to the webhook over
 * HTTP, the same way Stripe would, so there is one fulfilment path.
 */
export async function registerBilling(app: FastifyInstance, deps: { billing: BillingService; selfUrl: () => string }): Promise<void> {
  await app.register((scope, _opts, done) => {
    // Signatures are over the exact bytes, so this route keeps the body raw.
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post('/billing/webhooks/stripe', async (req, reply) => {
      // A refused signature goes to the server's error handler (400 problem).
      const signature = req.headers['stripe-signature'];
      const result = await deps.billing.handleWebhook(req.body as Buffer, typeof signature === 'string' ? signature : undefined);
      return reply.code(200).send({ received: true, credited: result.credited });
    });
    done();
  });

  await app.register((scope, _opts, done) => {
    // The page's buttons are plain HTML forms.
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    const html = (reply: import('fastify').FastifyReply, status: number, title: string, body: string) =>
      reply.code(status).type('text/html; charset=utf-8').send(page(title, body));

    scope.get<{ Params: { id: string } }>('/billing/sandbox/checkout/:id', async (req, reply) => {
      const session = await deps.billing.sandboxSession(req.params.id).catch(() => null);
      if (!session) return html(reply, 404, 'Not found', '<h1>Checkout not found</h1>');
      const id = esc(session.id);
      if (session.status !== CheckoutStatus.OPEN) return html(reply, 200, 'Checkout', `<h1>This checkout is ${esc(session.status)}</h1>`);
      return html(
        reply,
        200,
        'Energy pack',
        `<h1>Energy pack</h1><p>1,000 minutes of energy that never expire.</p>
<p class="muted">Sandbox payment: no card is charged. Session <code>${id}</code>.</p>
<form method="post" action="/billing/sandbox/checkout/${id}/pay" style="display:inline"><button class="pay" type="submit" id="pay">Pay</button></form>
<form method="post" action="/billing/sandbox/checkout/${id}/cancel" style="display:inline"><button type="submit" id="cancel">Cancel</button></form>`,
      );
    });

    scope.post<{ Params: { id: string } }>('/billing/sandbox/checkout/:id/pay', async (req, reply) => {
      let event;
      try {
        event = await deps.billing.sandboxPayment(req.params.id);
      } catch (err) {
        if (err instanceof DomainError) return html(reply, err.code === 'NOT_FOUND' ? 404 : 422, 'Payment', `<h1>${esc(err.message)}</h1>`);
        throw err;
      }
      const res = await fetch(`${deps.selfUrl()}/billing/webhooks/stripe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
        body: event.payload,
        signal: AbortSignal.timeout(SELF_CALL_TIMEOUT_MS),
      }).catch(() => null);
      if (!res?.ok) return html(reply, 502, 'Payment', '<h1>Payment could not be confirmed</h1>');
      return html(reply, 200, 'Paid', '<h1 id="result">Payment received</h1><p>1,000 minutes were added to your energy pack.</p>');
    });

    scope.post<{ Params: { id: string } }>('/billing/sandbox/checkout/:id/cancel', async (req, reply) => {
      const session = await deps.billing.sandboxCancel(req.params.id).catch(() => null);
      if (!session) return html(reply, 404, 'Not found', '<h1>Checkout not found</h1>');
      if (session.status === CheckoutStatus.PAID)
        return html(reply, 409, 'Checkout', '<h1 id="result">This checkout is already paid</h1><p>It cannot be canceled.</p>');
      return html(reply, 200, 'Canceled', '<h1 id="result">Checkout canceled</h1><p>Nothing was charged.</p>');
    });
    done();
  });
}
