import { FastifyReply } from 'fastify';
import { ErrorCode, FieldError, RateLimited } from '../errors';

/** The one mapping from error codes to HTTP: statuses, problem codes and titles come from here. */
export const ERROR_HTTP: Record<ErrorCode, { status: number; code: string; title: string }> = {
  UNAUTHENTICATED: { status: 401, code: 'unauthorized', title: 'Unauthorized' },
  FORBIDDEN: { status: 403, code: 'forbidden', title: 'Forbidden' },
  NOT_FOUND: { status: 404, code: 'not_found', title: 'Not Found' },
  BAD_USER_INPUT: { status: 422, code: 'validation_failed', title: 'Validation Failed' },
  LIMIT_EXCEEDED: { status: 422, code: 'limit_exceeded', title: 'Limit Exceeded' },
  RATE_LIMITED: { status: 429, code: 'rate_limited', title: 'Too Many Requests' },
  BAD_REQUEST: { status: 400, code: 'bad_request', title: 'Bad Request' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', title: 'Unsupported Media Type' },
  PAYLOAD_TOO_LARGE: { status: 413, code: 'payload_too_large', title: 'Payload Too Large' },
  REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', title: 'Request Timeout' },
  SERVICE_UNAVAILABLE: { status: 503, code: 'service_unavailable', title: 'Service Unavailable' },
  INTERNAL_SERVER_ERROR: { status: 500, code: 'internal_error', title: 'Internal Server Error' },
};

/** Headers that go with an error on any transport: a 401 asks for a bearer token, a 503 says when to retry. */
export function errorHeaders(code: ErrorCode, err?: unknown): Record<string, string> {
  if (code === 'UNAUTHENTICATED') return { 'www-authenticate': 'Bearer' };
  if (code === 'SERVICE_UNAVAILABLE') return { 'retry-after': '1' };
  if (err instanceof RateLimited) return { 'retry-after': String(err.retryAfterSeconds) };
  return {};
}

/** The RFC 9457 members every problem body starts with. */
export function problemBody(code: ErrorCode, detail: string): Record<string, unknown> {
  const { status, code: restCode, title } = ERROR_HTTP[code];
  return { type: `https://hatchery.run/problems/${restCode}`, title, status, code: restCode, detail };
}

/** An RFC 9457 problem body with the status, problem code and headers of `code` (ERROR_HTTP). */
export function sendProblem(reply: FastifyReply, code: ErrorCode, detail: string, extra: { errors?: FieldError[]; errorId?: string } = {}): FastifyReply {
  reply.headers(errorHeaders(code));
  const body = { ...problemBody(code, detail), request_id: reply.request.id } as Record<string, unknown>;
  if (extra.errors?.length) body.errors = extra.errors;
  if (extra.errorId) body.error_id = extra.errorId;
  return reply.code(ERROR_HTTP[code].status).type('application/problem+json').send(body);
}
