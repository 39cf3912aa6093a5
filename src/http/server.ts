import { ApolloServer, ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { fastifyApolloDrainPlugin, fastifyApolloHandler } from '@as-integrations/fastify';
import Fastify, { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, LogController } from 'fastify';
import { ExecutionResult, GraphQLError, GraphQLFormattedError, GraphQLSchema, OperationTypeNode } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocket, WebSocketServer } from 'ws';
import { DomainError, RateLimited, ServiceUnavailable } from '../errors';
import { connectionAuthorization, ContextFactory } from '../graphql/build-context';
import { sharedSubscribe } from '../graphql/shared-execution';
import { Context } from '../graphql/context';
import { formatError, knownFailure, logUnexpected } from '../graphql/errors';
import { Logger, requestScope } from '../log';
import { JitExecutor } from '../graphql/jit';
import { Metrics } from '../metrics';
import { withRequestId } from '../graphql/request-id';
import { ERROR_HTTP, errorHeaders, sendProblem } from './problems';
import { GRAPHQL_PATH, sendRefusal } from './responses';
import { BillingService } from '../modules/billing/billing.service';
import { registerBilling } from './billing';
import { registerExplorer } from './explorer';
import { fastGraphQL } from './graphql-fast';
import { OperationGuard, OperationLimits } from '../graphql/limits';
import { checkedOperation, limitsPlugin, quietOversizedMessages, registerOperationLimits, wsLimits } from './limits';
import { operationIdGate } from './ws-operation-ids';
import { OperationRequest } from '../graphql/limits';
import { capConnectionsPerClient, clientErrorHandler, malformedRequest } from './connections';
import { ownMessageBuffers, sharedPayloads } from './ws-payloads';
import { sharedDocuments } from './ws-documents';
import { RateLimiter, RateLimiterOptions, rateLimited, registerRateLimit } from './rate-limit';
import { TrustProxy, trustFunction } from './client-ip';
import { within } from '../timeout';
import { randomHex } from '../ids';
import { Clock } from '../clock';
import { CLOSE_UNAUTHORIZED, WsSessions } from './ws-sessions';

export interface HttpDeps {
  schema: GraphQLSchema;
  buildContext: ContextFactory;
  log: Logger;
  keepAliveMs: number;
  billing: BillingService;
  /** This server's own base URL, once it listens. */
  selfUrl(): string;
  /** What /readyz reports. */
  ready: Readiness;
  metrics: Metrics;
  limits: HttpLimits;
  /** How long close() lets in-flight requests finish before it cuts their connections. */
  shutdownGraceMs: number;
  /**
   * Plugs more routes in (the REST layer, from app.ts), given what they need of this server: the
   * operation limits and the HTTP authentication (rate limits per account included).
   */
  mount?(app: FastifyInstance, tools: { guard: OperationGuard; authenticate(req: FastifyRequest, reply: FastifyReply): Promise<Context> }): void;
  /** What graphql-ws connections need to close when their token stops working. */
  sessions: { clock: Clock; events: EventTarget; liveTokens(ids: string[]): Promise<Set<string>> };
}

/** The parts /readyz checks; only the database is asked, the others say what they already know. */
export interface Readiness {
  /** Whether the database answers a query. */
  database(): Promise<boolean>;
  /** Whether events from the other gateways reach this one (the event bus is connected). */
  events(): boolean;
  /** Whether this gateway's job workers run; null when jobs are off here. */
  jobs(): boolean | null;
}

/** /readyz waits this long for the database, then says it is down. */
const READY_DB_TIMEOUT_MS = 1000;

/** Abuse limits (see config.ts). */
export interface HttpLimits {
  bodyLimitBytes: number;
  operations: OperationLimits;
  wsMaxSubscriptions: number;
  rateLimit: Omit<RateLimiterOptions, 'log'>;
  /** Whose X-Forwarded-For names the client, for per-IP limits over HTTP and graphql-ws. */
  trustProxy: TrustProxy;
  /** The whole request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** A connection with no bytes either way for this long is closed. */
  idleTimeoutMs: number;
  /** Open connections per client address (0: no cap); proxies named by trustProxy are not capped. */
  maxConnectionsPerIp: number;
}

