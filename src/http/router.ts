import http, { IncomingMessage, ServerResponse } from 'node:http';
import { Duplex, Readable } from 'node:stream';
import { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProxyServer } from 'http-proxy-3';
import type { Logger } from '../log';
import type { Metrics } from '../metrics';
import { parseHostLabel } from '../modules/apps/hosts';
import type { DeploymentsService, EggRoute } from '../modules/deployments/deployments.service';
import type { Endpoint, Runtime } from '../runtime/runtime.port';
import { EdgeRoute, HaproxyEdge, sameEndpoints } from './edge';

export interface RouterOptions {
  appsDomain: string;
  deployments: Pick<DeploymentsService, 'route' | 'wakeForRequest' | 'touch' | 'stillRouted' | 'supervisor'>;
  runtime: Runtime;
  log: Logger;
  metrics?: Pick<Metrics, 'routerRequest' | 'routerEdgeHosts'>;
  /** How long a request waits for its egg to listen (a restart, a rollback, a crash's backoff) before a 503. */
  waitMs?: number;
  /** How long a sleeping egg may take to wake and listen. */
  wakeTimeoutMs?: number;
  /** How long what a host resolved to (an awake egg's live deployment) is reused before it is read again; 0: every request reads it. */
  routeCacheMs?: number;
  /**
   * HAProxy in front (`bin`: its executable): hosts resolved to an awake egg are served by it
   * directly, everything else by this router behind it (src/http/edge.ts). Needs routeCacheMs > 0.
   */
  edge?: { bin: string; idleMs?: number; namespaces?: boolean };
}

export interface Router {
  listen(port: number, host: string): Promise<string>;
  close(): Promise<void>;
}

/** What a request goes to: an egg's deployment (its requests are logged and keep it awake), or a preview. */
type Target =
  /** `fresh`: the route was read for this request, not reused: only such a route is handed to the edge. */
  { kind: 'egg'; route: EggRoute & { kind: 'egg' }; deploymentId: string; fresh: boolean } | { kind: 'preview'; slug: string; previewId: string };

type Problem = { status: number; code: string; title: string; detail: string; retryAfter?: number };

const problem = (status: number, code: string, title: string, detail: string, retryAfter?: number): Problem => ({ status, code, title, detail, retryAfter });

/** A request with no body can be sent again after a connection that failed before any answer. */
function bodiless(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}

/**
 * The second listener: requests to eggs, routed by `Host` under the apps domain to the container
 * of the deployment that runs for it (src/modules/apps/hosts.ts names the hosts), WebSockets
 * included. A request to a sleeping egg wakes it and waits until it listens; one to an egg
 * restarting waits a little; one to nothing live is a 503 with Retry-After. Each proxied request
 * becomes one runtime log line of its deployment (`GET /path 200 12ms`), written by whichever
 * gateway runs it.
 */
