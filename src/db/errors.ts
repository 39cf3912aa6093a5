/**
 * Database failures that are not the gateway's bugs: the database cannot be reached right now
 * (503, the client retries), or a value the client sent cannot be stored as text (422).
 */

/** Node's socket errors, and PostgreSQL's connection exceptions (class 08) and operator interventions (57P0x). */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovering)
  '53300', // too_many_connections
]);
// pg's own wording when a connection ends under it (these errors carry no code).
const UNAVAILABLE_MESSAGES =
  /Connection terminated|terminating connection|Client has encountered a connection error|timeout exceeded when trying to connect|Connection is not open/i;

/** The error, the driver error TypeORM wraps, and any `cause` chain. */
function* chain(err: unknown): Generator<{ code?: unknown; message?: unknown }> {
  const seen = new Set<unknown>();
  let e = err;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    yield e;
    const driver = (e as { driverError?: unknown }).driverError;
    if (driver && typeof driver === 'object' && !seen.has(driver)) yield driver;
    e = (e as { cause?: unknown }).cause;
  }
}

export function isDatabaseUnavailable(err: unknown): boolean {
  for (const e of chain(err)) {
    if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
    // An AggregateError (several addresses refused) carries the socket errors in `errors`.
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.some(isDatabaseUnavailable)) return true;
  }
  return false;
}

/** A NUL character (or another value PostgreSQL's text cannot hold): 22021, 22P05. */
export function isUnstorableText(err: unknown): boolean {
  for (const e of chain(err)) if (e.code === '22021' || e.code === '22P05') return true;
  return false;
}
