import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import { Client as WsClient, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { buildApp, BuildOptions, Gateway } from '../../src/app';
import { loadConfig, Config } from '../../src/config';
import { createTestDatabase, TestDatabase } from './db';
import { checkRestResponse } from './openapi-check';
import { closeReason } from './errors';

export const TEST_KEY = Buffer.alloc(32, 7).toString('base64');

export interface TestGateway {
  gateway: Gateway;
  url: string;
  db: TestDatabase;
  config: Config;
  stop(): Promise<void>;
}

/** A gateway on port 0 over a fresh database; builds are quick, jobs and the drain shipper off unless asked. */
export async function startGateway(env: Record<string, string> = {}, opts: BuildOptions = {}): Promise<TestGateway> {
  const db = await createTestDatabase();
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    HATCHERY_JOBS: 'off',
    HATCHERY_SIM_BUILD_MS: '150',
    HATCHERY_SIM_RUNTIME_LOG_MS: '60000',
    HATCHERY_SIM_COMMAND_MS: '20',
    HATCHERY_CRON_TICK_MS: '0',
    HATCHERY_ROUTER_PORT: '0',
    HATCHERY_ENCRYPTION_KEY: TEST_KEY,
    HOST: '127.0.0.1',
    // Suites fire many requests per token; test/abuse sets its own low limits.
    HATCHERY_RATE_LIMIT_PER_MIN: '1000000',
    HATCHERY_RATE_LIMIT_ANON_PER_MIN: '1000000',
    // The log drain shipper claims drains every second: a statement no request ran, which tests
    // counting a request's statements would see. test/drains turns it on.
    HATCHERY_LOG_DRAIN_WORKER: 'off',
    // Every request reads its token, so tests counting a request's statements count the same
    // whatever the time between requests. test/accounts/token-cache and the tests that set it
    // (test/subscriptions/live-doors, test/deployments/list-statements) cover the cache.
    HATCHERY_TOKEN_CACHE_MS: '0',
    ...env,
    DATABASE_URL: db.url,
  });
  const gateway = buildApp(config, opts);
  const url = await gateway.start(0);
  return {
    gateway,
    url,
    db,
    config,
    async stop() {
      await gateway.stop();
      await db.drop();
    },
  };
}

export interface GqlResult<T> {
  status: number;
  data?: T | null;
  errors?: Array<{ message: string; extensions?: Record<string, any> }>;
}

/** A GraphQL request over real HTTP. */
export async function gql<TData, TVars>(
  url: string,
  token: string | null,
  document: TypedDocumentNode<TData, TVars>,
  variables?: TVars,
): Promise<GqlResult<TData>> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query: print(document), variables }),
  });
  return { status: res.status, ...((await res.json()) as Omit<GqlResult<TData>, 'status'>) };
}

/** Like gql, but fails the test on any error and returns data. */
export async function gqlOk<TData, TVars>(url: string, token: string, document: TypedDocumentNode<TData, TVars>, variables?: TVars): Promise<TData> {
  const result = await gql(url, token, document, variables);
  if (result.errors?.length || !result.data) throw new Error(`GraphQL error: ${JSON.stringify(result.errors)}`);
  return result.data;
}

/** A REST request over real HTTP; JSON bodies unless told otherwise. */
export async function rest(
  url: string,
  token: string | null,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: leave the text
  }
  checkRestResponse(method, path, res.status, res.headers, text, parsed);
  return { status: res.status, headers: res.headers, body: parsed };
}

export function wsClient(url: string, token: string | null, onClose?: (code: number, reason: string) => void): WsClient {
  return createClient({
    url: url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
    lazy: true,
    on: { closed: (e) => onClose?.((e as { code: number }).code, closeReason(e)) },
  });
}

export interface Collected<T> {
  items: T[];
  /** Resolves when the server completes the stream; rejects on an error. */
  done: Promise<void>;
  /** Resolves once `n` items have arrived. */
  waitFor(n: number): Promise<T[]>;
  unsubscribe(): void;
  errors: unknown[];
}

/** Subscribes and collects every `next` payload's data field. */
export function collect<TData, TVars extends Record<string, unknown>>(
  client: WsClient,
  document: TypedDocumentNode<TData, TVars>,
  variables: TVars,
): Collected<TData> {
  const items: TData[] = [];
  const errors: unknown[] = [];
  const waiters: Array<{ n: number; resolve: (v: TData[]) => void }> = [];
  let unsubscribe = () => undefined as void;
  const done = new Promise<void>((resolve, reject) => {
    unsubscribe = client.subscribe<TData>(
      { query: print(document), variables },
      {
        next: (value) => {
          if (value.errors) errors.push(...value.errors);
          if (value.data) items.push(value.data);
          for (const w of [...waiters]) {
            if (items.length >= w.n) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(items.slice());
            }
          }
        },
        error: reject,
        complete: resolve,
      },
    );
  });
  done.catch(() => undefined);
  return {
    items,
    done,
    errors,
    unsubscribe: () => unsubscribe(),
    waitFor: (n) => (items.length >= n ? Promise.resolve(items.slice()) : new Promise((resolve) => waiters.push({ n, resolve }))),
  };
}

/** Resolves with the items received so far once one (from the `from`-th on) matches; bounded by jest's timeout. */
export async function waitForItem<T>(stream: Collected<T>, match: (item: T) => boolean, from = 0): Promise<T[]> {
  for (let n = from + 1; ; n++) {
    const items = await stream.waitFor(n);
    if (match(items[n - 1])) return items;
  }
}
