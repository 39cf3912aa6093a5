import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type { FastifyInstance } from 'fastify';
import { ExecutionArgs, getOperationAST } from 'graphql';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { Tally, TallyMetric } from './metrics-tally';

export type WebhookOutcome = 'succeeded' | 'failed' | 'retry';

export interface QueueDepth {
  queue: string;
  state: string;
  count: number;
}

/** A graphql-ws server's per-connection context, as far as the metrics need it. */
interface WsContext {
  extra: object;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** `2xx` and the like, made once. */
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** `2xx` for 204: a status's class, as the metrics label it. */
function statusClassOf(status: number): string {
  const hundreds = Math.floor(status / 100);
  return STATUS_CLASSES[hundreds] ?? `${hundreds}xx`;
}
/** Operation names are chosen by clients: past this many distinct names, new ones count as `other`. */
const MAX_OPERATION_NAMES = 200;

const isAsyncIterable = (v: unknown): boolean => typeof v === 'object' && v !== null && Symbol.asyncIterator in v;

/**
 * The gateway's Prometheus metrics, on a registry of its own (several gateways can share a
 * process, as in the tests). Modules get this object and report what happened; the values that
 * are cheaper to read than to track (queue depth) are read at scrape time.
 */
export class Metrics {
  readonly registry = new Registry();
  /** What `hatchery_job_queue_depth` reads at scrape time; set while the job system runs. */
  queueDepths: (() => Promise<QueueDepth[]>) | null = null;
  private readonly operationNames = new Set<string>();
  private readonly subscriptions = new WeakMap<object, Set<string>>();
  /** When each graphql-ws operation of a connection was subscribed, for its latency. */
  private readonly wsStarts = new WeakMap<object, Map<string, number>>();

