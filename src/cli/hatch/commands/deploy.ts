import { statSync } from 'node:fs';
import path from 'node:path';
import {
  DeployDocument,
  DeploymentDocument,
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
import { HatchApi, TransportError } from '../api';
import { Command, Ctx, OptionValues, str, strings, UsageError, wholeNumber } from '../command';
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

function formatLine(ctx: Ctx, l: Line): string {
  if (ctx.json) return JSON.stringify(l);
  const type = lower(l.type)!.padEnd(7);
  return `${ctx.c.dim(l.timestamp)} ${l.type === 'BUILD' ? ctx.c.cyan(type) : ctx.c.magenta(type)} ${l.message}`;
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
 * stderr; returns the source id. The temporary file is removed whatever happens.
 */
async function uploadFolder(ctx: Ctx, api: HatchApi, app: string, what: { dir: string; shown: string }): Promise<string> {
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
    if (!ctx.json) ctx.out(`Uploaded ${files} ${files === 1 ? 'file' : 'files'}, ${size} (${source.id}${created ? '' : ', already uploaded'})\n`);
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
      'With --json, build lines go to stderr and stdout gets the final deployment.',
    options: {
      env: { type: 'string', multiple: true, value: '<KEY=VALUE>', description: 'an environment variable; repeat for more' },
      dir: { type: 'string', value: '<path>', description: 'the folder to upload (default: the current one)' },
      'no-source': { type: 'boolean', description: 'upload nothing: build the egg’s newest uploaded source again' },
      image: { type: 'string', value: '<ref>', description: 'run this image (e.g. nginx:1.27) instead of building a source; uploads nothing' },
    },
    async run(ctx, [app], options) {
      const api = ctx.api();
      const env = parseEnv(strings(options, 'env'));
      const what = whatToDeploy(options);
      const source = what.kind === 'folder' ? await uploadFolder(ctx, api, app, what) : undefined;
      const image = what.kind === 'image' ? what.image : undefined;
      const { deploy: d } = await api.request(DeployDocument, { input: { project: app, env, source, image } });
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
      if (!outcome || outcome.status === 'BUILDING') throw new TransportError(`deployment ${d.id} was deleted before it finished`);
      if (ctx.json) ctx.out(json((await api.request(DeploymentDocument, { id: d.id })).deployment));
      if (outcome.status === 'LIVE') {
        if (!ctx.json) ctx.out(`${ctx.c.green('✔ live')} ${d.url}\n`);
        return 0;
      }
      ctx.err(`${ctx.ce.red('✖ failed')} ${d.id}: ${outcome.failureReason ?? 'the build failed'}\n`);
      return 1;
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
    args: ['<deployment>'],
    summary: 'print a deployment’s log lines, oldest first; -f follows new ones',
    help:
      'With -f the stream stays open over graphql-ws; after a dropped connection it reconnects and\n' +
      'resumes where it was, printing no line twice and skipping none. A `--type build` stream ends\n' +
      'with the build. --tail N prints only the last N lines (then follows, with -f). With --json\n' +
      'each line is one JSON object (seq, timestamp, type, message).',
    options: {
      type: { type: 'string', value: '<build|runtime>', description: 'only lines of this type' },
      since: { type: 'string', value: '<ISO>', description: 'only lines written after this moment' },
      until: { type: 'string', value: '<ISO>', description: 'only lines written before this moment (not with -f)' },
      tail: { type: 'string', value: '<n>', description: 'only the last n lines (1 to 1000)' },
      filter: { type: 'string', short: 'q', value: '<filter>', description: 'only matching lines: words, "phrases", -word, @type:build (not with -f yet)' },
      follow: { type: 'boolean', short: 'f', description: 'keep streaming new lines' },
    },
    async run(ctx, [id], options) {
      const api = ctx.api();
      const vars = { id, type: logType(str(options, 'type')), since: since(str(options, 'since')) };
      const until = since(str(options, 'until'), '--until');
      const tailOption = str(options, 'tail');
      const tail = tailOption === undefined ? null : wholeNumber(tailOption, '--tail');
      if (until !== null && options.follow) throw new UsageError('--until ends the lines before now: it cannot be used with -f');
      const q = str(options, 'filter') ?? null;
      if (q !== null && options.follow) throw new UsageError('-q filters stored lines; it cannot be used with -f yet');
      let lastSeq = 0;
      if (tail !== null) {
        const page: DeploymentLogsQuery = await api.request(DeploymentLogsDocument, { ...vars, until, tail, q });
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
        const page: DeploymentLogsQuery = await api.request(DeploymentLogsDocument, { ...vars, until, q, first: 1000, after });
        for (const l of page.deployment.logs.nodes) ctx.out(formatLine(ctx, l) + '\n');
        const { hasNextPage, endCursor } = page.deployment.logs.pageInfo;
        if (!hasNextPage || !endCursor) return;
        after = endCursor;
      }
    },
  },
];
