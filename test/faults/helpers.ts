import { ChildProcess, spawn } from 'node:child_process';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { AddCollaboratorDocument, CreateApiTokenDocument, RunCronNowDocument } from '../../src/client/generated';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { gqlOk, rest, TEST_KEY, TestGateway } from '../support/gateway';
import { helloEgg, upload } from '../sources/helpers';

import { ROOT } from '../support/cli';

export { ROOT };

type Queryable = Pick<DataSource, 'query'>;

/** Every base table of the gateway's database: the public schema and pg-boss's. */
export async function allTables(db: Queryable): Promise<string[]> {
  const rows: Array<{ name: string }> = await db.query(
    `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
      WHERE table_schema IN ('public', 'pgboss') AND table_type = 'BASE TABLE' ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

/**
 * Columns a gateway updates by itself, whatever requests it gets: when a token was last used
 * (touched at most once a minute on authentication) and the leases a gateway keeps renewing on
 * the builds and eggs it runs.
 */
export const VOLATILE = `- 'last_used_at' - 'lease_until' - 'runner_lease_until'`;

/** A cheap fingerprint of the whole database: per table, its row count and an md5 over its rows (less VOLATILE columns). */
export async function snapshot(db: Queryable): Promise<Record<string, string>> {
  const tables = await allTables(db);
  const parts = tables.map(
    (t) =>
      `SELECT '${t.replace(/'/g, "''")}' AS t, count(*)::text || ':' || md5(coalesce(string_agg(x, '|' ORDER BY x), '')) AS h
         FROM (SELECT (to_jsonb(r) ${VOLATILE})::text AS x FROM ${t} r) s`,
  );
  const rows: Array<{ t: string; h: string }> = await db.query(parts.join(' UNION ALL '));
  return Object.fromEntries(rows.map((r) => [r.t, r.h]));
}

/**
 * fast-check's settings for the fuzz tests: FUZZ_SEED=<seed> replays a run; CI (CI=true) uses a
 * fixed seed so a landing cannot fail on a case no one has seen; a developer's run draws a new one.
 */
export const FUZZ_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : process.env.CI ? 20261121 : Date.now() ^ (Math.random() * 0x7fffffff);
export const fuzzParams = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, seed: FUZZ_SEED, endOnFailure: true });

/** The database as it was at `rebase()`, to prove a refused request changed nothing. */
export class DatabaseWatch {
  private baseline: Record<string, string> = {};
  private baselineRows: Record<string, string[]> = {};

  constructor(private readonly db: Queryable) {}

  private async rowsOf(table: string): Promise<string[]> {
    const rows: Array<{ j: string }> = await this.db.query(`SELECT (to_jsonb(r) ${VOLATILE})::text AS j FROM ${table} r ORDER BY 1`);
    return rows.map((r) => r.j);
  }

  private async changedTables(): Promise<string[]> {
    const now = await snapshot(this.db);
    return Object.keys({ ...now, ...this.baseline }).filter((k) => now[k] !== this.baseline[k]);
  }

  async rebase(): Promise<void> {
    this.baseline = await snapshot(this.db);
    this.baselineRows = {};
    for (const table of Object.keys(this.baseline)) this.baselineRows[table] = await this.rowsOf(table);
  }

  /** The database is as it was; else which rows differ. */
  async expectUnchanged(what: string): Promise<void> {
    const changed = await this.changedTables();
    if (!changed.length) return;
    const diff: string[] = [];
    for (const table of changed) {
      const after = await this.rowsOf(table);
      const before = this.baselineRows[table] ?? [];
      diff.push(`${table}: gone ${JSON.stringify(before.filter((r) => !after.includes(r)))}; new ${JSON.stringify(after.filter((r) => !before.includes(r)))}`);
    }
    throw new Error(`${what} changed the database:\n${diff.join('\n')}`.slice(0, 4000));
  }

  /** Runs a property; whatever it fails on is reported once, not again by every later case. */
  async check<T>(arb: fc.Arbitrary<T>, run: (v: T) => Promise<void>, numRuns: number): Promise<void> {
    try {
      await fc.assert(fc.asyncProperty(arb, run), fuzzParams(numRuns));
    } finally {
      if ((await this.changedTables()).length) await this.rebase();
    }
  }
}

/** Polls a condition nothing announces (bounded; yields between attempts, never sleeps blindly). */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, attempts = 2000, everyMs = 10): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/**
 * A fully furnished egg: owner, collaborator, a stranger and a spare user; a webhook (to an
 * unresolvable name, with its outbox rows kept pending when the gateway's worker is off), three
 * live deployments, a volume, a ready preview, a cron, and a spare API token of the owner. The
 * gateway is quiet afterwards: every build has ended and the current deployment has logged its
 * start.
 */
export interface Furnished {
  owner: TestUser;
  collaborator: TestUser;
  stranger: TestUser;
  spare: TestUser;
  slug: string;
  deployments: string[];
  webhookId: string;
  deliveryId: string;
  /** A log drain (to an unresolvable name; shipped only where HATCHERY_LOG_DRAIN_WORKER is on). */
  logDrainId: string;
  cronId: string;
  /** A cron whose run `busyRunId` was started by run-now (still running where commands take long). */
  busyCronId: string;
  busyRunId: string;
  pr: number;
  spareTokenId: string;
  /** An uploaded source of the egg. */
  sourceId: string;
}

export async function furnish(t: TestGateway): Promise<Furnished> {
  const owner = await makeUser(t.gateway);
  const collaborator = await makeUser(t.gateway);
  const stranger = await makeUser(t.gateway);
  const spare = await makeUser(t.gateway);
  const { slug } = await makeApp(t.url, owner);
  await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
  // The stranger owns an egg of their own: being signed in and owning things must not help.
  await makeApp(t.url, stranger);

  const source = await upload(t, owner.token, slug, helloEgg('furnished'));
  if (source.status !== 201) throw new Error(`source: ${source.status} ${JSON.stringify(source.body)}`);
  const hook = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, { url: 'https://hooks.invalid/faults', events: ['deploy'] });
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
  const drain = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/log-drains`, { url: 'https://hooks.invalid/faults-logs' });
  if (drain.status !== 201) throw new Error(`log drain: ${drain.status} ${JSON.stringify(drain.body)}`);
  const deployments: string[] = [];
  for (let i = 0; i < 3; i++) {
    const d = await deploy(t.url, owner, slug, { SECRET_VALUE: `v${i}` });
    if ((await settle(t.url, owner, d.id)) !== 'LIVE') throw new Error(`deployment ${d.id} did not go live`);
    deployments.push(d.id);
  }
  const vol = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/volume`, { size_mb: 100 });
  if (vol.status !== 201) throw new Error(`volume: ${vol.status}`);
  const pr = 1;
  const prv = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/previews`, { pr_number: pr });
  if (prv.status !== 201) throw new Error(`preview: ${prv.status}`);
  const cron = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 * * * *', command: 'echo hi' });
  if (cron.status !== 201) throw new Error(`cron: ${cron.status}`);
  // A second cron with a run in progress (where the gateway's commands last long enough), to cancel.
  const busy = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 * * * *', command: 'sleep on it' });
  if (busy.status !== 201) throw new Error(`cron: ${busy.status}`);
  const busyRun = (await gqlOk(t.url, owner.token, RunCronNowDocument, { app: slug, id: busy.body.id })).runCronNow;
  const token = await gqlOk(t.url, owner.token, CreateApiTokenDocument, { name: 'spare' });

  // Quiet: the preview's build has ended, the current deployment's start lines are stored.
  await until('the preview to be ready', async () => {
    const list = await rest(t.url, owner.token, 'GET', `/v1/apps/${slug}/previews`);
    return list.body.data.every((p: { status: string }) => p.status !== 'building');
  });
  const current = deployments[deployments.length - 1];
  await until('the current deployment to log its start', async () => {
    const [row] = await t.gateway.ds.query(`SELECT count(*)::int AS n FROM log_lines WHERE deployment_id = $1 AND message = 'Listening on port 8080'`, [
      current,
    ]);
    return row.n === 1;
  });
  const [delivery] = await t.gateway.ds.query('SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id LIMIT 1', [hook.body.id]);
  if (!delivery) throw new Error('no delivery recorded');

  return {
    owner,
    collaborator,
    stranger,
    spare,
    slug,
    deployments,
    webhookId: hook.body.id,
    deliveryId: delivery.id,
    logDrainId: drain.body.id,
    cronId: cron.body.id,
    busyCronId: busy.body.id,
    busyRunId: busyRun.id,
    pr,
    spareTokenId: token.createApiToken.apiToken.id,
    sourceId: source.body.id,
  };
}

/** Settings for a gateway running as its own process (see spawnGateway). */
export function childEnv(databaseUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    HATCHERY_ENCRYPTION_KEY: TEST_KEY,
    HATCHERY_SIM_RUNTIME_LOG_MS: '3600000',
    ...extra,
  };
}

export interface ChildGateway {
  proc: ChildProcess;
  url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code or signal once the process has ended. */
  exited: Promise<number | string | null>;
  kill(signal?: NodeJS.Signals): Promise<number | string | null>;
}

/** `node -r ./scripts/register.js src/main.ts` as a child process; resolves once it prints its URL. */
export async function spawnGateway(env: NodeJS.ProcessEnv): Promise<ChildGateway> {
  const proc = spawn(process.execPath, ['-r', './scripts/register.js', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stderr.on('data', (c) => (out += c));
  const exited = new Promise<number | string | null>((resolve) => proc.once('exit', (code, signal) => resolve(signal ?? code)));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`gateway exited (${code}) before listening: ${out}`)));
  });
  return {
    proc,
    url,
    output: () => out,
    exited,
    async kill(signal = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}
