import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, renameSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log';
import { linkTarget, mayEnterNamespaces, NAMED_NETNS_DIR, netnsOf } from '../runtime/namespaces';
import type { Endpoint } from '../runtime/runtime.port';

/** One request HAProxy passed on, as its log line says: the deployment it went to (null: the Node router's fallback). */
export interface EdgeRequest {
  deploymentId: string | null;
  status: number;
  ms: number;
  method: string;
  path: string;
}

export interface EdgeOptions {
  /** The HAProxy executable. */
  bin: string;
  host: string;
  /** The public port; 0 picks a free one. */
  port: number;
  /** Where the Node router listens for what HAProxy does not serve itself: any host not (or no longer) promoted. */
  fallbackPort: number;
  log: Logger;
  onRequest(request: EdgeRequest): void;
  /**
   * Reach a replica in its own network namespace (Endpoint `inside`) rather than through its
   * published port, where this process runs as root and HAProxy is built with namespace support.
   */
  namespaces?: boolean;
}

/** What a promoted host is served by: the deployment and where its replicas listen. */
export interface EdgeRoute {
  deploymentId: string;
  endpoints: Endpoint[];
}

const BACKEND_PREFIX = 'd_';

/** The problem+json answers HAProxy gives itself, the same shape as the Node router's. */
const PROBLEMS: Array<[number, string, string, string]> = [
  [400, 'Bad Request', 'bad_request', 'the request could not be read'],
  [408, 'Request Timeout', 'request_timeout', 'the request was not sent in time'],
  [502, 'Bad Gateway', 'bad_gateway', 'the egg did not answer'],
  [503, 'Service Unavailable', 'service_unavailable', 'the egg is not listening; try again shortly'],
  [504, 'Gateway Timeout', 'gateway_timeout', 'the egg did not answer in time'],
];

/** A backend name for a deployment id (ids are letters, digits, `_` and `-`; anything else is refused). */
function backendOf(deploymentId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(deploymentId)) throw new Error(`edge: unexpected deployment id ${JSON.stringify(deploymentId)}`);
  return `${BACKEND_PREFIX}${deploymentId}`;
}

/**
 * Calls `onLine` with each line of a socket's UTF-8 text, as readline would (a `\r` before the
 * `\n` dropped), without its events and buffering: HAProxy's log ring sends a line a request.
 * What has come of a line longer than `max` (the ring's are at most 2,048 bytes) is dropped rather
 * than kept growing; the rest of it comes as a line of its own (without the edge's tag: ignored).
 */
export function eachLine(socket: NodeJS.ReadableStream, onLine: (line: string) => void, max = 64 * 1024): void {
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    const text = rest === '' ? chunk : rest + chunk;
    let from = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', from)) {
      onLine(text.slice(from, nl > from && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl));
      from = nl + 1;
    }
    rest = from === text.length ? '' : text.length - from > max ? '' : text.slice(from);
  });
  socket.on('end', () => {
    if (rest !== '') onLine(rest);
    rest = '';
  });
}

