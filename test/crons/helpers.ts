import { DataSource } from 'typeorm';
import { Clock } from '../../src/clock';
import { CronExpression } from '../../src/modules/crons/cron-expression';
import { CommandResult, CommandSpec } from '../../src/runtime/runtime.port';
import { SimulatedRuntime } from '../../src/runtime/simulated.runtime';
import { rest, TestGateway } from '../support/gateway';
import { makeEggWithPeople } from '../support/factories';
import { asError } from '../support/errors';

export const MINUTE_MS = 60_000;
export { ISO_MS } from '../support/factories';
export const CRON_ID = /^cron_[0-9a-z]{26}$/;
export const RUN_ID = /^run_[0-9a-z]{26}$/;

/** A REST run record. */
export interface RunRecord {
  id: string;
  status: 'running' | 'success' | 'failed' | 'skipped_depleted';
  exit_code: number | null;
  scheduled_at: string;
  started_at: string | null;
  finished_at: string | null;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves with `p`, or rejects as soon as `signal` aborts. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(asError(e));
      },
    );
  });
}

/** How one command ended in the runtime: its exit code, or aborted by the gateway. */
export type CommandOutcome = CommandResult | { aborted: true };

/**
 * The simulated runtime (`exit N` exits N, anything else 0), watched by the test: every command is
 * recorded per egg slug; the start and end of the n-th command of a slug can be awaited; commands
 * of `held` slugs wait until `release(slug)` (or until the gateway aborts them).
 */
export class TrackingRuntime extends SimulatedRuntime {
  readonly held = new Set<string>();
  private readonly gates = new Map<string, Deferred<void>>();
  private readonly starts = new Map<string, Array<Deferred<CommandSpec>>>();
  private readonly ends = new Map<string, Array<Deferred<CommandOutcome>>>();
  private readonly counts = new Map<string, number>();

  constructor(ds: DataSource, commandMs = 20) {
    super(ds, { buildMs: 150, runtimeLogMs: 60_000, commandMs });
  }

  async runCommand(spec: CommandSpec, signal: AbortSignal): Promise<CommandResult> {
    const n = (this.counts.get(spec.slug) ?? 0) + 1;
    this.counts.set(spec.slug, n);
    this.slot(this.starts, spec.slug, n).resolve(spec);
    const end = this.slot(this.ends, spec.slug, n);
    try {
      if (this.held.has(spec.slug)) {
        // Held, it is a running command all the same: stopCommand (a cancel, the reaper) stops it.
        const stop = new AbortController();
        this.runningRuns.set(spec.runId, stop);
        try {
          await untilAborted(this.gate(spec.slug).promise, AbortSignal.any([signal, stop.signal]));
        } finally {
          this.runningRuns.delete(spec.runId);
        }
      }
      const result = await super.runCommand(spec, signal);
      end.resolve(result);
      return result;
    } catch (err) {
      end.resolve({ aborted: true });
      throw err;
    }
  }

  /** How many commands of the egg have started. */
  commands(slug: string): number {
    return this.counts.get(slug) ?? 0;
  }

  /** Resolves when the egg's n-th command (1-based) has started. */
  started(slug: string, n: number): Promise<CommandSpec> {
    return this.slot(this.starts, slug, n).promise;
  }

  /** Resolves when the egg's n-th command (1-based) has ended in the runtime. */
  ended(slug: string, n: number): Promise<CommandOutcome> {
    return this.slot(this.ends, slug, n).promise;
  }

  hold(slug: string): void {
    this.held.add(slug);
  }

  /** Lets the egg's held commands go on, and stops holding new ones. */
  release(slug: string): void {
    this.held.delete(slug);
    this.gate(slug).resolve();
    this.gates.delete(slug);
  }

  private gate(slug: string): Deferred<void> {
    let g = this.gates.get(slug);
    if (!g) this.gates.set(slug, (g = deferred<void>()));
    return g;
  }

