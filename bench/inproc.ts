/**
 * The gateway's own CPU a list request, in process: requests injected into its HTTP server
 * (light-my-request, no sockets), `IN_FLIGHT` at a time, each window's process CPU divided by its
 * requests; and the promises one request makes (an async_hooks init count). Less noisy than the
 * `http` phase on a shared machine (no load generator, PostgreSQL's CPU not counted), so small
 * levers can be told apart: `npm run bench:inproc`, the code before and after, alternately.
 *
 * DATABASE_URL: a PostgreSQL server (a fresh database is made and dropped); else an embedded one.
 * BENCH_INPROC_WINDOWS (6), BENCH_INPROC_REQUESTS (4000 a window), BENCH_INPROC_ONLY (rest,graphql).
 * BENCH_INPROC_ALLOC=1: also the bytes each request allocates (V8's sampling heap profiler, objects
 * collected since included) and where, by function: garbage is what the collector's time is spent on.
 */
import 'reflect-metadata';
import { createHook } from 'node:async_hooks';
import { Session } from 'node:inspector';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import inject from 'light-my-request';
import { Pool } from 'pg';
import pino from 'pino';
import { buildApp, Gateway } from '../src/app';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/log';
import { App } from '../src/modules/apps/app.entity';
import { Deployment } from '../src/modules/deployments/deployment.entity';
import { startBaselineHttp } from './baseline';
import { appRow, BenchDb, benchGatewayEnv, deploymentRow, openBenchDb } from './db';

