/**
 * A rejection reason as an Error. graphql-ws hands its error callback a close event, and an
 * aborted signal's reason can be anything; the close event's code and reason stay on the Error,
 * so `rejects.toMatchObject({ code: 4403 })` still reads them.
 */
export function asError(reason: unknown): Error {
  if (reason instanceof Error) return reason;
  if (reason !== null && typeof reason === 'object') {
    const { code, reason: text } = reason as { code?: unknown; reason?: unknown };
    const message =
      code === undefined
        ? JSON.stringify(reason)
        : `closed with ${typeof code === 'number' || typeof code === 'string' ? code : JSON.stringify(code)}${typeof text === 'string' && text ? `: ${text}` : ''}`;
    return Object.assign(new Error(message), code === undefined ? {} : { code, reason: text });
  }
  return new Error(String(reason));
}

/** The reason of a WebSocket close event, or '' when it has none. */
export function closeReason(event: unknown): string {
  const reason = (event as { reason?: unknown }).reason;
  return typeof reason === 'string' ? reason : '';
}
