import { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLFormattedError } from 'graphql';
import { ErrorCode, FieldError } from '../errors';
import { withRequestId } from '../graphql/request-id';
import { ERROR_HTTP, errorHeaders, sendProblem } from './problems';

/** GraphQL over HTTP and graphql-ws, and the explorer page. */
export const GRAPHQL_PATH = '/graphql';

export const isGraphQLRoute = (req: FastifyRequest): boolean => req.routeOptions.url === GRAPHQL_PATH;

/**
 * A GraphQL response that carries only errors, sent outside Apollo (limits, rate limits,
 * refusals); each error names the request (`extensions.requestId`), as Apollo's do.
 */
export function sendGraphQLErrors(reply: FastifyReply, status: number, errors: GraphQLFormattedError[]): FastifyReply {
  const named = errors.map((e) => withRequestId(e, reply.request.id));
  return reply.code(status).type('application/json; charset=utf-8').send({ errors: named });
}

/**
 * A refusal in the error shape of the endpoint: problem details on REST, a GraphQL `errors` array
 * on /graphql (GraphQL clients read `errors[].extensions.code`), with the same status and headers.
 */
export function sendRefusal(
  req: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  extra: { errors?: FieldError[]; errorId?: string } = {},
): FastifyReply {
  if (!isGraphQLRoute(req)) return sendProblem(reply, code, detail, extra);
  const extensions: Record<string, unknown> = { code };
  if (extra.errorId) extensions.errorId = extra.errorId;
  reply.headers(errorHeaders(code));
  return sendGraphQLErrors(reply, ERROR_HTTP[code].status, [{ message: detail, extensions }]);
}