const WINDOWS = Number(process.env.BENCH_INPROC_WINDOWS ?? 6);
const PER_WINDOW = Number(process.env.BENCH_INPROC_REQUESTS ?? 4000);
const IN_FLIGHT = 10;
const LIST = `query BenchList($first: Int) {
  deployments(first: $first) {
    nodes { id status url createdAt updatedAt finishedAt memoryMb volumeMb envKeys failureReason app { slug } }
    pageInfo { hasNextPage endCursor }
  }
}`;

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hatchery-inproc-'));
  let db: BenchDb | null = null;
  let gateway: Gateway | null = null;
  let pool: Pool | null = null;
  let bare: Awaited<ReturnType<typeof startBaselineHttp>> | null = null;
  try {
    db = await openBenchDb(tmp);
    gateway = buildApp(loadConfig(benchGatewayEnv(db, tmp)), { logger: createLogger('info', pino.destination({ dest: '/dev/null', sync: true })) });
    await gateway.start(0);
    const { user, token } = await gateway.services.accounts.createUser(`inproc-${randomBytes(3).toString('hex')}@example.com`);
    const t0 = Date.now() - 3_600_000;
    const apps = Array.from({ length: 10 }, (_, i) => appRow(user.id, `inproc-${i}`, new Date(t0 + i)));
    await gateway.ds.getRepository(App).insert(apps);
    const deployments: Deployment[] = [];
    for (let round = 0; round < 5; round++)
      apps.forEach((a, i) => deployments.push(deploymentRow(a.id, user.id, new Date(t0 + 10_000 + round * 1000 + i), a.slug)));
    await gateway.ds.getRepository(Deployment).insert(deployments);
    await gateway.ds.query('VACUUM ANALYZE');

    pool = new Pool({ connectionString: db.url, max: 10 });
    bare = await startBaselineHttp(pool);
    const srv = gateway.server;
    const dispatch = (req: unknown, res: unknown) => srv.emit('request', req, res);
    const bareServer = bare.server;
    const bareDispatch = (req: unknown, res: unknown) => bareServer.emit('request', req, res);
    const auth = { authorization: `Bearer ${token}` };
    const targets: Record<string, () => Promise<{ statusCode: number; body: string }>> = {
      bare: () => inject(bareDispatch, { method: 'GET', url: '/deployments?limit=20', headers: auth }),
      rest: () => inject(dispatch, { method: 'GET', url: '/deployments?limit=20', headers: auth }),
      graphql: () =>
        inject(dispatch, {
          method: 'POST',
          url: '/graphql',
          headers: { ...auth, 'content-type': 'application/json' },
          payload: JSON.stringify({ query: LIST, variables: { first: 20 } }),
        }),
    };
    // BENCH_INPROC_ONLY=rest,graphql: those only (the bare loop always: the ratios need it), for a profile of one.
    const only = process.env.BENCH_INPROC_ONLY?.split(',');
    if (only) for (const what of Object.keys(targets)) if (what !== 'bare' && !only.includes(what)) delete targets[what];
    for (const [what, send] of Object.entries(targets)) {
      const r = await send();
      const rows = what !== 'graphql' ? JSON.parse(r.body).data?.length : JSON.parse(r.body).data?.deployments?.nodes?.length;
      if (r.statusCode !== 200 || rows !== 20) throw new Error(`${what}: ${r.statusCode} ${r.body.slice(0, 300)}`);
    }
    const window = async (send: () => Promise<unknown>, n: number) => {
      let left = n;
      const cpu = process.cpuUsage();
      const worker = async () => {
        while (left-- > 0) await send();
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      const used = process.cpuUsage(cpu);
      return (used.user + used.system) / n;
    };
    const promisesOf = async (send: () => Promise<unknown>) => {
      let n = 0;
      const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && n++) }).enable();
      for (let i = 0; i < 20; i++) await send();
      hook.disable();
      return n / 20;
    };
    const result: Record<string, { usPerRequest: number[]; promises: number }> = {};
    if (process.env.BENCH_INPROC_ALLOC) {
      for (const send of Object.values(targets)) await window(send, PER_WINDOW);
      for (const [what, send] of Object.entries(targets)) {
        const { bytes, top } = await allocations(() => window(send, PER_WINDOW));
        console.log(`${what}: ${(bytes / PER_WINDOW / 1024).toFixed(1)} KB allocated a request; by function (KB a request):`);
        for (const [where, b] of top.slice(0, 25)) console.log(`  ${(b / PER_WINDOW / 1024).toFixed(2).padStart(6)}  ${where}`);
      }
    }
    for (const what of Object.keys(targets)) result[what] = { usPerRequest: [], promises: await promisesOf(targets[what]) };
    // Warm: the gateway's code is optimised as it runs (docs/benchmarks.md, warm-up).
    for (let i = 0; i < 3; i++) for (const send of Object.values(targets)) await window(send, PER_WINDOW);
    for (let w = 0; w < WINDOWS; w++)
      for (const [what, send] of Object.entries(targets)) result[what].usPerRequest.push(Math.round(await window(send, PER_WINDOW)));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const bareMedian = median(result.bare.usPerRequest);
    for (const [what, r] of Object.entries(result)) {
      const againstBare = what === 'bare' ? '' : `, ${(median(r.usPerRequest) / bareMedian).toFixed(2)}× bare`;
      console.log(
        `${what}: ${median(r.usPerRequest)} µs CPU a request${againstBare} (median of ${WINDOWS}: ${r.usPerRequest.join(', ')}); ${r.promises} promises a request`,
      );
    }
  } finally {
    await bare?.close();
    await pool?.end();
    await gateway?.stop();
    await db?.drop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

/** The bytes allocated while `fn` runs, garbage included, and the functions that allocated them, most first. */
async function allocations(fn: () => Promise<unknown>): Promise<{ bytes: number; top: Array<[string, number]> }> {
  const session = new Session();
  session.connect();
  const post = <T>(method: string, params?: object) =>
    new Promise<T>((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res as T))));
  try {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await fn();
    const { profile } = await post<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
    const byFunction = new Map<string, number>();
    let bytes = 0;
    const walk = (node: SamplingNode) => {
      bytes += node.selfSize;
      if (node.selfSize) {
        const { functionName, url, lineNumber } = node.callFrame;
        const file = url.replace(/^.*node_modules\//, '').replace(/^.*\/(src|bench)\//, '$1/');
        const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
        byFunction.set(key, (byFunction.get(key) ?? 0) + node.selfSize);
      }
      node.children.forEach(walk);
    };
    walk(profile.head);
    return { bytes, top: [...byFunction].sort((a, b) => b[1] - a[1]) };
  } finally {
    session.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