  private slot<T>(map: Map<string, Array<Deferred<T>>>, slug: string, n: number): Deferred<T> {
    let list = map.get(slug);
    if (!list) map.set(slug, (list = []));
    while (list.length < n) list.push(deferred<T>());
    return list[n - 1];
  }
}

/**
 * Polls a condition that no event announces (a run's outcome is written after the runtime's
 * command returns). Yields to the event loop between attempts; never sleeps. Bounded by attempts
 * (and by jest's timeout).
 */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, attempts = 5000): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Waits until the cron has no run in `running` any more (raw SQL). */
export async function settleRuns(ds: DataSource, cronId: string): Promise<void> {
  await until(`runs of ${cronId} to end`, async () => {
    const [row] = await ds.query(`SELECT count(*)::int AS n FROM cron_runs WHERE cron_id = $1 AND status = 'running'`, [cronId]);
    return row.n === 0;
  });
}

/** Waits until no run of any cron is `running`. */
export async function settleAllRuns(ds: DataSource): Promise<void> {
  await until('all runs to end', async () => {
    const [row] = await ds.query(`SELECT count(*)::int AS n FROM cron_runs WHERE status = 'running'`);
    return row.n === 0;
  });
}

/** An egg with its owner, a collaborator and a stranger. */
export const eggWithPeople = (t: TestGateway) => makeEggWithPeople(t);

export function postCron(t: TestGateway, token: string | null, slug: string, body: unknown) {
  return rest(t.url, token, 'POST', `/v1/apps/${slug}/crons`, body);
}

/** Creates a cron over REST and returns its 201 body. */
export async function createCron(t: TestGateway, token: string, slug: string, schedule: string, command = 'echo hi') {
  const res = await postCron(t, token, slug, { schedule, command });
  if (res.status !== 201) throw new Error(`POST crons: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; schedule: string; command: string; enabled: boolean; created_at: string; next_run_at: string | null };
}

export function listCrons(t: TestGateway, token: string | null, slug: string, query = '') {
  return rest(t.url, token, 'GET', `/v1/apps/${slug}/crons${query}`);
}

export function getRuns(t: TestGateway, token: string | null, slug: string, cronId: string, query = '') {
  return rest(t.url, token, 'GET', `/v1/apps/${slug}/crons/${cronId}/runs${query}`);
}

/** The cron's runs over REST, most recent first (asserts 200). */
export async function runsOf(t: TestGateway, token: string, slug: string, cronId: string): Promise<RunRecord[]> {
  const res = await getRuns(t, token, slug, cronId, '?limit=100');
  expect(res.status).toBe(200);
  return res.body.data;
}

/** The cron as the REST list shows it (asserts it is listed). */
export async function listedCron(t: TestGateway, token: string, slug: string, cronId: string) {
  const res = await listCrons(t, token, slug, '?limit=100');
  expect(res.status).toBe(200);
  const found = res.body.data.find((c: { id: string }) => c.id === cronId);
  expect(found).toBeDefined();
  return found as { id: string; enabled: boolean; next_run_at: string | null; last_run: RunRecord | null };
}

/** Rows of cron_runs for the cron (raw SQL), oldest due time first. */
export async function storedRuns(ds: DataSource, cronId: string): Promise<Array<{ id: string; status: string; scheduled_at: Date; manual: boolean }>> {
  return ds.query('SELECT id, status, scheduled_at, manual FROM cron_runs WHERE cron_id = $1 ORDER BY scheduled_at, id', [cronId]);
}

/** The next `n` due times of `schedule` strictly after `from`, as ISO strings. */
export function upcoming(schedule: string, from: string, n: number): string[] {
  const expr = CronExpression.parse(schedule);
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    const next = expr.next(at);
    if (!next) throw new Error(`${schedule}: no due time after ${at.toISOString()}`);
    out.push(next.toISOString());
    at = next;
  }
  return out;
}

/** Real time, moved: the clock runs at the machine's pace from a moment chosen by the test. */
export class ShiftedClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  /** From now on, `now()` reads `at` and keeps running. */
  moveTo(at: Date): void {
    this.offsetMs = at.getTime() - Date.now();
  }
}
