/**
 * The live-logs phases' subscribers, split over several load processes (bench/load.js
 * `subscribe`): one process reading 2,000 sockets' lines can take more CPU than the server
 * sending them. Each process reports its own counts and latency histogram; merged here.
 */
import { execFileSync } from 'node:child_process';

/**
 * Fails early, and says why, when this process may not open a socket per subscriber (the server
 * side of each connection is here; the load processes inherit the same limit).
 */
export function checkOpenFiles(connections: number): void {
  let limit: number;
  try {
    const out = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
    limit = out === 'unlimited' ? Infinity : Number(out);
  } catch {
    return; // no shell to ask: the sockets will say
  }
  const needed = connections + 200;
  if (Number.isFinite(limit) && limit < needed) {
    throw new Error(
      `${connections} subscribers need about ${needed} open files in this process, and \`ulimit -n\` is ${limit}: raise it (ulimit -n ${needed}) or lower the subscribers`,
    );
  }
}

/** What one load process's `report` says (see `subscribe` in bench/load.js). */
export interface StreamReport {
  subscribers: number;
  expectedPerSubscriber: number;
  delivered: number;
  expectedTotal: number;
  completeSubscribers: number;
  messages: number;
  minPerSubscriber: number;
  maxPerSubscriber: number;
  outOfOrder: number;
  closed: number;
  failures: unknown[];
  drainWaitMs: number;
  deliverySpanMs: number;
  firstAt: number;
  lastAt: number;
  /** Subscribers that timed every line they got, and the lines they timed. */
  timedSubscribers: number;
  timedLines: number;
  latencyMs: { p50: number | null; p90: number | null; p99: number | null; max: number | null; maxDelivered: number };
  /** [ms, lines] per millisecond bucket of the timed lines. */
  histogram: Array<[number, number]>;
}

/** `n` subscribers over `parts` processes, as evenly as can be (none empty). */
export function split(n: number, parts: number): number[] {
  const k = Math.max(1, Math.min(Math.floor(parts), n));
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}

/**
 * The reports of several processes as one: counts added, the delivery span from the first line
 * any got to the last, percentiles over the merged histograms and every line a timed subscriber
 * was expected to get (a line never delivered counts as slower than any: null).
 */
export function mergeReports(reports: StreamReport[]): Omit<StreamReport, 'histogram'> & { processes: number } {
  const sum = (f: (r: StreamReport) => number) => reports.reduce((n, r) => n + f(r), 0);
  const counts = new Map<number, number>();
  for (const r of reports) for (const [ms, n] of r.histogram) counts.set(ms, (counts.get(ms) ?? 0) + n);
  const buckets = [...counts].sort((a, b) => a[0] - b[0]);
  const timedLines = sum((r) => r.timedLines);
  const timedTotal = sum((r) => r.expectedPerSubscriber * r.timedSubscribers);
  const pct = (p: number): number | null => {
    const target = Math.ceil(timedTotal * p);
    if (timedLines === 0 || target > timedLines) return null;
    let seen = 0;
    for (const [ms, n] of buckets) {
      seen += n;
      if (seen >= target) return ms;
    }
    return buckets[buckets.length - 1][0];
  };
  const firstAts = reports.map((r) => r.firstAt).filter((t) => t > 0);
  const firstAt = firstAts.length ? Math.min(...firstAts) : 0;
  const lastAt = Math.max(0, ...reports.map((r) => r.lastAt));
  const maxDelivered = Math.max(0, ...reports.map((r) => r.latencyMs.maxDelivered));
  return {
    processes: reports.length,
    subscribers: sum((r) => r.subscribers),
    expectedPerSubscriber: reports[0].expectedPerSubscriber,
    delivered: sum((r) => r.delivered),
    expectedTotal: sum((r) => r.expectedTotal),
    completeSubscribers: sum((r) => r.completeSubscribers),
    messages: sum((r) => r.messages),
    minPerSubscriber: Math.min(...reports.map((r) => r.minPerSubscriber)),
    maxPerSubscriber: Math.max(...reports.map((r) => r.maxPerSubscriber)),
    outOfOrder: sum((r) => r.outOfOrder),
    closed: sum((r) => r.closed),
    failures: reports.flatMap((r) => r.failures).slice(0, 5),
    drainWaitMs: Math.max(...reports.map((r) => r.drainWaitMs)),
    deliverySpanMs: lastAt - firstAt,
    firstAt,
    lastAt,
    timedSubscribers: sum((r) => r.timedSubscribers),
    timedLines,
    latencyMs: {
      p50: pct(0.5),
      p90: pct(0.9),
      p99: pct(0.99),
      max: timedLines === timedTotal ? maxDelivered : null,
      maxDelivered,
    },
  };
}