  // Counted on every request and operation: tallied by a key of their labels (see metrics-tally.ts).
  /** HTTP requests answered, by method, route template and status class: a counter and a histogram. */
  private readonly httpRequests = this.register(
    new Tally(SECONDS),
    (t) => t.counter('hatchery_http_requests_total', 'HTTP requests answered, by method, route template (unmatched for unknown paths) and status class.'),
    (t) =>
      t.histogram('hatchery_http_request_duration_seconds', 'Time from receiving an HTTP request to answering it, by method, route template and status class.'),
  );
  private readonly graphqlOperations = this.register(new Tally(), (t) =>
    t.counter(
      'hatchery_graphql_operations_total',
      'GraphQL operations, by operation name (anonymous when unnamed), type, transport (http, ws) and outcome (success, error).',
    ),
  );
  private readonly graphqlDuration = this.register(new Tally(SECONDS), (t) =>
    t.histogram(
      'hatchery_graphql_operation_duration_seconds',
      'Time to answer a GraphQL query or mutation (over HTTP or graphql-ws), by operation name and type.',
    ),
  );
  private readonly activeSubscriptions = new Gauge({
    name: 'hatchery_graphql_subscriptions_active',
    help: 'graphql-ws subscriptions currently streaming.',
    registers: [this.registry],
  });
  /** Messages sent since the last scrape, by delivery: counted as plain numbers (a busy log sends tens of thousands a second), added up when scraped. */
  private readonly sentSinceScrape = { direct: 0, loop: 0 };
  private readonly subscriptionMessages = new Counter({
    name: 'hatchery_graphql_subscription_messages_total',
    help: 'graphql-ws next messages sent, by delivery: direct (written as the event came, the subscriber keeping up) or loop (through graphql-ws: a replay, a subscriber lagging, a result with errors).',
    labelNames: ['delivery'] as const,
    registers: [this.registry],
    collect: () => {
      for (const delivery of ['direct', 'loop'] as const) {
        this.subscriptionMessages.inc({ delivery }, this.sentSinceScrape[delivery]);
        this.sentSinceScrape[delivery] = 0;
      }
    },
  });
  private readonly logLines = new Counter({
    name: 'hatchery_log_lines_total',
    help: 'Deployment log lines stored, by type (build, runtime).',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  private readonly jobFailures = new Counter({
    name: 'hatchery_job_failures_total',
    help: 'Job runs whose handler threw, by queue.',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });
  private readonly jobQueueDepth = new Gauge({
    name: 'hatchery_job_queue_depth',
    help: 'Jobs waiting (created, retry) or running (active), by queue and pg-boss state; read at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
    collect: async () => {
      const read = this.queueDepths;
      this.jobQueueDepth.reset();
      if (!read) return;
      try {
        for (const d of await read()) this.jobQueueDepth.set({ queue: d.queue, state: d.state }, d.count);
      } catch (err) {
        // The scrape still answers; the depth is just missing this time.
        this.onError(err);
      }
    },
  });
  /** One for each request routed (thousands a second through HAProxy): tallied, as the HTTP requests are. */
  private readonly routerRequests = this.register(new Tally(), (t) =>
    t.counter(
      'hatchery_router_requests_total',
      'Requests (WebSocket upgrades included) the router passed to eggs, by what served them (edge: HAProxy, node: the Node router) and status class.',
    ),
  );
  private readonly edgeHosts = new Gauge({
    name: 'hatchery_router_edge_hosts',
    help: 'Hosts HAProxy serves itself (HATCHERY_ROUTER_EDGE=haproxy); any other host goes to the Node router.',
    registers: [this.registry],
  });
  private readonly webhookDeliveries = new Counter({
    name: 'hatchery_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome (succeeded, failed: given up, retry: another attempt is scheduled) and event.',
    labelNames: ['outcome', 'event'] as const,
    registers: [this.registry],
  });

  constructor(
    opts: { defaultMetrics?: boolean } = {},
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    // Series that exist from the start, at 0, so that rate() sees their first increase.
    for (const type of ['build', 'runtime']) this.logLines.inc({ type }, 0);
    for (const via of ['edge', 'node']) this.routerRequests.start(`${via} 2xx`, { via, status_class: '2xx' });
    for (const event of ['deploy', 'ping']) for (const outcome of ['succeeded', 'failed', 'retry']) this.webhookDeliveries.inc({ outcome, event }, 0);
  }

  /** The text a scrape gets. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** Counts every answered request by its route template, and serves `GET /metrics` (no token, not logged below warn). */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', (req, reply, done) => {
      const { method } = req;
      const route = req.routeOptions.url ?? 'unmatched';
      const statusClass = statusClassOf(reply.statusCode);
      this.httpRequests.add(`${method} ${statusClass} ${route}`, () => ({ method, route, status_class: statusClass }), reply.elapsedTime / 1000);
      done();
    });
    // Scrapes come every few seconds: their request lines would drown the rest.
    app.get('/metrics', { logLevel: 'warn' }, async (_req, reply) => reply.type(this.registry.contentType).send(await this.scrape()));
  }

  /** A GraphQL operation over HTTP has been answered (`started`: `performance.now()` when it arrived). */
  httpOperation(name: string | null | undefined, type: string, failed: boolean, started: number): void {
    this.graphqlOperation(this.operationName(name), type, 'http', failed ? 'error' : 'success', (performance.now() - started) / 1000);
  }

  /** One GraphQL operation answered (or, streaming, started: `seconds` null, not timed). */
  private graphqlOperation(operation: string, type: string, transport: 'http' | 'ws', outcome: 'success' | 'error', seconds: number | null): void {
    // (Operation names are GraphQL names: a space cannot be in one.)
    this.graphqlOperations.add(`${operation} ${type} ${transport} ${outcome}`, () => ({ operation, type, transport, outcome }));
    if (seconds !== null) this.graphqlDuration.add(`${operation} ${type}`, () => ({ operation, type }), seconds);
  }

  /** Registers the tally's metrics (its counter, its histogram) in this registry. */
  private register(tally: Tally, ...metrics: Array<(t: Tally) => TallyMetric>): Tally {
    // prom-client's registry takes any object with a name and `get` (its own types name only its classes).
    for (const make of metrics) this.registry.registerMetric(make(tally) as unknown as Parameters<Registry['registerMetric']>[0]);
    return tally;
  }