export function createRouter(opts: RouterOptions): Router {
  const suffix = `.${opts.appsDomain.toLowerCase()}`;
  const waitMs = opts.waitMs ?? 10_000;
  const routeCacheMs = opts.routeCacheMs ?? 250;
  // Connections to eggs are kept open between requests: a new one per request (through the
  // Engine's proxy of the published port) cost more than the rest of the request together. An idle
  // one is closed after a second, or sooner if the egg announces less (Keep-Alive: timeout=…).
  // Behind the edge, HAProxy has added the X-Forwarded headers already.
  const proxy = new ProxyServer({ xfwd: !opts.edge, agent: new http.Agent({ keepAlive: true, timeout: 1000 }) });
  // Errors are answered where each request is proxied; this keeps a stray one from crashing the process.
  proxy.on('error', (err) => opts.log.debug({ err }, 'router: proxy error'));
  /** Requests whose current attempt went out on a connection kept open from an earlier request. */
  const reused = new WeakSet<IncomingMessage>();
  proxy.on('proxyReq', (proxyReq, req) => {
    if (proxyReq.reusedSocket) reused.add(req);
  });
  const endpoints = new Map<string, { at: number; endpoints: Endpoint[] }>();
  const waking = new Map<string, Promise<Endpoint | null>>();
  /** Replicas whose connection failed lately, by `host:port`: out of rotation until the time given. */
  const down = new Map<string, number>();
  const keyOf = (e: Endpoint) => `${e.host}:${e.port}`;
  let turn = 0;
  /** The next replica in turn among those not taken out of rotation (all of them, if every one was). */
  function pick(list: Endpoint[]): Endpoint | null {
    const now = Date.now();
    const up = list.filter((e) => (down.get(keyOf(e)) ?? 0) <= now);
    const from = up.length > 0 ? up : list;
    return from.length > 0 ? from[turn++ % from.length] : null;
  }
  // Deployments that served requests since the last flush, and open WebSockets per deployment.
  const touched = new Set<string>();
  const sockets = new Map<string, number>();

  /**
   * Hosts resolved lately to an awake egg's live deployment, by host: reading that for every
   * request was most of the router's work per request. A deploy, rollback or deletion reaches the
   * router within routeCacheMs (a superseded container drains longer than that); a request that
   * fails drops its deployment's entries at once; a sleeping egg is always read afresh.
   */
  const routes = new Map<string, { at: number; route: EggRoute }>();

  /** The deployments with connections open through the edge at its last reading (kept when a reading fails). */
  let edgeOpen = new Map<string, number>();
  const flush = setInterval(() => {
    for (const [host, cached] of routes) if (Date.now() - cached.at >= routeCacheMs) routes.delete(host);
    void (async () => {
      // Connections open through the edge (WebSockets, long requests) keep their eggs awake, as those through this router do.
      // A reading that fails (HAProxy busy, reloading) counts what the last one saw: an open WebSocket must not let its egg sleep.
      const open = edge ? (edgeOpen = await edge.busy().catch(() => edgeOpen)) : new Map<string, number>();
      for (const id of open.keys()) if (edgeSeen.has(id)) edgeSeen.set(id, Date.now());
      const ids = [...new Set([...touched, ...sockets.keys(), ...open.keys()])];
      touched.clear();
      await opts.deployments.touch(ids);
    })().catch((err: unknown) => opts.log.warn({ err }, 'router: recording activity failed'));
  }, 1000);
  flush.unref();

  /** HAProxy in front, once listening; the hosts promoted to it (served by it directly), by host. */
  let edge: HaproxyEdge | null = null;
  const promoted = new Map<string, EdgeRoute>();
  let promotedEndpointsAt = Date.now();
  /**
   * When HAProxy last passed a request to each promoted deployment, or held a connection to it
   * open: a host idle for edgeIdleMs (a minute by default) is given back to this router, so that what HAProxy serves (and
   * what is checked every 2 s) stays the eggs in use.
   */
  const edgeSeen = new Map<string, number>();
  const edgeIdleMs = opts.edge?.idleMs ?? 60_000;
  const pushEdge = () => {
    const to = edge;
    if (!to) return;
    // The gauge says what HAProxy serves once it has reloaded, not what it is about to.
    void to
      .apply(new Map(promoted))
      .then(() => opts.metrics?.routerEdgeHosts(to.current().size))
      .catch((err: unknown) => opts.log.error({ err }, 'router: updating the edge failed'));
  };
  /** After a request this router passed to an awake egg: its host is served by the edge from now on. */
  function promote(host: string, deploymentId: string): void {
    if (!edge || routeCacheMs <= 0 || promoted.get(host)?.deploymentId === deploymentId) return;
    const cached = endpoints.get(deploymentId);
    if (!cached || cached.endpoints.length === 0) return;
    promoted.set(host, { deploymentId, endpoints: cached.endpoints });
    edgeSeen.set(deploymentId, Date.now());
    pushEdge();
  }
  /** The edge stops serving the deployment's hosts: their requests come here again. */
  function demote(deploymentId: string): void {
    let changed = false;
    for (const [host, r] of promoted) if (r.deploymentId === deploymentId) changed = promoted.delete(host) || changed;
    if (changed) pushEdge();
  }
  /**
   * Every routeCacheMs, what the edge serves is checked as a cached route would be read again: a
   * deployment no longer current, LIVE and awake is demoted (one statement for all); every 2 s its
   * replicas are read again from the runtime, as this router's own endpoints are.
   */
  let checking = false;
  const check = setInterval(
    () => {
      if (!edge || promoted.size === 0 || checking) return;
      checking = true;
      void (async () => {
        const ids = [...new Set([...promoted.values()].map((r) => r.deploymentId))];
        const still = await opts.deployments.stillRouted(ids);
        for (const id of ids) if (Date.now() - (edgeSeen.get(id) ?? Date.now()) > edgeIdleMs) still.delete(id);
        // (What was promoted while the statement ran is kept.)
        const promotedNow = new Set([...promoted.values()].map((r) => r.deploymentId));
        for (const id of edgeSeen.keys()) if (!promotedNow.has(id)) edgeSeen.delete(id);
        const refresh = Date.now() - promotedEndpointsAt >= 2000;
        const found = new Map<string, Endpoint[]>();
        if (refresh) {
          promotedEndpointsAt = Date.now();
          for (const id of ids) if (still.has(id)) found.set(id, await opts.runtime.endpoints(id));
        }
        let changed = false;
        for (const [host, r] of promoted) {
          const now = found.get(r.deploymentId);
          if (!still.has(r.deploymentId) || (now && now.length === 0)) {
            changed = promoted.delete(host) || changed;
            // This router reads the host afresh too, rather than reusing what it resolved to.
            routes.delete(host);
          } else if (now && !sameEndpoints(now, r.endpoints)) {
            promoted.set(host, { deploymentId: r.deploymentId, endpoints: now });
            changed = true;
          }
        }
        if (changed) pushEdge();
      })()
        .catch((err: unknown) => opts.log.warn({ err }, 'router: checking the edge routes failed'))
        .finally(() => (checking = false));
    },
    Math.max(routeCacheMs, 50),
  );
  check.unref();

  /** The request's host, lower-cased, without its port. */
  const hostOf = (req: IncomingMessage) => (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');

  /** What the host names, or the problem to answer instead. */
  async function resolve(req: IncomingMessage): Promise<Target | Problem> {
    const host = hostOf(req);
    const label = host.endsWith(suffix) ? host.slice(0, -suffix.length) : null;
    const target = label && !label.includes('.') ? parseHostLabel(label) : null;
    if (!target) return problem(404, 'not_found', 'Not Found', `no egg is served at ${host || '(no Host header)'}: hosts are <egg>${suffix}`);
    const cached = routes.get(host);
    const fresh = !(cached && Date.now() - cached.at < routeCacheMs);
    const route = fresh ? await opts.deployments.route(target) : cached.route;
    if (route !== cached?.route) {
      if (routeCacheMs > 0 && route?.kind === 'egg' && route.deploymentId && !route.asleep) routes.set(host, { at: Date.now(), route });
      else routes.delete(host);
    }
    if (!route) return problem(404, 'not_found', 'Not Found', `no egg, deployment or preview has the host ${host}`);
    const simulated = problem(
      503,
      'service_unavailable',
      'Service Unavailable',
      'this gateway runs the simulated runtime: no egg listens (HATCHERY_RUNTIME=docker)',
      60,
    );
    if (route.kind === 'preview') {
      if (opts.runtime.kind === 'simulated') return simulated;
      if (route.status === 'building') return problem(503, 'service_unavailable', 'Service Unavailable', `preview ${route.slug} is building`, 5);
      if (route.status === 'failed')
        return problem(503, 'service_unavailable', 'Service Unavailable', `preview ${route.slug} failed: ${route.failureReason ?? 'see the preview'}`);
      return { kind: 'preview', slug: route.slug, previewId: route.previewId };
    }
    if (!route.deploymentId) return problem(503, 'service_unavailable', 'Service Unavailable', route.detail ?? `${route.slug} has nothing live`, 5);
    if (opts.runtime.kind === 'simulated') return simulated;
    return { kind: 'egg', route, deploymentId: route.deploymentId, fresh };
  }

  /** Where the target listens now (waited for, for an egg): one of its replicas, in turn; or null. */
  async function endpointFor(target: Target, fresh: boolean): Promise<Endpoint | null> {
    if (target.kind === 'egg') return pick(await endpointOf(target.route, target.deploymentId, fresh));
    const cached = endpoints.get(target.previewId);
    if (!fresh && cached && Date.now() - cached.at < 2000) return pick(cached.endpoints);
    const found = await opts.runtime.previewEndpoint(target.previewId);
    if (found) endpoints.set(target.previewId, { at: Date.now(), endpoints: [found] });
    return found;
  }

  /** A replica's connection failed: out of rotation for a while, and the next lookup asks the runtime again. */
  function failed(target: Target, endpoint: Endpoint): void {
    down.set(keyOf(endpoint), Date.now() + 10_000);
    endpoints.delete(idOf(target));
    forgetRoute(target);
    for (const [key, until] of down) if (until < Date.now()) down.delete(key);
  }

  /** The hosts resolved to the target's deployment are looked up again on their next request. */
  function forgetRoute(target: Target): void {
    if (target.kind === 'egg') demote(target.deploymentId);
    for (const [host, cached] of routes) if (cached.route.kind === 'egg' && cached.route.deploymentId === idOf(target)) routes.delete(host);
  }

  /** The key under which the target's endpoint is cached: its deployment's or preview's id. */
  const idOf = (target: Target) => (target.kind === 'egg' ? target.deploymentId : target.previewId);

  /** Where the deployment's replicas listen: woken first if asleep; waited for a while if none listens yet. */
  async function endpointOf(route: EggRoute & { kind: 'egg' }, deploymentId: string, fresh: boolean): Promise<Endpoint[]> {
    const cached = endpoints.get(deploymentId);
    if (!fresh && cached && Date.now() - cached.at < 2000) return cached.endpoints;
    const deadline = Date.now() + waitMs;
    let asleep = route.asleep;
    for (;;) {
      const woken = asleep ? await wake(deploymentId) : null;
      const found = woken ? [woken] : asleep ? [] : await opts.runtime.endpoints(deploymentId);
      if (found.length > 0) {
        endpoints.set(deploymentId, { at: Date.now(), endpoints: found });
        return found;
      }
      if (Date.now() >= deadline) return [];
      await sleep(200);
      // It may have gone to sleep meanwhile (its runner saw no request for a while).
      const again = await opts.deployments.route({ kind: 'app', slug: route.slug });
      if (again?.kind !== 'egg' || again.deploymentId !== deploymentId) return [];
      asleep = again.asleep;
    }
  }

  /** One wake per deployment at a time on this gateway; every request waiting for it shares it. */
  function wake(deploymentId: string): Promise<Endpoint | null> {
    let pending = waking.get(deploymentId);
    if (!pending) {
      pending = (async () => {
        const spec = await opts.deployments.wakeForRequest(deploymentId);
        return spec ? opts.runtime.wake(spec, AbortSignal.timeout(opts.wakeTimeoutMs ?? 60_000)) : null;
      })().finally(() => waking.delete(deploymentId));
      waking.set(deploymentId, pending);
    }
    return pending;
  }

  /** The deployment's runtime line for a request passed to it, `GET /path 200 12ms` (the path without its query: it may hold secrets). */
  function logRequest(deploymentId: string, req: IncomingMessage, status: number, started: number): void {
    const path = (req.url ?? '/').split('?')[0].slice(0, 200);
    opts.metrics?.routerRequest('node', status);
    opts.deployments.supervisor.runtimeLine(deploymentId, `${req.method} ${path} ${status} ${Math.round(performance.now() - started)}ms`, new Date());
  }

  function sendProblem(res: ServerResponse, p: Problem): void {
    if (res.headersSent) return void res.destroy();
    const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
    if (p.retryAfter !== undefined) headers['retry-after'] = String(p.retryAfter);
    res.writeHead(p.status, headers);
    res.end(JSON.stringify({ type: `https://hatchery.run/problems/${p.code}`, title: p.title, status: p.status, code: p.code, detail: p.detail }));
  }

  async function web(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const target = await resolve(req);
    if ('status' in target) return sendProblem(res, target);
    const slug = target.kind === 'egg' ? target.route.slug : target.slug;
    if (target.kind === 'egg') {
      const { deploymentId } = target;
      res.once('close', () => logRequest(deploymentId, req, res.statusCode, started));
      touched.add(deploymentId);
    }
    const retry = bodiless(req);
    const retryUntil = Date.now() + waitMs;
    for (let attempt = 0; ; attempt++) {
      const endpoint = await endpointFor(target, attempt > 0);
      if (!endpoint) return sendProblem(res, problem(503, 'service_unavailable', 'Service Unavailable', `${slug} is not listening; try again shortly`, 5));
      let onClose: () => void = () => undefined;
      const error = await new Promise<Error | null>((done) => {
        onClose = () => done(null);
        res.once('close', onClose);
        // A body-less request is sent from an empty stream, so it can be sent again.
        const buffer = retry ? Readable.from([]) : undefined;
        reused.delete(req);
        proxy.web(req, res, { target: `http://${endpoint.host}:${endpoint.port}`, buffer }, (err) => done(err));
      });
      res.off('close', onClose);
      if (!error) {
        if (target.kind === 'egg' && target.fresh && res.statusCode < 500) promote(hostOf(req), target.deploymentId);
        return;
      }
      // A kept-open connection the egg closed just as the request went out on it says nothing of
      // the egg: sent again at once, on a new connection.
      const stale = reused.has(req);
      if (!stale) failed(target, endpoint);
      // Either way the route is read again next time: the egg may have been replaced.
      else forgetRoute(target);
      // A replica that failed, or a container restarted or replaced between the lookup and the
      // connect (a restart, a crash's backoff): another replica at once, then again for a while,
      // backing off from 100 ms to a second.
      if (retry && !res.headersSent && !req.destroyed && Date.now() < retryUntil) {
        // The proxy adds an error listener to the request and a close listener to the response per
        // attempt: a dozen attempts at most.
        req.setMaxListeners(32);
        res.setMaxListeners(32);
        if (attempt > 0 && !stale) await sleep(Math.min(1000, 100 * 2 ** (attempt - 1)));
        continue;
      }
      return sendProblem(res, problem(502, 'bad_gateway', 'Bad Gateway', `${slug} did not answer: ${error.message}`));
    }
  }

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const resolved = await resolve(req);
    const refuse = (p: Problem) => {
      socket.end(
        `HTTP/1.1 ${p.status} ${p.title}\r\ncontent-type: application/problem+json\r\nconnection: close\r\n\r\n${JSON.stringify({ status: p.status, code: p.code, detail: p.detail })}`,
      );
    };
    if ('status' in resolved) return refuse(resolved);
    const target = resolved;
    const endpoint = await endpointFor(target, false);
    if (!endpoint)
      return refuse(
        problem(
          503,
          'service_unavailable',
          'Service Unavailable',
          `${target.kind === 'egg' ? target.route.slug : target.slug} is not listening; try again shortly`,
        ),
      );
    if (target.kind === 'egg') {
      const { deploymentId } = target;
      const started = performance.now();
      sockets.set(deploymentId, (sockets.get(deploymentId) ?? 0) + 1);
      socket.once('close', () => {
        const left = (sockets.get(deploymentId) ?? 1) - 1;
        if (left > 0) sockets.set(deploymentId, left);
        else sockets.delete(deploymentId);
        touched.add(deploymentId);
        logRequest(deploymentId, req, 101, started);
      });
    }
    if (target.kind === 'egg' && target.fresh) promote(hostOf(req), target.deploymentId);
    proxy.ws(req, socket, head, { target: `http://${endpoint.host}:${endpoint.port}` }, () => {
      failed(target, endpoint);
      socket.destroy();
    });
  }

  const server = http.createServer((req, res) => {
    web(req, res).catch((err: unknown) => {
      opts.log.error({ err }, 'router: request failed');
      sendProblem(res, problem(500, 'internal_error', 'Internal Server Error', 'the router failed to serve this request'));
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    upgrade(req, socket, head).catch((err: unknown) => {
      opts.log.error({ err }, 'router: upgrade failed');
      socket.destroy();
    });
  });

  return {
    async listen(port, host) {
      // Behind the edge this router listens on loopback only, on a port of its own.
      const [ownPort, ownHost] = opts.edge ? [0, '127.0.0.1'] : [port, host];
      await new Promise<void>((done, fail) => {
        server.once('error', fail);
        server.listen(ownPort, ownHost, () => {
          server.off('error', fail);
          done();
        });
      });
      const address = server.address() as AddressInfo;
      if (opts.edge) {
        const started = new HaproxyEdge({
          bin: opts.edge.bin,
          host,
          port,
          fallbackPort: address.port,
          log: opts.log,
          namespaces: opts.edge.namespaces,
          onRequest(r) {
            if (r.deploymentId === null) return;
            touched.add(r.deploymentId);
            if (edgeSeen.has(r.deploymentId)) edgeSeen.set(r.deploymentId, Date.now());
            opts.metrics?.routerRequest('edge', r.status);
            opts.deployments.supervisor.runtimeLine(r.deploymentId, `${r.method} ${r.path.slice(0, 200)} ${r.status} ${r.ms}ms`, new Date());
          },
        });
        try {
          const url = await started.start();
          edge = started;
          return url;
        } catch (err) {
          await started.close();
          await new Promise<void>((done) => server.close(() => done()));
          throw err;
        }
      }
      return `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${address.port}`;
    },
    async close() {
      clearInterval(flush);
      clearInterval(check);
      await edge?.close();
      edge = null;
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2000).unref();
      });
      const ids = [...touched];
      touched.clear();
      await opts.deployments.touch(ids).catch(() => undefined);
    },
  };
}