/** A free port on the host, for HAProxy to bind (it cannot say which port 0 gave it). */
async function freePort(host: string): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((done, fail) => server.once('error', fail).listen(0, host, () => done()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/**
 * HAProxy in front of the Node router, for the hot path of routing (HTTP and WebSockets to an
 * awake egg). The Node router keeps deciding: a host it resolved to an awake egg's live
 * deployment is promoted here (host → that deployment's replicas); any other host, and any
 * promoted one whose replicas all fail, is passed to the Node router (which wakes, waits, answers
 * problems). HAProxy runs as a child in master-worker mode: a change of routes rewrites its
 * configuration and map and reloads it, which finishes requests in flight on the old worker. Its
 * log lines, one per request, come back through its log ring (see `logServer`).
 */
export class HaproxyEdge {
  private dir = '';
  private child: ChildProcess | null = null;
  private port = 0;
  private routes = new Map<string, EdgeRoute>();
  /** Lines HAProxy's master printed after a reload, awaited by `reload`. */
  private loaded: Array<(ok: boolean, line: string) => void> = [];
  private reloading: Promise<void> = Promise.resolve();
  private pendingApply: Map<string, EdgeRoute> | null = null;
  private closed = false;
  /**
   * Where HAProxy's log lines come in: its log ring forwards them in batches over TCP on
   * loopback (far fewer writes than a line at a time on its stdout). Each line carries this edge's
   * secret tag: a line without it (anyone on the host can connect) is ignored.
   */
  private logServer: net.Server | null = null;
  private logPort = 0;
  private readonly tag = `HATCHERY-EDGE-${randomBytes(12).toString('hex')}`;
  /** HAProxy's last alert, for the error when it does not start. */
  private lastAlert = '';
  /** Whether replicas are reached in their own network namespaces (decided at start). */
  private namespaces = false;
  /** The names this edge gave namespaces (links in NAMED_NETNS_DIR). */
  private readonly named = new Set<string>();

  constructor(private readonly opts: EdgeOptions) {}

  get adminSocket(): string {
    return path.join(this.dir, 'admin.sock');
  }

  /** Starts HAProxy with no host promoted; resolves with the public URL once it serves. */
  async start(): Promise<string> {
    this.dir = mkdtempSync(path.join(tmpdir(), 'hatchery-edge-'));
    this.port = this.opts.port === 0 ? await freePort(this.opts.host) : this.opts.port;
    for (const [status, title, code, detail] of PROBLEMS) {
      const body = JSON.stringify({ type: `https://hatchery.run/problems/${code}`, title, status, code, detail });
      writeFileSync(
        path.join(this.dir, `${status}.http`),
        `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json\r\ncache-control: no-store\r\n` +
          `${status === 503 ? 'retry-after: 5\r\n' : ''}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
    const logServer = net.createServer((socket) => {
      // A connection reset when HAProxy goes must not throw.
      socket.on('error', () => undefined);
      eachLine(socket, (line) => this.onLogLine(line));
    });
    this.logServer = logServer;
    await new Promise<void>((done, fail) => logServer.once('error', fail).listen(0, '127.0.0.1', () => done()));
    this.logPort = (logServer.address() as net.AddressInfo).port;
    this.namespaces = this.opts.namespaces === true && mayEnterNamespaces() && haproxyHasNamespaces(this.opts.bin);
    if (this.namespaces) sweepDeadLinks();
    this.write(new Map());
    await this.spawnChild();
    return `http://${this.opts.host === '0.0.0.0' || this.opts.host === '::' ? '127.0.0.1' : this.opts.host}:${this.port}`;
  }

  /** Starts HAProxy's master on the configuration written last; resolves once its worker serves. */
  private async spawnChild(): Promise<void> {
    const child = spawn(this.opts.bin, ['-W', '-db', '-S', `${path.join(this.dir, 'master.sock')},mode,600`, '-f', path.join(this.dir, 'haproxy.cfg')], {
      // Its log lines come through the ring (logServer); stderr carries the master's notices.
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    this.lastAlert = '';
    const started = new Promise<void>((done, fail) => {
      child.once('error', (err) =>
        fail(new Error(`the router's edge could not start ${this.opts.bin}: ${err.message} (install HAProxy, or HATCHERY_ROUTER_EDGE=node)`)),
      );
      this.loaded.push((ok, line) => (ok ? done() : fail(new Error(`HAProxy did not start: ${line}`))));
      child.once('exit', (code) => fail(new Error(`HAProxy exited with code ${code} as it started${this.lastAlert ? `: ${this.lastAlert}` : ''}`)));
    });
    createInterface({ input: child.stderr })
      .on('line', (line) => this.onMasterLine(line))
      .on('error', () => undefined);
    let serving = false;
    child.on('exit', (code, signal) => {
      for (const waiting of this.loaded.splice(0)) waiting(false, `exited (${code ?? signal})`);
      if (this.closed || !serving) return;
      // Started once, then gone (killed, crashed): started again on the routes it had, after a moment (written again: a
      // replica's namespace may be gone meanwhile, and HAProxy does not start on a namespace it cannot open).
      this.opts.log.error({ code, signal }, 'router: HAProxy exited; starting it again');
      setTimeout(() => {
        if (this.closed) return;
        this.write(this.routes);
        this.spawnChild().catch((err: unknown) => this.opts.log.error({ err }, 'router: HAProxy did not start again; requests to the router fail'));
      }, 500).unref();
    });
    await started;
    serving = true;
  }

  /** The hosts HAProxy serves itself now. */
  current(): ReadonlyMap<string, EdgeRoute> {
    return this.routes;
  }

  /**
   * Serves exactly these hosts from now on (each already lower-cased, without a port). Calls made
   * while a reload runs are folded into one more reload after it.
   */
  apply(routes: Map<string, EdgeRoute>): Promise<void> {
    const first = this.pendingApply === null;
    this.pendingApply = routes;
    if (!first) return this.reloading;
    this.reloading = this.reloading.then(async () => {
      const next = this.pendingApply!;
      this.pendingApply = null;
      if (this.closed || sameRoutes(next, this.routes)) return;
      this.write(next);
      this.routes = next;
      await this.reload();
    });
    return this.reloading;
  }

  /**
   * Open connections per deployment (WebSockets, requests in flight), from the statistics of
   * every HAProxy worker: the current one and those a reload left finishing their connections
   * (a WebSocket opened before a reload lives on in the old worker).
   */
  async busy(): Promise<Map<string, number>> {
    const master = path.join(this.dir, 'master.sock');
    const workers = [...(await this.admin('show proc', master)).matchAll(/^(\d+)\s+worker\b/gm)].map((m) => m[1]);
    const found = new Map<string, number>();
    for (const pid of workers) {
      const csv = await this.admin(`@!${pid} show stat -1 2 -1`, master);
      for (const row of csv.split('\n')) {
        const [pxname, svname, , , scur] = row.split(',');
        if (svname !== 'BACKEND' || !pxname?.startsWith(BACKEND_PREFIX) || !(Number(scur) > 0)) continue;
        const id = pxname.slice(BACKEND_PREFIX.length);
        found.set(id, (found.get(id) ?? 0) + Number(scur));
      }
    }
    return found;
  }

  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      child.kill('SIGUSR1'); // soft stop: requests in flight finish
      const hard = setTimeout(() => child.kill('SIGTERM'), 2000);
      await exited;
      clearTimeout(hard);
    }
    if (this.logServer) await new Promise<void>((done) => this.logServer!.close(() => done()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    for (const name of this.named) rmSync(path.join(NAMED_NETNS_DIR, name), { force: true });
    this.named.clear();
  }

  /**
   * Reloads HAProxy and waits until its new worker serves. A reload signalled while the master is
   * still finishing the previous one can go unheard: signalled again after a while if so.
   */
  private async reload(): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const child = this.child;
      if (!child || child.exitCode !== null || this.closed) return;
      let heard: (ok: boolean, line: string) => void = () => undefined;
      const result = new Promise<{ ok: boolean; line: string } | null>((done) => {
        heard = (ok, line) => done({ ok, line });
        this.loaded.push(heard);
        setTimeout(() => done(null), 500 * (attempt + 1)).unref();
      });
      child.kill('SIGUSR2');
      const outcome = await result;
      if (outcome === null) {
        this.loaded = this.loaded.filter((waiting) => waiting !== heard);
        continue;
      }
      if (!outcome.ok) this.opts.log.error({ line: outcome.line }, 'router: HAProxy refused its new routes; it keeps the previous ones');
      // The master goes on settling a moment after it says so: a signal then would go unheard.
      await sleep(100);
      return;
    }
    this.opts.log.error('router: HAProxy did not reload; it keeps the previous routes until the next change');
  }

  private onMasterLine(line: string): void {
    if (/Loading success/.test(line)) this.loaded.shift()?.(true, line);
    else if (/Loading failure|\[ALERT\]/.test(line)) {
      if (/\[ALERT\]/.test(line)) this.lastAlert = line.replace(/^.*?\[ALERT\]\s*(\(\d+\)\s*:\s*)?/, '');
      if (/Loading failure/.test(line)) this.loaded.shift()?.(false, line);
      this.opts.log.warn({ line }, 'router: HAProxy');
    }
  }

  /** `<tag> <backend> <server> <status> <ms> <method> <path>` (one for each request: read without splitting it into an array) */
  private onLogLine(line: string): void {
    const at = line.indexOf(this.tag);
    if (at < 0) return;
    let from = at + this.tag.length + 1;
    const field = (): string | null => {
      const end = line.indexOf(' ', from);
      if (end < 0) return null;
      const value = line.slice(from, end);
      from = end + 1;
      return value;
    };
    const backend = field();
    const server = field();
    const status = field();
    const ms = field();
    if (backend === null || server === null || status === null || ms === null || backend === '') return;
    const end = line.indexOf(' ', from);
    const method = end < 0 ? line.slice(from) : line.slice(from, end);
    if (!method) return;
    this.opts.onRequest({
      // What went to the Node router (the fallback, or a promoted egg's backup server) is logged there.
      deploymentId: backend.startsWith(BACKEND_PREFIX) && server !== 'node' ? backend.slice(BACKEND_PREFIX.length) : null,
      status: Number(status),
      ms: Math.max(0, Number(ms)),
      method,
      path: end < 0 ? '' : line.slice(end + 1),
    });
  }

  private admin(command: string, socketPath = this.adminSocket): Promise<string> {
    return new Promise((done, fail) => {
      const socket = net.connect(socketPath);
      let out = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (out += chunk));
      socket.on('end', () => done(out));
      socket.on('error', fail);
      socket.setTimeout(2000, () => socket.destroy(new Error('HAProxy admin socket timed out')));
      socket.end(`${command}\n`);
    });
  }

  /** Writes the configuration and the map for these routes (swapped in whole, never half-written). */
  private write(routes: Map<string, EdgeRoute>): void {
    // Hosts come from requests (resolved by the Node router first): nothing but a plain host name reaches the map.
    const map = [...routes]
      .filter(([host]) => /^[a-z0-9.-]+$/.test(host))
      .map(([host, r]) => `${host} ${backendOf(r.deploymentId)}`)
      .join('\n');
    const deployments = new Map<string, Endpoint[]>();
    for (const r of routes.values()) deployments.set(r.deploymentId, r.endpoints);
    /** The namespace names this configuration uses: the others this edge made go once it is written. */
    const used = new Set<string>();
    const backends = [...deployments].map(([id, endpoints]) =>
      [
        `backend ${backendOf(id)}`,
        '  balance roundrobin',
        '  http-reuse safe',
        '  retries 2',
        '  retry-on conn-failure empty-response',
        '  option redispatch 1',
        // A replica that fails is out of rotation (checked again every 250 ms); with none left the Node router waits for the egg, as without the edge.
        ...endpoints.map(
          (e, i) => `  server r${i} ${this.addressOf(e, used)} check inter 10s downinter 250ms fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down`,
        ),
        `  server node 127.0.0.1:${this.opts.fallbackPort} backup`,
      ].join('\n'),
    );
    const file = (name: string) => path.join(this.dir, name);
    const cfg = [
      'global',
      '  nbthread 1',
      '  log ring@requests local0 info',
      `  stats socket ${file('admin.sock')} mode 600 level admin`,
      '  hard-stop-after 1h',
      'defaults',
      '  mode http',
      '  log global',
      '  option dontlognull',
      // Also the pause before a retry on the same server (min(this, 1 s)): a connection on loopback either opens at once or not at all.
      '  timeout connect 100ms',
      '  timeout client 60s',
      '  timeout server 300s',
      '  timeout tunnel 24h',
      // Once either side of a connection closed, the other has this long to finish (an egg that never closes its end of a WebSocket would keep it open, and the egg awake, for a day).
      '  timeout client-fin 5s',
      '  timeout server-fin 5s',
      '  timeout http-keep-alive 5s',
      '  timeout http-request 60s',
      ...PROBLEMS.map(([status]) => `  errorfile ${status} ${file(`${status}.http`)}`),
      'frontend router',
      `  bind ${this.opts.host}:${this.port}`,
      `  log-format "${this.tag} %b %s %ST %Ta %HM %HPO"`,
      // What the Node router's proxy adds: the client's address, and the port, scheme and host it asked for.
      '  option forwardfor',
      '  acl host_port req.hdr(host) -m reg :[0-9]+$',
      '  http-request add-header X-Forwarded-Port %[req.hdr(host),field(2,:)] if host_port',
      '  http-request add-header X-Forwarded-Port 80 unless host_port',
      '  http-request add-header X-Forwarded-Proto http',
      '  http-request set-header X-Forwarded-Host %[req.hdr(host)] unless { req.hdr(x-forwarded-host) -m found }',
      `  use_backend %[req.hdr(host),field(1,:),lower,map(${file('hosts.map')},fallback)]`,
      'backend fallback',
      `  server node 127.0.0.1:${this.opts.fallbackPort}`,
      ...backends,
      'ring requests',
      '  format raw',
      '  maxlen 2048',
      // About 100,000 lines: a gateway busy for a moment loses none.
      '  size 4194304',
      '  timeout connect 1s',
      '  timeout server 30s',
      `  server gateway 127.0.0.1:${this.logPort}`,
      '',
    ].join('\n');
    const swap = (name: string, content: string) => {
      writeFileSync(file(`${name}.next`), content, { mode: 0o600 });
      renameSync(file(`${name}.next`), file(name));
    };
    swap('hosts.map', map ? `${map}\n` : '');
    swap('haproxy.cfg', cfg);
    // HAProxy holds the namespaces of the configuration it runs (it opened them as it read it): a link no configuration names can go.
    for (const name of [...this.named].filter((n) => !used.has(n))) {
      rmSync(path.join(NAMED_NETNS_DIR, name), { force: true });
      this.named.delete(name);
    }
  }

  /**
   * A server's address in HAProxy's terms: in the replica's own network namespace (on its
   * loopback) when that namespace is still the one the runtime saw, else the published port.
   */
  private addressOf(e: Endpoint, used: Set<string>): string {
    const inside = e.inside;
    if (!this.namespaces || !inside || netnsOf(inside.pid) !== inside.netns) return `${e.host}:${e.port}`;
    // HAProxy opens a namespace by name (NAMED_NETNS_DIR/<name>): a link to the process's own, named after this edge and the pid.
    const name = `hatchery-${this.tag.slice(-8).toLowerCase()}-${inside.pid}`;
    const link = path.join(NAMED_NETNS_DIR, name);
    const target = `/proc/${inside.pid}/ns/net`;
    try {
      if (linkTarget(link) !== target) {
        mkdirSync(NAMED_NETNS_DIR, { recursive: true });
        rmSync(link, { force: true });
        symlinkSync(target, link);
      }
      this.named.add(name);
    } catch (err) {
      this.opts.log.warn({ err }, 'router: a replica cannot be reached in its own network namespace; HAProxy uses its published port');
      return `${e.host}:${e.port}`;
    }
    used.add(name);
    return `127.0.0.1:${inside.port} namespace ${name}`;
  }
}

function sameRoutes(a: ReadonlyMap<string, EdgeRoute>, b: ReadonlyMap<string, EdgeRoute>): boolean {
  if (a.size !== b.size) return false;
  for (const [host, r] of a) {
    const o = b.get(host);
    if (!o || o.deploymentId !== r.deploymentId || !sameEndpoints(o.endpoints, r.endpoints)) return false;
  }
  return true;
}

/** The same replicas at the same places (published port, and namespace if known). */
export function sameEndpoints(a: readonly Endpoint[], b: readonly Endpoint[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (e, i) =>
        e.host === b[i].host &&
        e.port === b[i].port &&
        e.inside?.pid === b[i].inside?.pid &&
        e.inside?.netns === b[i].inside?.netns &&
        e.inside?.port === b[i].inside?.port,
    )
  );
}

/**
 * Removes the namespace links of edges whose process is gone (a gateway killed before it could
 * remove its own): a link to no namespace serves no one, and an edge that needs one makes it again.
 */
function sweepDeadLinks(): void {
  let names: string[];
  try {
    names = readdirSync(NAMED_NETNS_DIR);
  } catch {
    return;
  }
  for (const name of names) {
    if (!/^hatchery-[0-9a-f]{8}-\d+$/.test(name)) continue;
    const link = path.join(NAMED_NETNS_DIR, name);
    if (linkTarget(link) !== null && !existsSync(link)) rmSync(link, { force: true });
  }
}

/** Is this HAProxy built with network namespace support (`namespace` on a server line)? */
export function haproxyHasNamespaces(bin: string): boolean {
  try {
    return /Built with network namespace support/.test(execFileSync(bin, ['-vv'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return false;
  }
}
