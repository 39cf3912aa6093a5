import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { ErrorCode } from '../errors';
import { Logger } from '../log';
import { TrustFn } from './client-ip';
import { ERROR_HTTP, problemBody } from './problems';

/** A whole HTTP response with a problem body, for sockets Fastify never saw a request on. */
function rawProblem(code: ErrorCode, detail: string, headers: Record<string, string | number> = {}): string {
  const { status, title } = ERROR_HTTP[code];
  const body = JSON.stringify(problemBody(code, detail));
  const lines = [
    `HTTP/1.1 ${status} ${title}`,
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/**
 * Fastify's clientErrorHandler: what Node's HTTP parser refuses (malformed request line or
 * headers, headers too large, a request that did not arrive within the request timeout) is
 * answered with a problem body, then the connection is closed.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const response =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? rawProblem('REQUEST_TIMEOUT', 'The request did not arrive in time (HATCHERY_REQUEST_TIMEOUT_MS)')
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? rawProblem('BAD_REQUEST', 'The request headers are too large')
          : rawProblem('BAD_REQUEST', 'The request is malformed');
    socket.end(response);
  }
  socket.destroySoon();
}

/** Whether `host` is a bare authority (`name`, `name:port`, `[v6]:port`) a URL can be built on. */
function isAuthority(host: string): boolean {
  try {
    const url = new URL(`http://${host}/`);
    return url.pathname === '/' && url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/**
 * Why Fastify's request makes no sense, or null. A request target cannot hold a fragment (`#`,
 * RFC 9112), and readers that cut there see other parameters than readers that do not. A Host
 * header (or a trusted proxy's X-Forwarded-Host) must be an authority: the GraphQL integration
 * builds a URL on it. Only GraphQL needs a Host at all (HTTP/1.0 probes may omit it).
 */
export function malformedRequest(req: FastifyRequest): string | null {
  if (req.raw.url?.includes('#')) return 'The request target must not contain a fragment (#)';
  const host = req.host;
  if (host === '') return req.routeOptions.url === '/graphql' ? 'The Host header is missing' : null;
  return isAuthority(host) ? null : 'The Host header is malformed';
}

/**
 * At most `max` open connections per client address (0: no cap). One more is answered 429 and
 * closed at once, before it can hold a request open. Proxies the gateway trusts
 * (HATCHERY_TRUST_PROXY) carry many clients and are not capped.
 */
export function capConnectionsPerClient(server: Server, max: number, trust: TrustFn, log: Logger): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  let lastWarning = 0;
  // In front of Node's own listener, so a refused socket never reaches the HTTP parser.
  const serve = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (!address || trust(address, 0)) return serve.forEach((listener) => listener.call(server, socket));
    const n = (open.get(address) ?? 0) + 1;
    if (n > max) {
      if (Date.now() - lastWarning > 60_000) {
        lastWarning = Date.now();
        log.warn({ address, max }, 'too many connections from one client: refused (HATCHERY_MAX_CONNECTIONS_PER_IP)');
      }
      socket.on('error', () => undefined);
      socket.end(rawProblem('RATE_LIMITED', `Too many open connections from this address; at most ${max}`, { 'Retry-After': 1 }));
      socket.destroySoon();
      return;
    }
    open.set(address, n);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
    serve.forEach((listener) => listener.call(server, socket));
  });
}
