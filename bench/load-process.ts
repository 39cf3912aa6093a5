/**
 * The second process of `npm run bench` (bench/load.js), shared by the phases: started per
 * measurement, read line by line, stopped with the harness whatever happens.
 */
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';

const ROOT = path.resolve(__dirname, '..');
const LOAD = path.join(__dirname, 'load.js');

export interface Child {
  proc: ChildProcess;
  /** The next line on stdout with this event, parsed; rejects if the process ends first. */
  next(event: string, timeoutMs: number): Promise<Record<string, any>>;
  send(obj: unknown): void;
  stop(): Promise<void>;
}

/** Load processes running now, stopped with the harness whatever happens. */
export const children = new Set<ChildProcess>();

export function startLoad(mode: 'http' | 'subscribe' | 'ws-echo', spec: unknown): Child {
  const proc = spawn(process.execPath, [...(process.env.BENCH_LOAD_NODE_ARGS ?? '').split(' ').filter(Boolean), LOAD, mode, JSON.stringify(spec)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: ROOT,
  });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  const queue: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  let exited: number | null = null;
  const wake = () => waiters.splice(0).forEach((w) => w());
  readline.createInterface({ input: proc.stdout }).on('line', (line) => {
    try {
      queue.push(JSON.parse(line));
    } catch {
      process.stderr.write(`load: ${line}\n`);
    }
    wake();
  });
  const ended = new Promise<void>((resolve) =>
    proc.once('exit', (code) => {
      exited = code ?? 1;
      wake();
      resolve();
    }),
  );
  return {
    proc,
    async next(event, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = queue.findIndex((m) => m.event === event);
        if (i >= 0) return queue.splice(i, 1)[0];
        if (exited !== null) throw new Error(`load process (${mode}) exited with ${exited} before "${event}"`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`load process (${mode}): no "${event}" within ${timeoutMs} ms`);
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((r) => {
          waiters.push(r);
          timer = setTimeout(r, left);
        });
        clearTimeout(timer);
      }
    },
    send(obj) {
      proc.stdin.write(JSON.stringify(obj) + '\n');
    },
    async stop() {
      if (exited === null) proc.kill('SIGTERM');
      await ended;
    },
  };
}

export interface HttpResult {
  rps: number;
  requests: number;
  latency: { p50: number; p90: number; p99: number; max: number; mean: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /**
   * The harness process's CPU (user + system) per request while measured, in ms: what a server
   * running in it (the gateway, the bare baselines, mercurius) spends on a request, its threads
   * (GC, libuv) included: the server's own cost, apart from the load generator's and PostgreSQL's
   * on the same cores. Meaningless for a server in another process (PostGraphile, the router's egg).
   */
  cpuMsPerRequest?: number;
}

export interface HttpTarget {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** How long and how hard autocannon loads one target: `warmup` seconds unmeasured first. */
export interface LoadSettings {
  connections: number;
  seconds: number;
  warmup: number;
}

/** autocannon against one target from a load process; fails on errors, timeouts and unexpected statuses. */
export async function autocannon(
  label: string,
  target: HttpTarget,
  settings: LoadSettings,
  /** Every answer must have this status; by default, any 2xx. */
  status?: number,
): Promise<HttpResult> {
  const child = startLoad('http', { ...target, connections: settings.connections, duration: settings.seconds, warmup: settings.warmup });
  try {
    await child.next('measuring', (settings.warmup + 30) * 1000);
    const cpu = process.cpuUsage();
    const r = (await child.next('result', (settings.seconds + 30) * 1000)) as unknown as HttpResult;
    const used = process.cpuUsage(cpu);
    r.cpuMsPerRequest = r.requests ? +((used.user + used.system) / 1000 / r.requests).toFixed(3) : undefined;
    if (r.errors || r.timeouts) throw new Error(`${label}: ${r.errors} errors, ${r.timeouts} timeouts`);
    if (status === undefined && r.non2xx) throw new Error(`${label}: ${r.non2xx} non-2xx answers`);
    if (status !== undefined && r.statusCodes[status] !== r.requests)
      throw new Error(`${label}: expected every answer to be ${status}, got ${JSON.stringify(r.statusCodes)}`);
    process.stderr.write(
      `  ${label.padEnd(34)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  ${r.cpuMsPerRequest} ms CPU here\n`,
    );
    return r;
  } finally {
    await child.stop();
  }
}
