import { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLFormattedError } from 'graphql';
import { ErrorCode, FieldError } from '../errors';
import { ERROR_HTTP, errorHeaders } from '../graphql/errors';
import { withRequestId } from '../graphql/request-id';

/** GraphQL over HTTP and graphql-ws, and the explorer page. */
export const GRAPHQL_PATH = '/graphql';

export const isGraphQLRoute = (req: FastifyRequest): boolean => req.routeOptions.url === GRAPHQL_PATH;

/** An RFC 9457 problem body with the status, problem code and headers of `code` (ERROR_HTTP). */
export function sendProblem(
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  extra: { errors?: FieldError[]; errorId?: string } = {},
): FastifyReply {
  const { status, code: restCode, title } = ERROR_HTTP[code];
  reply.headers(errorHeaders(code));
  const body: Record<string, unknown> = {
    type: `https://hatchery.run/problems/${restCode}`,
    title,
    status,
    code: restCode,
    detail,
    request_id: reply.request.id,
  };
  if (extra.errors?.length) body.errors = extra.errors;
  if (extra.errorId) body.error_id = extra.errorId;
  return reply.code(status).type('application/problem+json').send(body);
}

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