/** The request line and headers must arrive within this (or the request timeout, if shorter). */
const HEADERS_TIMEOUT_MS = 10_000;

export interface HttpServer {
  app: FastifyInstance;
  /** Closes subscriptions, then lets in-flight requests finish. */
  close(): Promise<void>;
}

const requestId = () => `req_${randomHex(10)}`;

/** A subscription sent over HTTP is the client's mistake: say where subscriptions run. */
const subscriptionsOverWsOnly: ApolloServerPlugin<Context> = {
  requestDidStart() {
    return Promise.resolve({
      didResolveOperation({ operation }) {
        if (operation?.operation !== OperationTypeNode.SUBSCRIPTION) return Promise.resolve();
        return Promise.reject(
          new GraphQLError('Subscriptions run over graphql-ws on /graphql, not over HTTP', {
            extensions: { code: 'BAD_REQUEST', http: { status: ERROR_HTTP.BAD_REQUEST.status } },
          }),
        );
      },
    });
  },
};

/** An operation that failed because the database is unreachable answers 503 over HTTP, not 200. */
const unavailableStatus: ApolloServerPlugin<Context> = {
  requestDidStart() {
    return Promise.resolve({
      willSendResponse({ response }) {
        const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
        if (errors?.some((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE')) {
          response.http.status = ERROR_HTTP.SERVICE_UNAVAILABLE.status;
          for (const [name, value] of Object.entries(errorHeaders('SERVICE_UNAVAILABLE'))) response.http.headers.set(name, value);
        }
        return Promise.resolve();
      },
    });
  },
};

/**
 * One access line per request, once it is answered: `request completed` (or `request errored`)
 * with the request (method, URL, host, client address), the status and the time taken, at info.
 * Fastify's default also writes `incoming request` as one arrives: that line is at debug here
 * (half the lines, and half the logging work a request costs; `LOG_LEVEL=debug` shows
 * requests that never complete).
 */
export class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

export async function createHttpServer(deps: HttpDeps): Promise<HttpServer> {
  const trust = trustFunction(deps.limits.trustProxy);
  const app = Fastify({
    trustProxy: trust,
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- without it Fastify's instance type takes pino's logger and no longer fits FastifyInstance
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new AccessLog(),
    genReqId: () => requestId(),
    requestIdHeader: false,
    bodyLimit: deps.limits.bodyLimitBytes,
    // A client that sends its request slowly (a byte every few seconds) is cut off, not served
    // forever; the check runs every second, so a request is cut at most a second late.
    requestTimeout: deps.limits.requestTimeoutMs,
    connectionTimeout: deps.limits.idleTimeoutMs,
    http: { connectionsCheckingInterval: 1000, headersTimeout: Math.min(HEADERS_TIMEOUT_MS, deps.limits.requestTimeoutMs) },
    // What Node's HTTP parser refuses (bad headers, a request too slow) gets a problem body too.
    clientErrorHandler,
    // The router's own refusals get problem bodies too: a malformed URL (400), a path parameter
    // too long to name anything (404, not an undocumented 414).
    frameworkErrors: (err, _req, reply) => {
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      void sendProblem(reply, tooLong ? 'NOT_FOUND' : 'BAD_REQUEST', tooLong ? 'No such resource' : 'The URL is malformed');
    },
  });
  const guard = new OperationGuard(deps.schema, deps.limits.operations);
  const limiter = new RateLimiter({ ...deps.limits.rateLimit, log: deps.log });
  await limiter.start();

  capConnectionsPerClient(app.server, deps.limits.maxConnectionsPerIp, trust, deps.log);
  app.addHook('onRequest', (req, _reply, done) => requestScope.run({ reqId: req.id }, done));
  // A request the framework cannot make sense of (a malformed Host, a fragment in the target) is a 400.
  app.addHook('onRequest', async (req, reply) => {
    const problem = malformedRequest(req);
    if (problem) return sendRefusal(req, reply, 'BAD_REQUEST', problem);
  });
  deps.metrics.instrument(app); // request counts and latency per route; GET /metrics
  const rate = registerRateLimit(app, limiter);
  /** The caller of an HTTP request (REST or GraphQL), counted under their account. */
  const authenticateHttp = async (req: FastifyRequest, reply: FastifyReply): Promise<Context> => {
    const ctx = await deps.buildContext.authenticate(req.headers.authorization, req.id);
    await rate.authenticated(req, reply, ctx.actor.user.id);
    return ctx;
  };

  // JSON only: any other body type is a 415, including text/plain, which Fastify parses by default.
  app.removeContentTypeParser('text/plain');

  // Refusals before any resolver runs (bad JSON, wrong media type, too large, a domain error from
  // a hook) take the error shape of the endpoint: see sendRefusal.
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    if (err.statusCode === 415) return sendRefusal(req, reply, 'UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json');
    if (err.statusCode === 413) return sendRefusal(req, reply, 'PAYLOAD_TOO_LARGE', `The request body is larger than ${deps.limits.bodyLimitBytes} bytes`);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendRefusal(req, reply, 'BAD_REQUEST', err.code?.startsWith('FST_ERR_CTP') ? `The body is not valid JSON: ${err.message}` : err.message);
    }
    const known = knownFailure(err);
    if (known instanceof DomainError) return sendRefusal(req, reply, known.code, known.message, { errors: known.errors });
    return sendRefusal(req, reply, 'INTERNAL_SERVER_ERROR', 'internal error', { errorId: logUnexpected(err, deps.log) });
  });
  app.setNotFoundHandler((req, reply) => sendProblem(reply, 'NOT_FOUND', `No endpoint ${req.method} ${req.url.split('?')[0]}`));

  app.get('/healthz', (_req, reply) => reply.send({ status: 'ok' }));
  // One database check at a time: probes arriving while PostgreSQL hangs wait on the one in
  // flight (each at most READY_DB_TIMEOUT_MS) instead of piling up queries.
  let databaseCheck: Promise<boolean> | null = null;
  app.get('/readyz', async (_req, reply) => {
    databaseCheck ??= deps.ready
      .database()
      .catch(() => false)
      .finally(() => (databaseCheck = null));
    const database = await within(databaseCheck, READY_DB_TIMEOUT_MS, () => false);
    const events = deps.ready.events();
    const jobs = deps.ready.jobs();
    const ok = database && events && jobs !== false;
    const state = (up: boolean) => (up ? 'up' : 'down');
    return reply
      .code(ok ? 200 : 503)
      .send({ status: ok ? 'ok' : 'unavailable', database: state(database), events: state(events), jobs: jobs === null ? 'off' : state(jobs) });
  });

  /**
   * Every GraphQL error over HTTP names its request (`extensions.requestId`), those of a caller
   * refused before any operation ran (401, 429) included: the request scope has its id.
   */
  const format = (formatted: GraphQLFormattedError, error: unknown) => {
    const reqId = requestScope.getStore()?.reqId;
    return reqId ? withRequestId(formatError(formatted, error, deps.log), reqId) : formatError(formatted, error, deps.log);
  };

  /** What the operation limits checked for each HTTP request's context (see limitsPlugin). */
  const checked = new WeakMap<object, OperationRequest>(); // by the request's loaders, as `ranAlready` below
  const jit = new JitExecutor(deps.schema, guard.rules);
  /**
   * Results the fast path ran and hands to Apollo Server to answer (they have errors), taken once.
   * Keyed by the request's loaders: Apollo Server runs an operation with a shallow copy of the
   * context, which keeps them.
   */
  const ranAlready = new WeakMap<object, ExecutionResult>();
  const apollo = new ApolloServer<Context>({
    // The schema, each operation compiled once by graphql-jit where it can (src/graphql/jit.ts).
    gateway: jit.apolloGateway((context) => {
      const key = (context as Context).loaders;
      const result = ranAlready.get(key);
      ranAlready.delete(key);
      return result;
    }),
    formatError: format,
    includeStacktraceInErrorResponses: false,
    // Explicit: the explorer needs introspection, whatever NODE_ENV says.
    introspection: true,
    // Only full query texts, which the operation limits see before Apollo does.
    persistedQueries: false,
    // A request carrying Authorization (or a header Apollo names) is never a "simple" CORS request,
    // so no other site can make a browser send it: GET queries with a bearer token are served.
    csrfPrevention: { requestHeaders: ['authorization', 'x-apollo-operation-name', 'apollo-require-preflight'] },
    validationRules: guard.rules,
    plugins: [
      fastifyApolloDrainPlugin(app),
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints are set or used; the plugin would wrap every field resolver to look for them.
      ApolloServerPluginCacheControlDisabled(),
      deps.metrics.apolloPlugin(),
      subscriptionsOverWsOnly,
      unavailableStatus,
      limitsPlugin<Context>(guard, (ctx) => checked.get(ctx.loaders)),
    ],
    logger: { debug: () => undefined, info: () => undefined, warn: (m) => deps.log.warn(m), error: (m) => deps.log.error(m) },
  });
  await apollo.start();
  registerExplorer(app); // before the GraphQL route: it attaches to GET /graphql
  registerOperationLimits(app, guard);
  const makeContext = async (req: FastifyRequest, reply: FastifyReply): Promise<Context> => {
    try {
      const ctx = await authenticateHttp(req, reply);
      const operation = checkedOperation(req);
      if (operation) checked.set(ctx.loaders, operation);
      return ctx;
    } catch (err) {
      const known = knownFailure(err);
      if (!(known instanceof DomainError)) throw err;
      const headers = new Map(Object.entries(errorHeaders(known.code, known)));
      throw new GraphQLError(known.message, { extensions: { code: known.code, http: { status: ERROR_HTTP[known.code].status, headers } } });
    }
  };
  /** One context per request, whichever path asks first: a request the fast path leaves to Apollo Server is authenticated and counted once. */
  const httpContexts = new WeakMap<FastifyRequest, Promise<Context>>();
  const graphqlContext = (req: FastifyRequest, reply: FastifyReply): Promise<Context> => {
    let made = httpContexts.get(req);
    if (!made) httpContexts.set(req, (made = makeContext(req, reply)));
    return made;
  };
  const apolloHandler = fastifyApolloHandler(apollo, { context: graphqlContext });
  const fast = fastGraphQL({ jit, context: graphqlContext, metrics: deps.metrics, handOver: (context, result) => ranAlready.set(context.loaders, result) });
  app.route({ method: ['GET', 'OPTIONS'], url: GRAPHQL_PATH, handler: apolloHandler });
  // Most queries skip Apollo Server's pipeline (src/http/graphql-fast.ts); the rest go through it.
  app.post<{ Reply: string }>(GRAPHQL_PATH, async function (req, reply) {
    return (await fast(req, reply)) ?? apolloHandler.call(this, req, reply);
  });

  deps.mount?.(app, { guard, authenticate: authenticateHttp });
  await registerBilling(app, deps);

  const wss = new WebSocketServer({ server: app.server, path: GRAPHQL_PATH, maxPayload: deps.limits.bodyLimitBytes });
  const wsLimit = wsLimits({ guard, limiter, maxOperations: deps.limits.wsMaxSubscriptions, trust });
  quietOversizedMessages(wss, deps.log);
  // An id completed and subscribed again at once: the new subscription waits for the old one to end (see ws-operation-ids.ts).
  const operationIds = operationIdGate(wss);
  ownMessageBuffers(wss);
  const payloads = sharedPayloads(wss);
  const documents = sharedDocuments(deps.schema);
  const wsMetrics = deps.metrics.wsHooks();
  const contexts = new WeakMap<object, Context>();
  /** Each operation's context → how to make its direct writer, made only for a subscription that delivers directly (see sharedSubscribe's `direct`). */
  const writers = new WeakMap<Context, () => (result: ExecutionResult) => boolean>();
  const sessions = new WsSessions({ ...deps.sessions, onError: (err) => deps.log.warn({ err }, 'checking graphql-ws connections’ tokens failed') });
  /** Authenticates the connection's credentials as they stand now; on failure the connection closes. */
  const authorize = async (ctx: { connectionParams?: Record<string, unknown> | undefined; extra: { socket: WebSocket } }, requestId: string) => {
    try {
      // Read fresh, not kept: a graphql-ws operation runs as the token stands in storage now.
      const context = await deps.buildContext.authenticate(connectionAuthorization(ctx.connectionParams), requestId, { fresh: true });
      contexts.set(ctx.extra, context);
      sessions.track(ctx.extra.socket, context.actor.tokenId, context.tokenExpiresAt);
      // The account's budget, whichever token: connection_init and each operation count once.
      const verdict = await limiter.takeAccount(context.actor.user.id);
      return verdict && !verdict.allowed ? rateLimited(verdict) : null;
    } catch (err) {
      const known = knownFailure(err);
      // 1013 Try Again Later: the database is down, the token may well be good.
      if (known instanceof ServiceUnavailable) ctx.extra.socket.close(1013, 'Try again later');
      else if (known instanceof DomainError) ctx.extra.socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
      else throw err;
      return known;
    }
  };
  // Over graphql-ws the connection's id names the request: in masked errors and on their log lines.
  const formatWs = (ctx: { extra: object }, formatted: GraphQLFormattedError, error: unknown) => {
    const reqId = contexts.get(ctx.extra)?.requestId;
    return reqId ? requestScope.run({ reqId }, () => withRequestId(format(formatted, error), reqId)) : format(formatted, error);
  };
  const ws = useServer<Record<string, unknown> | undefined>(
    {
      schema: deps.schema,
      // One syntax tree per operation text, validated once (see ws-documents.ts).
      parse: documents.parse,
      validate: documents.validate,
      // One execution per event for every subscriber with the same operation and viewer.
      // A subscriber's live results written straight to its socket while it keeps up.
      subscribe: sharedSubscribe({ direct: (args) => writers.get(args.contextValue as Context)?.() ?? null }),
      onConnect: async (ctx) => {
        operationIds.attach(ctx);
        if (!(await wsLimit.connectAllowed(ctx))) {
          ctx.extra.socket.close(4429, 'Too many requests');
          return false;
        }
        const refused = await authorize(ctx, requestId());
        if (refused instanceof RateLimited) ctx.extra.socket.close(4429, 'Too many requests');
        else if (refused && !(refused instanceof ServiceUnavailable)) await wsLimit.failedAuth(ctx);
        return refused === null;
      },
      onSubscribe: async (ctx, id, payload) => {
        wsMetrics.subscribed(ctx, id);
        const refused = await wsLimit.onSubscribe(ctx, id, payload);
        if (refused) return refused;
        // Every operation runs as the token stands now: revoked or expired, the connection closes.
        const failure = await authorize(ctx, contexts.get(ctx.extra)!.requestId);
        if (!failure) return undefined;
        const retry = failure instanceof RateLimited ? { retryAfter: failure.retryAfterSeconds } : {};
        return [new GraphQLError(failure.message, { extensions: { code: failure.code, ...retry } })];
      },
      context: (ctx, id) => {
        // The caller authenticated at connect, with fresh loaders per operation.
        const context = deps.buildContext.renew(contexts.get(ctx.extra)!);
        writers.set(context, () => {
          const write = payloads.writer(ctx.extra.socket, id, () => id in ctx.subscriptions);
          return (result) => {
            if (!write(result)) return false;
            wsMetrics.sent(true);
            return true;
          };
        });
        return context;
      },
      onNext: (ctx, id, _payload, _args, result) => {
        wsMetrics.sent(false);
        return result.errors
          ? { ...result, errors: result.errors.map((e) => formatWs(ctx, e instanceof GraphQLError ? e.toJSON() : e, e)) }
          : payloads.next(ctx.extra.socket, id, result);
      },
      onError: (ctx, id, _payload, errors) => {
        operationIds.ended(ctx, id);
        return errors.map((e) => formatWs(ctx, e.toJSON(), e));
      },
      onOperation: wsMetrics.onOperation,
      onComplete: (ctx, id) => {
        operationIds.ended(ctx, id);
        wsMetrics.onComplete(ctx, id);
      },
      onClose: wsMetrics.onClose,
    },
    wss,
    deps.keepAliveMs,
  );

  return {
    app,
    async close() {
      sessions.close();
      await ws.dispose();
      // In-flight requests get the grace period. Then every connection left is cut: a request
      // still running, or a connection opened with no request on it yet (a client's spare one),
      // which Node does not count as idle and would otherwise hold the close for minutes.
      const cut = setTimeout(() => app.server.closeAllConnections(), deps.shutdownGraceMs);
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
      }
      await limiter.close();
    },
  };
}
