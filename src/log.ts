import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { DestinationStream, Logger } from 'pino';

export type { Logger };

/** The request being served: lines logged anywhere while serving it carry its id as `reqId`. */
export const requestScope = new AsyncLocalStorage<{ reqId: string }>();

/** Credentials and secrets, wherever a log call might put them. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["stripe-signature"]',
  'headers.authorization',
  'headers.cookie',
  'authorization',
  '*.authorization',
  'connectionParams',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'password',
  '*.password',
  // TypeORM's query errors carry the statement's parameters: token hashes, sealed secrets, emails.
  'err.parameters',
];

const { chindingsSym } = pino.symbols;

/** Structured JSON logs (to stdout unless a destination is given). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // Fastify's request loggers bind reqId already; any other logger gets it from the scope.
    mixin(line, _level, logger) {
      const scope = requestScope.getStore();
      if (!scope || 'reqId' in line) return {};
      const bound = (logger as unknown as Record<symbol, string | undefined>)[chindingsSym] ?? '';
      return bound.includes('"reqId":') ? {} : { reqId: scope.reqId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
