import type { ApolloServerPlugin } from '@apollo/server';
import { FastifyInstance, FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import type { Context as WsContext } from 'graphql-ws';
import type { Extra } from 'graphql-ws/use/ws';
import type { WebSocketServer } from 'ws';
import { Logger } from '../log';
import { OperationGuard, OperationRequest } from '../graphql/limits';
import { clientAddress, TrustFn } from './client-ip';
import { connectionAuthorization, credentialOf } from '../graphql/build-context';
import { RateLimiter, rateLimitError } from './rate-limit';
import { isGraphQLRoute, sendGraphQLErrors } from './responses';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The operation a GraphQL-over-HTTP request carries (POST body or GET query string), if well formed. */
function operationOf(req: FastifyRequest): OperationRequest | null {
  const source = req.method === 'POST' ? req.body : req.query;
  if (!isObject(source) || typeof source.query !== 'string') return null;
  let variables: unknown = source.variables;
  if (typeof variables === 'string') {
    try {
      variables = JSON.parse(variables);
    } catch {
      return null; // the server answers that the variables are not JSON
    }
  }
  if (variables !== undefined && variables !== null && !isObject(variables)) return null;
  return {
    query: source.query,
    variables: variables ?? null,
    operationName: typeof source.operationName === 'string' ? source.operationName : null,
  };
}

/** The GraphQL-over-HTTP parameters of a GET, each of which must appear at most once, as a string. */
const GET_PARAMETERS = ['query', 'variables', 'operationName', 'extensions'] as const;

/** What the preHandler checked for a request, for the Apollo plugin to compare with what runs. */
const checkedByRequest = new WeakMap<FastifyRequest, OperationRequest>();

/**
 * Operations over the limits are refused with 400 before anything else happens: no token lookup,
 * no SQL. Their errors carry `extensions.code = BAD_USER_INPUT` and `extensions.limit`. A GET
 * whose parameters are repeated (`?query=a&query=b`) is a 400: the limits must see the very text
 * that runs. `limitsPlugin` checks again, inside Apollo, whatever was not checked here.
 */
export function registerOperationLimits(app: FastifyInstance, guard: OperationGuard): void {
  app.addHook('preHandler', async (req, reply) => {
    if (!isGraphQLRoute(req)) return;
    if (req.method === 'GET' || req.method === 'HEAD') {
      const query = (req.query ?? {}) as Record<string, unknown>;
      const repeated = GET_PARAMETERS.filter((name) => Object.hasOwn(query, name) && typeof query[name] !== 'string');
      if (repeated.length) {
        const message = `The URL must give ${repeated.map((n) => `\`${n}\``).join(', ')} at most once, as a single value`;
        return sendGraphQLErrors(reply, 400, [{ message, extensions: { code: 'BAD_REQUEST' } }]);
      }
    }
    const operation = operationOf(req);
    if (!operation) return;
    const errors = guard.check(operation);
    if (!errors.length) {
      checkedByRequest.set(req, operation);
      return;
    }
    return sendGraphQLErrors(
      reply,
      400,
      errors.map((e) => e.toJSON()),
    );
  });
}

/** What `registerOperationLimits` checked for this request, if it did (for the Apollo context). */
export const checkedOperation = (req: FastifyRequest): OperationRequest | undefined => checkedByRequest.get(req);

const sameVariables = (a: unknown, b: unknown) => a === b || JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * The limits, checked on exactly the text, variables and operation name Apollo executes. The
 * preHandler has normally checked them already (before the token lookup); this catches any
 * request Apollo reads differently from Fastify, so no way of writing a request skips the limits.
 */
export function limitsPlugin<C extends object>(guard: OperationGuard, checkedFor: (ctx: C) => OperationRequest | undefined): ApolloServerPlugin<C> {
  return {
    requestDidStart() {
      return Promise.resolve({
        didResolveOperation({ source, request, contextValue }) {
          const operationName = request.operationName ?? null;
          const checked = checkedFor(contextValue);
          if (checked && checked.query === source && (checked.operationName ?? null) === operationName && sameVariables(checked.variables, request.variables))
            return Promise.resolve();
          const [error] = guard.check({ query: source, variables: request.variables ?? null, operationName });
          if (!error) return Promise.resolve();
          return Promise.reject(new GraphQLError(error.message, { extensions: { ...error.extensions, http: { status: 400 } } }));
        },
      });
    },
  };
}

type Ctx = WsContext<Record<string, unknown> | undefined, Extra>;

const connectionCredential = (ctx: Ctx) => credentialOf(connectionAuthorization(ctx.connectionParams));

/**
 * graphql-ws: each connection_init and each subscribe is one request for the rate limit (the same
 * buckets as HTTP); operations over the limits and beyond `maxOperations` running at once on the
 * connection are refused with an error message, leaving the connection and its other streams open.
 */
export function wsLimits(deps: { guard: OperationGuard; limiter: RateLimiter; maxOperations: number; trust: TrustFn }) {
  // The upgrade request's client address, by the same X-Forwarded-For rule as HTTP's `req.ip`.
  const remoteAddress = (ctx: Ctx) => clientAddress(ctx.extra.request, deps.trust);
  return {
    /** Whether the connection may authenticate; otherwise it is closed with 4429. */
    async connectAllowed(ctx: Ctx): Promise<boolean> {
      const verdict = await deps.limiter.take(connectionCredential(ctx), remoteAddress(ctx));
      return !verdict || verdict.allowed;
    },
    failedAuth(ctx: Ctx): Promise<void> {
      return connectionCredential(ctx) === null ? Promise.resolve() : deps.limiter.failedAuth(remoteAddress(ctx));
    },
    async onSubscribe(ctx: Ctx, _id: string, payload: OperationRequest): Promise<GraphQLError[] | undefined> {
      // The operation being subscribed is already in `subscriptions`.
      if (Object.keys(ctx.subscriptions).length > deps.maxOperations) {
        return [
          new GraphQLError(`At most ${deps.maxOperations} operations run at once on one connection; complete one first`, {
            extensions: { code: 'LIMIT_EXCEEDED', limit: 'subscriptions', max: deps.maxOperations },
          }),
        ];
      }
      const verdict = await deps.limiter.take(connectionCredential(ctx), remoteAddress(ctx));
      if (verdict && !verdict.allowed) {
        return [rateLimitError(verdict)];
      }
      if (typeof payload.query !== 'string') return undefined;
      const errors = deps.guard.check({ ...payload, variables: isObject(payload.variables) ? payload.variables : null });
      return errors.length ? errors : undefined;
    },
  };
}

/**
 * A graphql-ws message over `maxPayload` makes `ws` close the socket with 1009 and emit an error,
 * which graphql-ws prints to stderr for every such message. Register before `useServer`: the
 * oversized-message error is logged once at info level, and other socket errors reach graphql-ws.
 */
export function quietOversizedMessages(wss: WebSocketServer, log: Logger): void {
  wss.on('connection', (socket) => {
    const once = socket.once.bind(socket);
    socket.once = ((event: string, listener: (...args: unknown[]) => void) => {
      if (event !== 'error') return once(event, listener);
      return once('error', (err: Error & { code?: string }) => {
        if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') log.info({ code: err.code }, 'graphql-ws message over the size limit: socket closed (1009)');
        else listener(err);
      });
    }) as typeof socket.once;
  });
}
