import { GraphQLError, GraphQLFormattedError } from 'graphql';
import { isDatabaseUnavailable, isUnstorableText } from '../db/errors';
import { DomainError, ERROR_CODES, ErrorCode, FieldError, ServiceUnavailable, ValidationFailed } from '../errors';
import { newId } from '../ids';
import { Logger } from '../log';
import { withoutSuggestions } from './limits';

/** Logs an error no client caused; returns the id that names it in the log and in the response. */
export function logUnexpected(err: unknown, log: Logger): string {
  const errorId = newId('err');
  log.error({ errorId, err }, 'unexpected error');
  return errorId;
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && (ERROR_CODES as readonly string[]).includes(code);
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
