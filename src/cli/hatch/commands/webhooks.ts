import { CreateWebhookDocument, DeleteWebhookDocument, TestWebhookDocument, WebhookDeliveriesDocument, WebhooksDocument } from '../../../client/generated';
import { Command, Ctx, strings } from '../command';
import { CommandFailed, ExitCode } from '../exit-codes';
import { details, json, status, table } from '../output';

async function listWebhooks(ctx: Ctx, [app]: string[]): Promise<void> {
  const { webhooks } = await ctx.api().request(WebhooksDocument, { app });
  if (ctx.json) return ctx.out(json(webhooks));
  if (webhooks.length === 0) return ctx.out(`${app} has no webhooks.\n`);
  ctx.out(
    table(
      ctx.c,
      ['ID', 'URL', 'EVENTS', 'ACTIVE', 'LAST DELIVERY'],
      webhooks.map((w) => [
        w.id,
        w.url,
        w.events.join(','),
        w.active ? 'yes' : ctx.c.red(`no${w.disabledReason ? ` (${w.disabledReason})` : ''}`),
        w.lastDelivery
          ? `${status(ctx.c, w.lastDelivery.status)}${w.lastDelivery.responseStatus ? ` ${w.lastDelivery.responseStatus}` : ''} ${w.lastDelivery.lastAttemptAt ?? w.lastDelivery.createdAt}`
          : null,
      ]),
    ),
  );
}

const LIST_HELP = 'An egg called `list`, `create`, `delete` or `test` is listed with `hatch webhooks list <app>`.';

export const webhookCommands: Command[] = [
  { path: ['webhooks'], args: ['<app>'], summary: 'list an egg’s webhooks', help: LIST_HELP, run: listWebhooks },
  { path: ['webhooks', 'list'], args: ['<app>'], summary: 'list an egg’s webhooks', run: listWebhooks },
  {
    path: ['webhooks', 'create'],
    args: ['<app>', '<url>'],
    summary: 'register an https endpoint for deploy events; prints its signing secret once',
    options: {
      events: { type: 'string', multiple: true, value: '<event>', description: 'events to send (default: deploy); repeat or comma-separate' },
    },
    async run(ctx, [app, url], options) {
      const given = strings(options, 'events')
        .flatMap((e) => e.split(','))
        .map((e) => e.trim())
        .filter(Boolean);
      const events = given.length ? given : ['deploy'];
      const { createWebhook } = await ctx.api().request(CreateWebhookDocument, { app, url, events });
      if (ctx.json) return ctx.out(json(createWebhook));
      const w = createWebhook.webhook;
      ctx.out(`Created webhook ${ctx.c.bold(w.id)} for ${w.url} (${w.events.join(',')})\n`);
      ctx.out(`Signing secret (shown only now): ${createWebhook.secret}\n`);
    },
  },
  {
    path: ['webhooks', 'delete'],
    args: ['<app>', '<id>'],
    summary: 'delete a webhook',
    async run(ctx, [app, id]) {
      const { deleteWebhook } = await ctx.api().request(DeleteWebhookDocument, { app, id });
      if (ctx.json) return ctx.out(json({ deleted: deleteWebhook }));
      ctx.out(`Deleted webhook ${deleteWebhook}\n`);
    },
  },
  {
    path: ['webhooks', 'test'],
    args: ['<app>', '<id>'],
    summary: 'send a signed ping now; exits 1 unless the endpoint answered 2xx',
    async run(ctx, [app, id]) {
      const api = ctx.api();
      const { testWebhook: r } = await api.request(TestWebhookDocument, { app, id });
      // Why it failed (DNS, TLS, timeout…) is on the delivery record.
      const failure =
        r.status === 'SUCCEEDED'
          ? null
          : (await api.request(WebhookDeliveriesDocument, { app, first: 20 })).webhooks
              .find((w) => w.id === id)
              ?.deliveries.nodes.find((d) => d.id === r.deliveryId)?.error;
      if (ctx.json) ctx.out(json(r));
      else {
        ctx.out(
          details(ctx.c, [
            ['delivery', r.deliveryId],
            ['status', status(ctx.c, r.status)],
            ['response', r.responseStatus ?? 'none'],
            ['duration', `${r.durationMs} ms`],
            ...(failure ? [['error', failure] as [string, string]] : []),
          ]),
        );
      }
      if (r.status === 'SUCCEEDED') return ExitCode.OK;
      const answer = r.responseStatus ? `answered ${r.responseStatus}` : `did not answer${failure ? ` (${failure})` : ''}`;
      throw new CommandFailed('PING_FAILED', `webhook ${id}: the endpoint ${answer}`);
    },
  },
];
