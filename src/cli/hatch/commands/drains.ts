import { CreateLogDrainDocument, DeleteLogDrainDocument, LogDrainFormat, LogDrainsDocument } from '../../../client/generated';
import { Command, Ctx, str, UsageError } from '../command';
import { json, lower, table } from '../output';

async function listDrains(ctx: Ctx, [app]: string[]): Promise<void> {
  const { logDrains } = await ctx.api().request(LogDrainsDocument, { app });
  if (ctx.json) return ctx.out(json(logDrains));
  if (logDrains.length === 0) return ctx.out(`${app} has no log drains.\n`);
  ctx.out(
    table(
      ctx.c,
      ['ID', 'URL', 'FORMAT', 'STATUS', 'LAST DELIVERED', 'LAST ERROR'],
      logDrains.map((d) => [
        d.id,
        d.url,
        lower(d.format),
        d.status === 'ACTIVE' ? 'active' : ctx.c.red(`disabled${d.disabledReason ? ` (${d.disabledReason})` : ''}`),
        d.lastDeliveredAt,
        d.lastError,
      ]),
    ),
  );
}

const FORMATS: Record<string, LogDrainFormat> = { ndjson: 'NDJSON', syslog: 'SYSLOG' };

const LIST_HELP = 'An egg called `list`, `create` or `delete` is listed with `hatch drains list <app>`.';

export const drainCommands: Command[] = [
  { path: ['drains'], args: ['<app>'], summary: 'list an egg’s log drains', help: LIST_HELP, run: listDrains },
  { path: ['drains', 'list'], args: ['<app>'], summary: 'list an egg’s log drains', run: listDrains },
  {
    path: ['drains', 'create'],
    args: ['<app>', '<url>'],
    summary: 'ship the egg’s log lines to https://… (NDJSON) or syslog+tls://host:port; prints the signing secret once',
    options: {
      format: { type: 'string', value: '<ndjson|syslog>', description: 'how lines are sent (default: from the URL’s scheme)' },
    },
    async run(ctx, [app, url], options) {
      const given = str(options, 'format');
      const format = given === undefined ? null : FORMATS[given.toLowerCase()];
      if (format === undefined) throw new UsageError(`--format must be ndjson or syslog, got "${given}"`);
      const { createLogDrain } = await ctx.api().request(CreateLogDrainDocument, { app, url, format });
      if (ctx.json) return ctx.out(json(createLogDrain));
      const d = createLogDrain.logDrain;
      ctx.out(`Created log drain ${ctx.c.bold(d.id)} for ${d.url} (${lower(d.format)})\n`);
      if (createLogDrain.secret) ctx.out(`Signing secret (shown only now): ${createLogDrain.secret}\n`);
    },
  },
  {
    path: ['drains', 'delete'],
    args: ['<app>', '<id>'],
    summary: 'delete a log drain',
    async run(ctx, [app, id]) {
      const { deleteLogDrain } = await ctx.api().request(DeleteLogDrainDocument, { app, id });
      if (ctx.json) return ctx.out(json({ deleted: deleteLogDrain }));
      ctx.out(`Deleted log drain ${deleteLogDrain}\n`);
    },
  },
];
