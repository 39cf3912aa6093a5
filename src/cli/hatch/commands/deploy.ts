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
import { TransportError } from '../api';
import { Command, Ctx, str, strings, UsageError, wholeNumber } from '../command';
import { json, lower, Spinner, status, table } from '../output';

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

function since(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (Number.isNaN(Date.parse(value))) throw new UsageError(`--since must be an ISO 8601 date-time, e.g. 2026-01-15T12:00:00Z, got "${value}"`);
  return value;
}

function formatLine(ctx: Ctx, l: Line): string {
  if (ctx.json) return JSON.stringify(l);
  const type = lower(l.type)!.padEnd(7);
  return `${ctx.c.dim(l.timestamp)} ${l.type === 'BUILD' ? ctx.c.cyan(type) : ctx.c.magenta(type)} ${l.message}`;
}

const notice = (ctx: Ctx) => (message: string) => ctx.err(ctx.ce.yellow(`hatch: ${message}`) + '\n');

export const deployCommands: Command[] = [
  {
    path: ['deploy'],
    args: ['<app>'],
    summary: 'deploy an egg and stream its build until it is live or failed',
    help:
      'Streams the build log over graphql-ws (reconnecting if the connection drops) and exits 0\n' +
      'when the deployment is live, 1 when it failed. With --json, build lines go to stderr and\n' +
      'stdout gets the final deployment.',
    options: {
      env: { type: 'string', multiple: true, value: '<KEY=VALUE>', description: 'an environment variable; repeat for more' },
    },
    async run(ctx, [app], options) {
      const api = ctx.api();
      const env = parseEnv(strings(options, 'env'));
      const { deploy: d } = await api.request(DeployDocument, { input: { project: app, env } });
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
      'with the build. With --json each line is one JSON object (seq, timestamp, type, message).',
    options: {
      type: { type: 'string', value: '<build|runtime>', description: 'only lines of this type' },
      since: { type: 'string', value: '<ISO>', description: 'only lines written after this moment' },
      follow: { type: 'boolean', short: 'f', description: 'keep streaming new lines' },
    },
    async run(ctx, [id], options) {
      const api = ctx.api();
      const vars = { id, type: logType(str(options, 'type')), since: since(str(options, 'since')) };
      if (options.follow) {
        await api.stream(DeploymentLogBatchStreamDocument, vars, {
          pick: (data) => data.deploymentLogBatches,
          seq: (l) => l.seq,
          onItem: (l) => ctx.out(formatLine(ctx, l) + '\n'),
          onNotice: notice(ctx),
        });
        // Only a build stream ends by itself; any other ends when the deployment is deleted.
        if (vars.type !== 'BUILD') notice(ctx)(`deployment ${id} was deleted; the stream ended`);
        return;
      }
      let after: string | null = null;
      for (;;) {
        const page: DeploymentLogsQuery = await api.request(DeploymentLogsDocument, { ...vars, first: 1000, after });
        for (const l of page.deployment.logs.nodes) ctx.out(formatLine(ctx, l) + '\n');
        const { hasNextPage, endCursor } = page.deployment.logs.pageInfo;
        if (!hasNextPage || !endCursor) return;
        after = endCursor;
      }
    },
  },
];
