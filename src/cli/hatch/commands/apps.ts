import {
  AppResourcesDocument,
  AppsDocument,
  CreateAppDocument,
  PreviewsDocument,
  UpdateReplicasDocument,
  UpdateResourcesDocument,
  VolumeDocument,
} from '../../../client/generated';
import { allPages, Command, Ctx, wholeNumber } from '../command';
import { details, json, lower, status, table } from '../output';

async function listApps(ctx: Ctx): Promise<void> {
  const api = ctx.api();
  const apps = await allPages(async (after) => (await api.request(AppsDocument, { first: 100, after })).apps);
  if (ctx.json) return ctx.out(json(apps));
  if (apps.length === 0) return ctx.out('No eggs yet. Create one with `hatch apps create <slug>`.\n');
  ctx.out(
    table(
      ctx.c,
      ['SLUG', 'TIER', 'URL', 'OWNER', 'CREATED'],
      apps.map((a) => [a.slug, lower(a.tier), a.url, a.owner.email, a.createdAt]),
    ),
  );
}

function resourcesTable(
  ctx: Ctx,
  r: { slug: string; memoryMb: number | null; effectiveMemoryMb: number; capMb: number; effectiveReplicas: number; replicasCap: number },
): string {
  return table(
    ctx.c,
    ['SLUG', 'MEMORY MB', 'EFFECTIVE MB', 'CAP MB', 'REPLICAS', 'REPLICAS CAP'],
    [[r.slug, r.memoryMb ?? 'default', r.effectiveMemoryMb, r.capMb, r.effectiveReplicas, r.replicasCap]],
  );
}

export const appCommands: Command[] = [
  { path: ['apps'], args: [], summary: 'list the eggs you own or collaborate on', run: listApps },
  { path: ['apps', 'list'], args: [], summary: 'list the eggs you own or collaborate on', run: listApps },
  {
    path: ['apps', 'create'],
    args: ['<slug>'],
    summary: 'create an egg',
    help: 'The slug is 3–40 lower-case letters, digits and dashes, starting with a letter.',
    async run(ctx, [slug]) {
      const { createApp: app } = await ctx.api().request(CreateAppDocument, { slug });
      if (ctx.json) return ctx.out(json(app));
      ctx.out(`Created ${ctx.c.bold(app.slug)} (${app.id}): ${app.url}\n`);
    },
  },
  {
    path: ['resources'],
    args: ['<app>'],
    summary: 'show an egg’s memory and replicas: override, effective value and cap',
    async run(ctx, [slug]) {
      const { app } = await ctx.api().request(AppResourcesDocument, { slug });
      if (ctx.json) return ctx.out(json(app));
      ctx.out(resourcesTable(ctx, app));
    },
  },
  {
    path: ['resources', 'set'],
    args: ['<app>', '<mb>'],
    summary: 'set an egg’s memory in MB (owner only; `default` clears the override)',
    help: 'Applies from the next deploy, restart or wake; the running deployment keeps its memory.',
    async run(ctx, [slug, mb]) {
      const memoryMb = mb === 'default' ? null : wholeNumber(mb, 'mb');
      const { updateResources: r } = await ctx.api().request(UpdateResourcesDocument, { app: slug, memoryMb });
      if (ctx.json) return ctx.out(json(r));
      ctx.out(resourcesTable(ctx, r));
    },
  },
  {
    path: ['resources', 'replicas'],
    args: ['<app>', '<n>'],
    summary: 'set how many replicas the egg runs (owner only; `default` clears the override: one)',
    help: 'Applies from the next deploy or restart; the router balances requests across them. Free eggs run one, always-on eggs up to 3 unless the operator says otherwise.',
    async run(ctx, [slug, n]) {
      const replicas = n === 'default' ? null : wholeNumber(n, 'n');
      const { updateResources: r } = await ctx.api().request(UpdateReplicasDocument, { app: slug, replicas });
      if (ctx.json) return ctx.out(json(r));
      ctx.out(resourcesTable(ctx, r));
    },
  },
  {
    path: ['previews'],
    args: ['<app>'],
    summary: 'list an egg’s preview environments',
    async run(ctx, [app]) {
      const { previews } = await ctx.api().request(PreviewsDocument, { app });
      if (ctx.json) return ctx.out(json(previews));
      if (previews.length === 0) return ctx.out(`${app} has no previews.\n`);
      ctx.out(
        table(
          ctx.c,
          ['PR', 'SLUG', 'STATUS', 'URL', 'EXPIRES'],
          previews.map((p) => [p.prNumber, p.slug, status(ctx.c, p.status), p.url, p.expiresAt]),
        ),
      );
    },
  },
  {
    path: ['volume'],
    args: ['<app>'],
    summary: 'show an egg’s persistent volume',
    async run(ctx, [app]) {
      const { volume: v } = await ctx.api().request(VolumeDocument, { app });
      if (ctx.json) return ctx.out(json(v));
      ctx.out(
        details(ctx.c, [
          ['size', `${v.sizeMb} MB`],
          ['used', `${v.usedMb} MB${v.overQuota ? ' ' + ctx.c.red('(over quota)') : ''}`],
          ['status', status(ctx.c, v.status)],
          ['mount', v.mount],
          ['created', v.createdAt],
          ['erase at', v.eraseAt],
        ]),
      );
    },
  },
];
