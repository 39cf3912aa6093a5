import { statSync } from 'node:fs';
import path from 'node:path';
import {
  DeployDocument,
  DeploymentDocument,
  AppLogsDocument,
  AppLogsQuery,
  AppLogStreamDocument,
  DeploymentLogsDocument,
  DeploymentLogsQuery,
  DeploymentLogBatchStreamDocument,
  DeploymentsDocument,
  DeploymentStatus,
  DeploymentStatusDocument,
  DeploymentStatusSubscription,
  LogType,
} from '../../../client/generated';
import { ENV_NAME_RULE, isEnvName } from '../../../client/env-names';
import { HatchApi } from '../api';
import { Command, Ctx, OptionValues, str, strings, UsageError, wholeNumber } from '../command';
import { CommandFailed, ExitCode } from '../exit-codes';
import { bytes, json, lower, Spinner, status, table } from '../output';
import { packToTempFile } from '../pack';

interface Line {
  seq: number;
  timestamp: string;
  type: LogType;
  message: string;
}

function parseEnv(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0 || !isEnvName(key)) throw new UsageError(`--env takes KEY=VALUE where KEY ${ENV_NAME_RULE}, got "${pair}"`);
    env[key] = pair.slice(eq + 1);
  }
  return env;
}

function logType(value: string | undefined): LogType | null {
  if (value === undefined) return null;
  const v = value.toUpperCase();
  if (v !== 'BUILD' && v !== 'RUNTIME') throw new UsageError(`--type must be build or runtime, got "${value}"`);
  return v;
}

function deploymentStatus(value: string | undefined): DeploymentStatus | null {
  if (value === undefined) return null;
  const v = value.toUpperCase();
  if (v !== 'BUILDING' && v !== 'LIVE' && v !== 'FAILED') throw new UsageError(`--status must be building, live or failed, got "${value}"`);
  return v;
}

function since(value: string | undefined, flag = '--since'): string | null {
  if (value === undefined) return null;
  if (Number.isNaN(Date.parse(value))) throw new UsageError(`${flag} must be an ISO 8601 date-time, e.g. 2026-01-15T12:00:00Z, got "${value}"`);
  return value;
}

function formatLine(ctx: Ctx, l: Line, deployment?: string): string {
  if (ctx.json) return JSON.stringify(l);
  const type = lower(l.type)!.padEnd(7);
  const from = deployment ? `${ctx.c.dim(deployment)} ` : '';
  return `${ctx.c.dim(l.timestamp)} ${from}${l.type === 'BUILD' ? ctx.c.cyan(type) : ctx.c.magenta(type)} ${l.message}`;
}

/** Says on stderr that retention removed the log's oldest lines (it starts at the oldest kept). */
function removedNotice(ctx: Ctx, before: string | null | undefined): void {
  if (before) ctx.err(ctx.ce.yellow(`hatch: lines written before ${before} were removed (log retention); the log starts at the oldest line kept\n`));
}

/**
 * An egg's logs (`hatch logs --app`): a page read (the tail, or every page after --since), then
 * with -f the egg's stream. Printed lines are remembered per deployment, so a reconnect, which
 * replays from the same start, prints nothing twice.
 */
async function appLogs(
  ctx: Ctx,
  app: string,
  o: { type: LogType | null; since: string | null; until: string | null; tail: number | null; q: string | null; follow: boolean },
): Promise<void> {
  const api = ctx.api();
  const printed = new Map<string, number>();
  const print = (l: AppLogsQuery['app']['logs']['nodes'][number]) => {
    if ((printed.get(l.deploymentId) ?? 0) >= l.seq) return;
    printed.set(l.deploymentId, l.seq);
    ctx.out(formatLine(ctx, l, l.deploymentId) + '\n');
  };
  // The stream takes no type or until: both go into the filter it applies.
  const q = [o.q, o.type ? `@type:${o.type.toLowerCase()}` : null].filter(Boolean).join(' ') || null;
  let since = o.since;
  if (o.tail !== null) {
    const page: AppLogsQuery = await api.request(AppLogsDocument, { app, type: o.type, since: o.since, until: o.until, tail: o.tail, q: o.q });
    page.app.logs.nodes.forEach(print);
    const first = page.app.logs.nodes[0];
    // Follow from the tail's first line: what it printed is remembered, what came since is not lost.
    if (first) since = new Date(Date.parse(first.timestamp) - 1).toISOString();
  } else if (!o.follow) {
    let after: string | null = null;
    for (;;) {
      const page: AppLogsQuery = await api.request(AppLogsDocument, { app, type: o.type, since: o.since, until: o.until, q: o.q, first: 500, after });
      page.app.logs.nodes.forEach(print);
      const { hasNextPage, endCursor } = page.app.logs.pageInfo;
      if (!hasNextPage || !endCursor) return;
      after = endCursor;
    }
  }
  if (!o.follow) return;
  await api.stream(AppLogStreamDocument, { app, since, q }, { pick: (data) => data.appLogs, onItem: print, onNotice: notice(ctx) });
  notice(ctx)(`the stream of ${app} ended`);
}

