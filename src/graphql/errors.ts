import { GraphQLError, GraphQLFormattedError } from 'graphql';
import { isDatabaseUnavailable, isUnstorableText } from '../db/errors';
import { DomainError, ErrorCode, FieldError, RateLimited, ServiceUnavailable, ValidationFailed } from '../errors';
import { newId } from '../ids';
import { Logger } from '../log';
import { withoutSuggestions } from './limits';

/** The one mapping from error codes to HTTP: REST statuses and problem codes come from here. */
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

/** Logs an error no client caused; returns the id that names it in the log and in the response. */
export function logUnexpected(err: unknown, log: Logger): string {
  const errorId = newId('err');
  log.error({ errorId, err }, 'unexpected error');
  return errorId;
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code in ERROR_HTTP;
}

/**
 * Failures that are no bug of the gateway's, as domain errors: the database cannot be reached
 * (503, retry) or cannot store a text the client sent (a NUL character: 422 naming `field`).
 */
export function knownFailure(err: unknown, field = 'input'): unknown {
  if (!err || err instanceof DomainError) return err;
  if (isDatabaseUnavailable(err)) return new ServiceUnavailable();
  if (isUnstorableText(err)) return ValidationFailed.field(field, 'must not contain NUL (U+0000) characters');
  return err;
}

/**
 * Domain errors keep their message and get `extensions.code` (and `errors` for field problems);
 * GraphQL's own errors (syntax, validation, variable coercion) are the client's fault; anything
 * else is masked as "internal error" with an id that is also in the server log.
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown, log: Logger): GraphQLFormattedError {
  const field = [...(formatted.path ?? [])].reverse().find((p): p is string => typeof p === 'string');
  const original = knownFailure(error instanceof GraphQLError ? error.originalError : error, field);
  if (original instanceof DomainError) {
    const extensions: Record<string, unknown> = { code: original.code };
    if (original.errors.length) extensions.errors = original.errors satisfies FieldError[];
    return { message: original.message, locations: formatted.locations, path: formatted.path, extensions };
  }
  if (error instanceof GraphQLError && (!original || original instanceof GraphQLError)) {
    const code = formatted.extensions?.code;
    return {
      ...formatted,
      message: withoutSuggestions(formatted.message),
      extensions: { ...formatted.extensions, code: typeof code === 'string' ? code : 'BAD_USER_INPUT' },
    };
  }
  const errorId = logUnexpected(original, log);
  return { message: 'internal error', path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR', errorId } };
}
