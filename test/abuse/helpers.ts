import net from 'node:net';
import http from 'node:http';
import { Client as WsClient, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { checkRestResponse } from '../support/openapi-check';
import { asError } from '../support/errors';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
}

/**
 * An HTTP request from a chosen loopback address (127.0.0.x), so tests can act as several client
 * IPs. REST answers are held to the OpenAPI document like every other REST answer in the suite.
 */
export function request(
  baseUrl: string,
  method: string,
  path: string,
  opts: { token?: string | null; authorization?: string; body?: unknown; headers?: Record<string, string>; from?: string } = {},
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const headers: Record<string, string> = {
    ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
    ...(opts.authorization ? { authorization: opts.authorization } : {}),
    ...opts.headers,
  };
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, localAddress: opts.from ?? '127.0.0.1' },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON
          }
          const status = res.statusCode ?? 0;
          if (path !== '/graphql' && !path.startsWith('/graphql?')) {
            const fetchHeaders = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) fetchHeaders.set(k, Array.isArray(v) ? v.join(', ') : v);
            checkRestResponse(method, path, status, fetchHeaders, text, parsed);
          }
          resolve({ status, headers: res.headers, body: parsed, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A GraphQL request over HTTP with a raw query text. */
export function graphql(baseUrl: string, token: string | null, query: string, variables?: Record<string, unknown>, from?: string): Promise<RawResponse> {
  return request(baseUrl, 'POST', '/graphql', { token, body: { query, variables }, from });
}

/** A graphql-ws client whose socket connects from `from` (a 127.0.0.x address). */
export function wsClientFrom(baseUrl: string, token: string | null, from: string, onClose?: (code: number) => void): WsClient {
  class FromAddress extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { localAddress: from });
    }
  }
  return createClient({
    url: baseUrl.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: FromAddress,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
    lazy: true,
    on: { closed: (e) => onClose?.((e as { code: number }).code) },
  });
}

/** A graphql-ws client that connects at once and keeps one connection until disposed (not lazy). */
export function openWsClient(baseUrl: string, token: string): WsClient {
  return createClient({
    url: baseUrl.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: false,
    retryAttempts: 0,
    onNonLazyError: () => undefined,
  });
}

export interface WsOutcome {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
}

/**
 * Runs one operation (raw text) over graphql-ws: its result, or the errors it was refused with.
 * Waits for the server's `complete` instead of unsubscribing after the first result: unsubscribing
 * while the server's complete is on its way makes graphql-ws 6 release the operation twice, which
 * breaks its count of active operations (a lazy client then sends nothing for the next one).
 */
export function runWs(client: WsClient, query: string, variables?: Record<string, unknown>): Promise<WsOutcome> {
  return new Promise((resolve, reject) => {
    let first: WsOutcome | undefined;
    client.subscribe(
      { query, variables },
      {
        next: (value) => void (first ??= value as WsOutcome),
        error: (err) => (Array.isArray(err) ? resolve({ errors: err as WsOutcome['errors'] }) : reject(asError(err))),
        complete: () => (first ? resolve(first) : reject(new Error('completed without a result or an error'))),
      },
    );
  });
}

export interface LiveStream {
  /** Items received so far. */
  items: unknown[];
  /** Resolves with the first item. */
  first: Promise<unknown>;
  /** Resolves once `n` items have arrived. */
  waitFor(n: number): Promise<unknown[]>;
  /** Resolves when the server completes the stream; resolves with the errors if it refuses it. */
  ended: Promise<{ completed: true } | { errors: WsOutcome['errors'] }>;
  unsubscribe(): void;
}

/** A subscription left open. */
export function openStream(client: WsClient, query: string, variables?: Record<string, unknown>): LiveStream {
  const items: unknown[] = [];
  const waiters: Array<{ n: number; resolve: (v: unknown[]) => void }> = [];
  const waitFor = (n: number) => (items.length >= n ? Promise.resolve(items.slice()) : new Promise<unknown[]>((resolve) => waiters.push({ n, resolve })));
  const first = waitFor(1).then((got) => got[0]);
  let unsubscribe = () => undefined as void;
  const ended = new Promise<{ completed: true } | { errors: WsOutcome['errors'] }>((resolve, reject) => {
    unsubscribe = client.subscribe(
      { query, variables },
      {
        next: (value) => {
          items.push(value);
          for (const w of waiters.filter((w) => items.length >= w.n)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(items.slice());
          }
        },
        error: (err) => (Array.isArray(err) ? resolve({ errors: err as WsOutcome['errors'] }) : reject(asError(err))),
        complete: () => resolve({ completed: true }),
      },
    );
  });
  ended.catch(() => undefined);
  return { items, first, waitFor, ended, unsubscribe: () => unsubscribe() };
}

/** What came back on a raw TCP connection, and when it closed (ms after it opened). */
export interface RawExchange {
  text: string;
  /** The status line's code, or 0 when nothing came back. */
  status: number;
  /** The JSON body, when there is one. */
  body: any;
  closedAfterMs: number;
}

/**
 * Writes `parts` to a raw TCP connection (for requests no HTTP client would send), one every
 * `everyMs`, and resolves with what came back once the server closes it; rejects if it is still
 * open after `timeoutMs`.
 */
export function rawExchange(baseUrl: string, parts: string[], opts: { everyMs?: number; timeoutMs?: number; from?: string } = {}): Promise<RawExchange> {
  const url = new URL(baseUrl);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port), localAddress: opts.from ?? '127.0.0.1' });
    let text = '';
    let next = 0;
    const write = () => {
      if (socket.destroyed || next >= parts.length) return;
      socket.write(parts[next++]);
      if (next < parts.length) timer = setTimeout(write, opts.everyMs ?? 0);
    };
    let timer: NodeJS.Timeout | undefined;
    const limit = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${opts.timeoutMs ?? 10_000} ms; got ${JSON.stringify(text.slice(0, 200))}`));
    }, opts.timeoutMs ?? 10_000);
    socket.on('connect', write);
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      clearTimeout(limit);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      const raw = text.split('\r\n\r\n').slice(1).join('\r\n\r\n');
      let body: unknown;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      resolve({ text, status, body, closedAfterMs: Date.now() - started });
    });
  });
}
