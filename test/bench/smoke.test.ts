import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Row } from '../../bench/settings';

const ROOT = path.resolve(__dirname, '../..');

/**
 * `npm run bench` itself, shrunk (1-second measurements, 5 subscribers, 20 idle ones, 50 crons): every phase
 * runs against its baseline on a fresh database of the test server, one table is printed and
 * written as JSON. Speed is the benchmark's business, not this test's: it checks that the harness
 * works and that what it counts is right (every line reaches every subscriber, the nested list's
 * statements stay constant, a refused operation runs no SQL, every due cron starts, the GraphQL
 * peers answer as many rows as the gateway).
 */
describe('npm run bench (shrunk)', () => {
  let dir: string;
  let out = '';
  let code: number | null = null;
  let rows: Row[] = [];
  let raw: any = {};

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hatchery-bench-'));
    const proc = spawn(process.execPath, ['-r', './scripts/register.js', 'bench/run.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: process.env.HATCHERY_TEST_SERVER_URL,
        BENCH_RESULTS_DIR: dir,
        BENCH_SECONDS: '1',
        BENCH_WARMUP_SECONDS: '0',
        BENCH_LIST_WARMUP_SECONDS: '1',
        BENCH_HTTP_ROUNDS: '2',
        BENCH_CONNECTIONS: '2',
        BENCH_LOG_RATE: '200',
        BENCH_LOG_SECONDS: '1',
        BENCH_LOG_ROUNDS: '2',
        BENCH_SUBSCRIBERS: '5',
        BENCH_IDLE_SUBSCRIBERS: '20',
        BENCH_DRAIN_MS: '20000',
        BENCH_INGEST_LINES: '2000',
        BENCH_CRONS: '50',
        BENCH_CRON_TICK_MS: '200',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout.on('data', (c) => (out += c));
    proc.stderr.on('data', (c) => (out += c));
    code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    if (files.length === 1) ({ rows, raw } = JSON.parse(readFileSync(path.join(dir, files[0]), 'utf8')));
  }, 240_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const row = (start: string): Row => {
    const r = rows.find((x) => x.measure.startsWith(start));
    if (!r) throw new Error(`no row "${start}" in ${JSON.stringify(rows.map((x) => x.measure))}\n${out}`);
    return r;
  };

  it('exits 0, prints the table and writes every row as JSON', () => {
    expect({ code, tail: code === 0 ? '' : out.slice(-3000) }).toEqual({ code: 0, tail: '' });
    expect(rows.map((r) => r.measure)).toEqual([
      'REST GET /deployments?limit=20: throughput (req/s)',
      'REST GET /deployments?limit=20: p99 latency (ms)',
      'GraphQL deployments(first: 20): throughput (req/s)',
      'GraphQL deployments(first: 20): p99 latency (ms)',
      'GraphQL list without vs through Apollo Server’s pipeline: throughput (req/s)',
      'GraphQL list vs PostGraphile 4: throughput (req/s)',
      'GraphQL list vs PostGraphile 4: p99 latency (ms)',
      'REST list vs PostGraphile 4: throughput (req/s)',
      'GraphQL list vs mercurius + graphql-jit: throughput (req/s)',
      'GraphQL list vs mercurius + graphql-jit: p99 latency (ms)',
      'REST list vs GraphQL list: throughput (req/s)',
      'Nested list (app, owner): SQL statements per request, 50 vs 5',
      'Nested list of 50: throughput vs flat list of 50 (req/s)',
      'Refused operation (over the alias limit): SQL statements',
      'Refused operation: throughput (req/s)',
      'Refused operation: p99 latency (ms)',
      'Log ingestion into PostgreSQL (lines/s, median round)',
      'Cron: 50 due at once, started / latest start after due (s)',
      'Idle subscribers (20): memory per subscriber, heap + external (KB)',
      'Idle subscribers: RSS per subscriber (KB)',
      'Live logs (5 subscribers): lines/s written (target 200)',
      'Live logs: share of lines delivered to every subscriber',
      'Live logs: lines/s delivered (all subscribers)',
      'Live logs: p99 delivery latency (ms, median of 2)',
      "Live logs: the server process's CPU while streaming (ms, median of 2)",
      "Live logs: PostgreSQL's CPU while streaming (ms, median of 2)",
    ]);
    for (const r of rows) expect(out).toContain(`| ${r.measure}`);
    // Every HTTP figure is a ratio against a baseline measured in the same run.
    for (const r of rows.filter((x) => /req\/s|lines\/s/.test(x.measure))) {
      expect(r.gateway).toEqual(expect.any(Number));
      expect(r.baseline).toEqual(expect.any(Number));
      expect(r.ratio).toEqual(expect.any(Number));
    }
  });

  it('counts right: every line to every subscriber, constant nested statements, no SQL for a refusal, every cron started', () => {
    expect(row('Live logs: share of lines delivered')).toMatchObject({ gateway: 1, baseline: 1, met: true });
    expect(row('Nested list (app, owner): SQL statements')).toMatchObject({ met: true });
    // The counter sees the statements a request runs (and only those): a nested list needs some.
    expect(row('Nested list (app, owner): SQL statements').gateway).toBeGreaterThan(0);
    expect(row('Refused operation (over the alias limit): SQL statements')).toMatchObject({ gateway: 0, met: true });
    expect(String(row('Cron: 50 due at once').gateway)).toMatch(/^50 \/ /);
    // Idle subscribers: every one was subscribed (the gateway's gauge said so) and measured, on both sides.
    expect(raw.idle?.gateway).toMatchObject({ subscribers: 20, perSubscriberKb: { heapAndExternal: expect.any(Number) } });
    expect(raw.idle?.baseline).toMatchObject({ subscribers: 20, perSubscriberKb: { heapAndExternal: expect.any(Number) } });
    // Live logs: two rounds each side (the gateway's second on a deployment of its own), every line to every subscriber in each.
    expect(raw.logs?.gateway).toHaveLength(2);
    expect(raw.logs?.baseline).toHaveLength(2);
    for (const r of [...raw.logs.gateway, ...raw.logs.baseline]) expect(r.delivered).toBe(r.expectedTotal);
  });

  it('each list load records the CPU the harness process (the gateway, the bare baseline) spent a request', () => {
    for (const r of [...raw.http.baseline, raw.http.rest, raw.http.graphql, raw.http.graphqlThroughApollo]) expect(r.cpuMsPerRequest).toBeGreaterThan(0);
  });

  it('BENCH_HTTP_ROUNDS: each round of the lists between two baseline loads; the rows give the median round’s ratio and the range', () => {
    expect(raw.http.rounds).toHaveLength(2);
    expect(raw.http.baseline).toHaveLength(3);
    for (const measure of ['REST GET /deployments?limit=20: throughput (req/s)', 'GraphQL deployments(first: 20): p99 latency (ms)']) {
      const { ratio, range } = row(measure) as { ratio: number; range: [number, number] };
      expect(range).toEqual([expect.any(Number), expect.any(Number)]);
      expect(range[0]).toBeLessThanOrEqual(ratio);
      expect(ratio).toBeLessThanOrEqual(range[1]);
      expect(out).toContain(`${ratio.toFixed(2)} (${range[0].toFixed(2)}–${range[1].toFixed(2)})`);
    }
    // The median of two is the lower: one of the rounds' own ratios, against that round's baselines.
    const rest = raw.http.rounds.map((x: any) => x.rest.rps / x.baseline.rps);
    expect(row('REST GET /deployments?limit=20: throughput (req/s)').ratio).toBe(Math.min(...rest));
  });

  it('the GraphQL peers answer the same number of rows as the gateway, on the same database', () => {
    expect(raw.peers?.rows).toEqual({ postgraphile: 20, mercurius: 20, gateway: 20 });
  });
});
