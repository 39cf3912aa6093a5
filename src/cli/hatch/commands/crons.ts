import { CancelCronRunDocument, CreateCronDocument, CronRunsDocument, CronsDocument, DeleteCronDocument } from '../../../client/generated';
import { allPages, Command, Ctx, str, wholeNumber } from '../command';
import { json, status, table } from '../output';

async function listCrons(ctx: Ctx, [app]: string[]): Promise<void> {
  const api = ctx.api();
  const crons = await allPages(async (after) => (await api.request(CronsDocument, { app, first: 100, after })).crons);
  if (ctx.json) return ctx.out(json(crons));
  if (crons.length === 0) return ctx.out(`${app} has no crons.\n`);
  ctx.out(
    table(
      ctx.c,
      ['ID', 'SCHEDULE', 'COMMAND', 'ENABLED', 'NEXT RUN', 'LAST RUN'],
      crons.map((c) => [
        c.id,
        c.schedule,
        c.command,
        c.enabled ? 'yes' : 'no',
        c.nextRunAt,
        c.lastRun ? `${status(ctx.c, c.lastRun.status)} ${c.lastRun.scheduledAt}` : null,
      ]),
    ),
  );
}

const LIST_HELP = 'An egg called `list`, `create`, `delete` or `runs` is listed with `hatch crons list <app>`.';

export const cronCommands: Command[] = [
  { path: ['crons'], args: ['<app>'], summary: 'list an egg’s crons', help: LIST_HELP, run: listCrons },
  { path: ['crons', 'list'], args: ['<app>'], summary: 'list an egg’s crons', run: listCrons },
  {
    path: ['crons', 'create'],
    args: ['<app>', '<schedule>', '<command...>'],
    summary: 'schedule a command (5-field cron expression, UTC)',
    help:
      'Quote the schedule: hatch crons create my-egg "*/15 * * * *" npm run cleanup\n' +
      'Words after the schedule form the command; put `--` before a command that has options.',
    async run(ctx, [app, schedule, ...command]) {
      const { createCron: c } = await ctx.api().request(CreateCronDocument, { app, schedule, command: command.join(' ') });
      if (ctx.json) return ctx.out(json(c));
      ctx.out(`Created cron ${ctx.c.bold(c.id)}: \`${c.command}\` at "${c.schedule}"; next run ${c.nextRunAt ?? '-'}\n`);
    },
  },
  {
    path: ['crons', 'delete'],
    args: ['<app>', '<id>'],
    summary: 'delete a cron; it runs no more',
    async run(ctx, [app, id]) {
      const { deleteCron } = await ctx.api().request(DeleteCronDocument, { app, id });
      if (ctx.json) return ctx.out(json({ deleted: deleteCron }));
      ctx.out(`Deleted cron ${deleteCron}\n`);
    },
  },
  {
    path: ['crons', 'cancel'],
    args: ['<app>', '<id>', '<run>'],
    summary: 'stop a running run of a cron; it ends failed, reason cancelled',
    async run(ctx, [app, id, run]) {
      const { cancelCronRun: r } = await ctx.api().request(CancelCronRunDocument, { app, id, run });
      if (ctx.json) return ctx.out(json(r));
      ctx.out(`Cancelled run ${ctx.c.bold(r.id)} of cron ${id}: ${r.failureReason ?? r.status.toLowerCase()}\n`);
    },
  },
  {
    path: ['crons', 'runs'],
    args: ['<app>', '<id>'],
    summary: 'list a cron’s runs, most recent first',
    options: { limit: { type: 'string', value: '<n>', description: 'how many, 1 to 100 (default 20)' } },
    async run(ctx, [app, id], options) {
      const limit = str(options, 'limit');
      const { cronRuns } = await ctx.api().request(CronRunsDocument, { app, id, first: limit === undefined ? 20 : wholeNumber(limit, '--limit') });
      const runs = cronRuns.nodes;
      if (ctx.json) return ctx.out(json(runs));
      if (runs.length === 0) return ctx.out(`Cron ${id} has not run yet.\n`);
      ctx.out(
        table(
          ctx.c,
          ['ID', 'STATUS', 'EXIT', 'SCHEDULED', 'STARTED', 'FINISHED'],
          runs.map((r) => [r.id, status(ctx.c, r.status), r.exitCode, r.scheduledAt + (r.manual ? ' (manual)' : ''), r.startedAt, r.finishedAt]),
        ),
      );
    },
  },
];