/** What a deploy builds: a folder to upload, the egg's newest source, or an image. */
type What = { kind: 'folder'; dir: string; shown: string } | { kind: 'latest' } | { kind: 'image'; image: string };

function whatToDeploy(options: OptionValues): What {
  const dir = str(options, 'dir');
  const image = str(options, 'image');
  const noSource = options['no-source'] === true;
  if ([dir !== undefined, image !== undefined, noSource].filter(Boolean).length > 1) {
    throw new UsageError('--dir, --no-source and --image do not go together: upload a folder, rebuild the last upload, or run an image');
  }
  if (noSource) return { kind: 'latest' };
  if (image !== undefined) return { kind: 'image', image };
  const shown = dir ?? '.';
  let isDir: boolean;
  try {
    isDir = statSync(shown).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(`--dir ${shown}: ${code === 'ENOENT' || code === 'ENOTDIR' ? 'no such folder' : (err as Error).message}`);
  }
  if (!isDir) throw new UsageError(`--dir ${shown} is not a folder`);
  return { kind: 'folder', dir: path.resolve(shown), shown };
}

/**
 * Packs the folder (pack.ts) into a temporary file and uploads it, with progress on a terminal's
 * stderr, and says what it uploaded on `say` (none with --json); returns the source id. The
 * temporary file is removed whatever happens.
 */
async function uploadFolder(ctx: Ctx, api: HatchApi, app: string, what: { dir: string; shown: string }, say: (text: string) => void): Promise<string> {
  const spinner = new Spinner(ctx.stderrIsTTY && !ctx.json, ctx.ce);
  spinner.start(`Packing ${what.shown}`);
  let packed: Awaited<ReturnType<typeof packToTempFile>> | null = null;
  try {
    packed = await packToTempFile(what.dir, (n) => spinner.update(`Packing ${what.shown}: ${n} entries`));
    const size = bytes(packed.bytes);
    let shown = -1;
    let drawn = 0;
    const { source, created } = await api.uploadSource(app, packed.file, packed.bytes, {
      onProgress: (sent, total) => {
        const pct = total === 0 ? 100 : Math.floor((sent * 100) / total);
        // Every percent would be too many redraws for a fast link; the first and last always show.
        if (pct === shown || (pct !== 0 && pct !== 100 && Date.now() - drawn < 100)) return;
        shown = pct;
        drawn = Date.now();
        spinner.show(`Uploading ${size}… ${pct}%`);
      },
      onNotice: (m) => spinner.print(process.stderr, ctx.ce.yellow(`hatch: ${m}`)),
    });
    spinner.stop();
    const files = packed.entries.filter((e) => e.type !== 'directory').length;
    if (!ctx.json) say(`Uploaded ${files} ${files === 1 ? 'file' : 'files'}, ${size} (${source.id}${created ? '' : ', already uploaded'})\n`);
    return source.id;
  } finally {
    spinner.stop();
    packed?.remove();
  }
}

const notice = (ctx: Ctx) => (message: string) => ctx.err(ctx.ce.yellow(`hatch: ${message}`) + '\n');

