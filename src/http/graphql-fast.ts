import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ExecutionResult } from 'graphql';
import type { Context } from '../graphql/context';
import type { JitExecutor } from '../graphql/jit';
import type { Metrics } from '../metrics';
import { checkedOperation } from './limits';

/** What Apollo Server answers a single result with when JSON is what the client accepts (its `MEDIA_TYPES.APPLICATION_JSON`). */
const JSON_TYPE = 'application/json; charset=utf-8';
/** `Accept` headers for which Apollo Server's negotiation picks JSON plainly; any other is left to it. */
const PLAIN_ACCEPT = new Set<string | undefined>([undefined, '*/*', 'application/json']);

export interface FastGraphQLDeps {
  jit: JitExecutor;
  /** The request's context as Apollo Server gets it (made once per request: a fallback reuses it). */
  context: (req: FastifyRequest, reply: FastifyReply) => Promise<Context>;
  metrics: Metrics;
  /** Hands a result with errors to Apollo Server, which formats it instead of running the query again (see `JitExecutor.apolloGateway`). */
  handOver: (context: Context, result: ExecutionResult) => void;
}

/**
 * GraphQL over HTTP for the common request, without Apollo Server's request pipeline (its plugins'
 * hooks, each awaited, the request and response copied into its own shapes): a POST of a query that
 * graphql-jit compiled (src/graphql/jit.ts), whose operation limits were checked on its very text,
 * whose caller authenticates, and which runs without an error. Its answer is the one Apollo Server
 * gives, byte for byte: status 200, `application/json; charset=utf-8`, `{"data":…}` and a newline.
 *
 * Anything else is left to Apollo Server (the function returns null): mutations, a document that
 * does not parse or validate, `extensions`, an `Accept` other than none, `*∕*` or
 * `application/json`, a caller refused, variables that do not coerce, and any result with an
 * error. Apollo Server gets the same context (the caller authenticated and rate-counted once), and
 * a result with errors is handed over rather than run again (an expensive query that timed out
 * must not run twice): every error keeps the shape, status, headers, logging and metrics Apollo
 * Server gives it.
 */
export function fastGraphQL(deps: FastGraphQLDeps): (req: FastifyRequest, reply: FastifyReply) => Promise<string | null> {
  const { jit, metrics } = deps;
  return async (req, reply) => {
    const started = performance.now();
    // The limits were checked on exactly what runs (see registerOperationLimits): a body with a
    // string query, whose variables (an object, or none) and operation name (a string, or none)
    // are the ones checked. Variables sent as a JSON string, which the check parses and Apollo
    // Server refuses, are not.
    const checked = checkedOperation(req);
    const body = req.body as Record<string, unknown>;
    if (!checked || 'extensions' in body || !PLAIN_ACCEPT.has(req.headers.accept)) return null;
    const operationName = checked.operationName ?? null;
    if ((body.variables ?? null) !== (checked.variables ?? null) || (body.operationName ?? null) !== operationName) return null;
    const found = jit.compiledText(checked.query, operationName ?? undefined);
    const values = checked.variables ?? {};
    if (!found || !jit.coerces(found.operation, values)) return null;
    let context: Context;
    try {
      context = await deps.context(req, reply);
    } catch {
      return null; // Apollo Server answers the refusal
    }
    let result: ExecutionResult;
    try {
      result = await jit.runCompiled(found.compiled, context, values);
    } catch {
      return null; // Apollo Server says what failed
    }
    if (result.errors?.length) {
      // Apollo Server answers it: status, headers, the errors' shape, logging and metrics as ever.
      deps.handOver(context, result);
      return null;
    }
    metrics.httpOperation(operationName ?? found.operation.name?.value, 'query', false, started);
    void reply.code(200).header('content-type', JSON_TYPE);
    return `${JSON.stringify({ data: result.data })}\n`;
  };
}