  /** Apollo plugin: each GraphQL operation over HTTP, by name and type. */
  apolloPlugin<T extends BaseContext>(): ApolloServerPlugin<T> {
    return {
      requestDidStart: () => {
        const started = performance.now();
        return Promise.resolve({
          willSendResponse: (rc) => {
            const body = rc.response.body;
            const failed = body.kind === 'single' ? Boolean(body.singleResult.errors?.length) : Boolean(rc.errors?.length);
            this.httpOperation(rc.operationName ?? rc.request.operationName, rc.operation?.operation ?? 'unknown', failed, started);
            return Promise.resolve();
          },
        });
      },
    };
  }

  /** graphql-ws hooks: operations over the socket and the subscriptions streaming right now. */
  wsHooks() {
    const active = (ctx: WsContext) => {
      let ids = this.subscriptions.get(ctx.extra);
      if (!ids) this.subscriptions.set(ctx.extra, (ids = new Set()));
      return ids;
    };
    const starts = (ctx: WsContext) => {
      let m = this.wsStarts.get(ctx.extra);
      if (!m) this.wsStarts.set(ctx.extra, (m = new Map<string, number>()));
      return m;
    };
    return {
      /** Call from graphql-ws `onSubscribe`: the operation's clock starts. */
      subscribed: (ctx: WsContext, id: string): void => {
        starts(ctx).set(id, performance.now());
      },
      onOperation: (ctx: WsContext, id: string, _payload: unknown, args: ExecutionArgs, result: unknown): undefined => {
        const op = getOperationAST(args.document, args.operationName);
        const streaming = isAsyncIterable(result);
        const started = starts(ctx).get(id);
        starts(ctx).delete(id);
        const failed = !streaming && Boolean((result as { errors?: unknown[] }).errors?.length);
        const seconds = !streaming && started !== undefined ? (performance.now() - started) / 1000 : null;
        this.graphqlOperation(this.operationName(op?.name?.value), op?.operation ?? 'unknown', 'ws', failed ? 'error' : 'success', seconds);
        if (streaming && !active(ctx).has(id)) {
          active(ctx).add(id);
          this.activeSubscriptions.inc();
        }
        return undefined;
      },
      /** A `next` message went out: written directly, or through graphql-ws's loop. */
      sent: (direct: boolean): void => {
        if (direct) this.sentSinceScrape.direct++;
        else this.sentSinceScrape.loop++;
      },
      onComplete: (ctx: WsContext, id: string) => {
        if (active(ctx).delete(id)) this.activeSubscriptions.dec();
      },
      onClose: (ctx: WsContext) => {
        const ids = active(ctx);
        this.activeSubscriptions.dec(ids.size);
        ids.clear();
      },
    };
  }

  logLinesStored(type: string, count: number): void {
    if (count > 0) this.logLines.inc({ type }, count);
  }

  /** Makes a queue's failure series exist (at 0) before its first failure. */
  jobQueue(queue: string): void {
    this.jobFailures.inc({ queue }, 0);
  }

  jobFailed(queue: string): void {
    this.jobFailures.inc({ queue });
  }

  routerRequest(via: 'edge' | 'node', status: number): void {
    const statusClass = statusClassOf(status);
    this.routerRequests.add(`${via} ${statusClass}`, () => ({ via, status_class: statusClass }));
  }

  routerEdgeHosts(count: number): void {
    this.edgeHosts.set(count);
  }

  webhookDelivery(outcome: WebhookOutcome, event: string): void {
    this.webhookDeliveries.inc({ outcome, event });
  }

  private operationName(name: string | null | undefined): string {
    if (!name) return 'anonymous';
    if (this.operationNames.has(name)) return name;
    if (this.operationNames.size >= MAX_OPERATION_NAMES) return 'other';
    this.operationNames.add(name);
    return name;
  }
}