export const deployCommands: Command[] = [
  {
    path: ['deploy'],
    args: ['<app>'],
    summary: 'upload a folder, deploy it and stream its build until it is live or failed',
    help:
      'Packs the folder (--dir, else the current one) into a .tar.gz and uploads it as a source of\n' +
      'the egg, with progress on a terminal; deploys that source, streams the build log over\n' +
      'graphql-ws (reconnecting if the connection drops) and exits 0 when the deployment is live, 1\n' +
      'when it failed or the upload was refused (with the reason). The same folder again uploads\n' +
      'the same source.\n' +
      '\n' +
      'What is packed: everything in the folder except .git and what its ignore files exclude: the\n' +
      '.gitignore files (root and nested, as git reads them) and a .hatchignore at the root, same\n' +
      'syntax, read last: it excludes more, or re-includes with `!` (`!dist/`). Nothing else is\n' +
      'skipped, not even node_modules, unless an ignore file says so. Symbolic links are packed as\n' +
      'links if they stay inside the folder; any other stops the deploy before the upload.\n' +
      '\n' +
      'With --json, build lines go to stderr and stdout gets the final deployment.\n' +
      '\n' +
      'With --no-wait it returns once the deployment is created (after the upload), exit 0, and\n' +
      'prints only its id on stdout (with --json the deployment, status building); follow the\n' +
      'build with `hatch logs <id> -f --type build`.',
    options: {
      env: { type: 'string', multiple: true, value: '<KEY=VALUE>', description: 'an environment variable; repeat for more' },
      dir: { type: 'string', value: '<path>', description: 'the folder to upload (default: the current one)' },
      'no-source': { type: 'boolean', description: 'upload nothing: build the egg’s newest uploaded source again' },
      image: { type: 'string', value: '<ref>', description: 'run this image (e.g. nginx:1.27) instead of building a source; uploads nothing' },
      'no-wait': { type: 'boolean', description: 'return once the deployment is created: print its id, stream nothing' },
    },
    async run(ctx, [app], options) {
      const api = ctx.api();
      const env = parseEnv(strings(options, 'env'));
      const what = whatToDeploy(options);
      const wait = options['no-wait'] !== true;
      // Without waiting, stdout is the id alone (`id=$(hatch deploy my-egg --no-wait)`): the rest goes to stderr.
      const source = what.kind === 'folder' ? await uploadFolder(ctx, api, app, what, (text) => (wait ? ctx.out(text) : ctx.err(text))) : undefined;
      const image = what.kind === 'image' ? what.image : undefined;
      const { deploy: d } = await api.request(DeployDocument, { input: { project: app, env, source, image } });
      if (!wait) {
        if (ctx.json) return ctx.out(json(d));
        ctx.err(`Deploying ${ctx.ce.bold(app)}: ${d.id}; follow the build with \`hatch logs ${d.id} -f --type build\`\n`);
        return ctx.out(`${d.id}\n`);
      }
      const spinner = new Spinner(ctx.stderrIsTTY && !ctx.json, ctx.ce);
      const human = ctx.json ? process.stderr : process.stdout;
      spinner.print(human, `Deploying ${ctx.c.bold(app)}: ${d.id}`);
      spinner.start(`Building ${app}`);
      let final: DeploymentStatusSubscription['deploymentStatus'] | null = null;
      try {
        await api.stream(
          DeploymentLogBatchStreamDocument,
          { id: d.id, type: 'BUILD' },
          {
            pick: (data) => data.deploymentLogBatches,
            seq: (l) => l.seq,
            onItem: (l) => {
              spinner.print(human, l.message);
              spinner.update(`Building ${app}: ${l.message}`);
            },
            onNotice: (m) => spinner.print(process.stderr, ctx.ce.yellow(`hatch: ${m}`)),
          },
        );
        // The build stream ends with the build; the status stream says how it ended.
        await api.stream(
          DeploymentStatusDocument,
          { id: d.id },
          {
            pick: (data) => data.deploymentStatus,
            onItem: (s) => (final = s),
            until: (s) => s.status !== 'BUILDING',
            onNotice: (m) => spinner.print(process.stderr, ctx.ce.yellow(`hatch: ${m}`)),
          },
        );
      } finally {
        spinner.stop();
      }
      const outcome = final as DeploymentStatusSubscription['deploymentStatus'] | null;
      if (!outcome || outcome.status === 'BUILDING') {
        const message = `deployment ${d.id} was deleted before it finished`;
        if (!ctx.json) ctx.err(`${ctx.ce.red('error:')} ${message}\n`);
        throw new CommandFailed('DEPLOYMENT_DELETED', message);
      }
      if (ctx.json) ctx.out(json((await api.request(DeploymentDocument, { id: d.id })).deployment));
      if (outcome.status === 'LIVE') {
        if (!ctx.json) ctx.out(`${ctx.c.green('✔ live')} ${d.url}\n`);
        return ExitCode.OK;
      }
      const reason = `${d.id}: ${outcome.failureReason ?? 'the build failed'}`;
      if (!ctx.json) ctx.err(`${ctx.ce.red('✖ failed')} ${reason}\n`);
      throw new CommandFailed('DEPLOYMENT_FAILED', `deployment ${reason}`);
    },
  },
  {
    path: ['deployments'],
    args: [],
    summary: 'list deployments, newest first',
    options: {
      app: { type: 'string', value: '<slug>', description: 'only this egg’s' },
      status: { type: 'string', value: '<status>', description: 'only building, live or failed ones' },
      limit: { type: 'string', value: '<n>', description: 'how many, 1 to 100 (default 20)' },
    },
    async run(ctx, _args, options) {
      const limit = str(options, 'limit');
      const { deployments } = await ctx.api().request(DeploymentsDocument, {
        project: str(options, 'app') ?? null,
        status: deploymentStatus(str(options, 'status')),
        first: limit === undefined ? 20 : wholeNumber(limit, '--limit'),
      });
      const rows = deployments.nodes;
      if (ctx.json) return ctx.out(json(rows));
      if (rows.length === 0) return ctx.out('No deployments.\n');
      ctx.out(
        table(
          ctx.c,
          ['ID', 'APP', 'STATUS', 'URL', 'CREATED'],
          rows.map((d) => [d.id, d.app.slug, status(ctx.c, d.status), d.url, d.createdAt]),
        ),
      );
    },
  },
  {
    path: ['logs'],
    args: ['[deployment]'],
    summary: 'print a deployment’s or an egg’s log lines, oldest first; -f follows new ones',
    help:
      'Give a deployment (as the argument or --deployment) or an egg (--app: the lines of all its\n' +
      'deployments, interleaved by time; without --since or --tail the last 100). With -f the stream\n' +
      'stays open over graphql-ws (an egg’s follows its live deployment across redeploys); after a\n' +
      'dropped connection it reconnects and resumes, printing no line twice and skipping none. A\n' +
      '`--type build` stream of a deployment ends with the build. --tail N prints only the last N\n' +
      'lines (then follows, with -f). -q filters stored and followed lines alike. With --json each\n' +
      'line is one JSON object (seq, timestamp, type, message; an egg’s also deploymentId, stream).',
    options: {
      app: { type: 'string', value: '<slug>', description: 'an egg’s logs, across its deployments' },
      deployment: { type: 'string', value: '<id>', description: 'a deployment’s logs (or give it as the argument)' },
      type: { type: 'string', value: '<build|runtime>', description: 'only lines of this type' },
      since: { type: 'string', value: '<ISO>', description: 'only lines written after this moment' },
      until: { type: 'string', value: '<ISO>', description: 'only lines written before this moment (not with -f)' },
      tail: { type: 'string', value: '<n>', description: 'only the last n lines (1 to 1000; an egg’s 1 to 500)' },
      filter: {
        type: 'string',
        short: 'q',
        value: '<filter>',
        description: 'only matching lines: words, "phrases", -word, @type:build, @stream:stderr, @deployment:<id> (with --app)',
      },
      follow: { type: 'boolean', short: 'f', description: 'keep streaming new lines' },
    },
    async run(ctx, [positional], options) {
      const app = str(options, 'app');
      const flagged = str(options, 'deployment');
      if (positional && flagged && positional !== flagged) throw new UsageError('give the deployment once: as the argument or with --deployment');
      const id = positional ?? flagged;
      if (app && id) throw new UsageError('give a deployment or --app, not both');
      if (!app && !id) throw new UsageError('give a deployment (hatch logs <deployment>) or an egg (--app <slug>)');
      const type = logType(str(options, 'type'));
      const sinceAt = since(str(options, 'since'));
      const until = since(str(options, 'until'), '--until');
      const tailOption = str(options, 'tail');
      let tail = tailOption === undefined ? null : wholeNumber(tailOption, '--tail');
      if (until !== null && options.follow) throw new UsageError('--until ends the lines before now: it cannot be used with -f');
      const q = str(options, 'filter') ?? null;
      if (app) {
        // An egg's whole history can be long: the last 100 lines unless told where to start.
        if (tail === null && sinceAt === null) tail = 100;
        return appLogs(ctx, app, { type, since: sinceAt, until, tail, q, follow: options.follow === true });
      }
      const api = ctx.api();
      const vars = { id: id, type, since: sinceAt, q };
      let lastSeq = 0;
      if (tail !== null) {
        const page: DeploymentLogsQuery = await api.request(DeploymentLogsDocument, { ...vars, until, tail });
        removedNotice(ctx, page.deployment.logsRemovedBefore);
        for (const l of page.deployment.logs.nodes) ctx.out(formatLine(ctx, l) + '\n');
        const last = page.deployment.logs.nodes.at(-1);
        if (!options.follow) return;
        // Follow from the tail's last line: a millisecond before it, and nothing already printed.
        if (last) {
          lastSeq = last.seq;
          vars.since = new Date(Date.parse(last.timestamp) - 1).toISOString();
        }
      }
      if (options.follow) {
        await api.stream(DeploymentLogBatchStreamDocument, vars, {
          pick: (data) => data.deploymentLogBatches,
          seq: (l) => l.seq,
          onItem: (l) => {
            if (l.seq > lastSeq) ctx.out(formatLine(ctx, l) + '\n');
          },
          onNotice: notice(ctx),
        });
        // Only a build stream ends by itself; any other ends when the deployment is deleted.
        if (vars.type !== 'BUILD') notice(ctx)(`deployment ${id} was deleted; the stream ended`);
        return;
      }
      let after: string | null = null;
      for (;;) {
        const page: DeploymentLogsQuery = await api.request(DeploymentLogsDocument, { ...vars, until, first: 1000, after });
        if (after === null) removedNotice(ctx, page.deployment.logsRemovedBefore);
        for (const l of page.deployment.logs.nodes) ctx.out(formatLine(ctx, l) + '\n');
        const { hasNextPage, endCursor } = page.deployment.logs.pageInfo;
        if (!hasNextPage || !endCursor) return;
        after = endCursor;
      }
    },
  },
];
