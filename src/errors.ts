/**
 * Typed domain errors. Services throw these; graphql/errors.ts maps them to `extensions.code`
 * and http/problems.ts to HTTP statuses and problem details, each through one table keyed by `ErrorCode`.
 */
export const ERROR_CODES = [
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'LIMIT_EXCEEDED',
  'RATE_LIMITED',
  'BAD_REQUEST',
  'UNSUPPORTED_MEDIA_TYPE',
  'PAYLOAD_TOO_LARGE',
  'REQUEST_TIMEOUT',
  'SERVICE_UNAVAILABLE',
  'INTERNAL_SERVER_ERROR',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldError {
  field: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly code: ErrorCode;
  readonly errors: FieldError[] = [];
}

export class Unauthenticated extends DomainError {
  readonly code = 'UNAUTHENTICATED';
  constructor(message = 'A valid bearer token is required') {
    super(message);
  }
}

export class Forbidden extends DomainError {
  readonly code = 'FORBIDDEN';
}

export class NotFound extends DomainError {
  readonly code = 'NOT_FOUND';
  constructor(what: string, key: string) {
    super(`${what} "${key}" not found`);
  }
}

export class ValidationFailed extends DomainError {
  readonly code = 'BAD_USER_INPUT';
  readonly errors: FieldError[];
  constructor(errors: FieldError[] | FieldError) {
    const list = Array.isArray(errors) ? errors : [errors];
    super(list.map((e) => `${e.field}: ${e.message}`).join('; '));
    this.errors = list;
  }
  static field(field: string, message: string): ValidationFailed {
    return new ValidationFailed({ field, message });
  }
}

export class LimitExceeded extends DomainError {
  readonly code = 'LIMIT_EXCEEDED';
  readonly errors: FieldError[];
  constructor(field: string, message: string) {
    super(message);
    this.errors = [{ field, message }];
  }
}

/** Too many requests; retrying after `retryAfterSeconds` helps. */
export class RateLimited extends DomainError {
  readonly code = 'RATE_LIMITED';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class BadRequest extends DomainError {
  readonly code = 'BAD_REQUEST';
}

/** A body of a media type the endpoint does not take (also: bytes that are not what the type says). */
export class UnsupportedMediaType extends DomainError {
  readonly code = 'UNSUPPORTED_MEDIA_TYPE';
}

/** A body larger than the endpoint takes; `field` names what was too large. */
export class PayloadTooLarge extends DomainError {
  readonly code = 'PAYLOAD_TOO_LARGE';
  readonly errors: FieldError[];
  constructor(field: string, message: string) {
    super(message);
    this.errors = [{ field, message }];
  }
}

/** The database (or another service the gateway needs) cannot be reached right now; retrying helps. */
export class ServiceUnavailable extends DomainError {
  readonly code = 'SERVICE_UNAVAILABLE';
  constructor(message = 'The service is temporarily unavailable; retry shortly') {
    super(message);
  }
}
