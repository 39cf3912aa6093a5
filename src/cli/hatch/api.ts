/**
 * The gateway as the CLI sees it: typed operations from src/client/generated.ts, sent over
 * GraphQL HTTP (queries, mutations) and graphql-ws (subscriptions, with reconnect-and-resume),
 * and the one REST call GraphQL cannot carry: a source upload (a binary body).
 */
import { createReadStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql/language/printer';
import { createClient } from 'graphql-ws/client';
import WebSocket from 'ws';

export interface FieldProblem {
  field: string;
  message: string;
}

export interface ServerError {
  message: string;
  code?: string;
  fields: FieldProblem[];
}

/** The server answered with GraphQL errors (or refused the token). */
export class ApiError extends Error {
  constructor(readonly errors: ServerError[]) {
    super(errors.map((e) => e.message).join('; ') || 'request failed');
  }
  get code(): string | undefined {
    return this.errors[0]?.code;
  }
}

/** The gateway could not be reached, or answered with something that is not GraphQL. */
export class TransportError extends Error {}

interface RawError {
  message?: unknown;
  extensions?: { code?: unknown; errors?: unknown };
}

function toServerErrors(raw: unknown): ServerError[] {
  if (!Array.isArray(raw)) return [{ message: 'unexpected error', fields: [] }];
  return raw.map((e: RawError) => {
    const fields = Array.isArray(e?.extensions?.errors)
      ? (e.extensions.errors as Array<Record<string, unknown>>)
          .filter((f) => f && typeof f.field === 'string')
          .map((f) => ({ field: f.field as string, message: typeof f.message === 'string' ? f.message : '' }))
      : [];
    return {
      message: typeof e?.message === 'string' ? e.message : 'unexpected error',
      code: typeof e?.extensions?.code === 'string' ? e.extensions.code : undefined,
      fields,
    };
  });
}

/** REST problem codes as the GraphQL `extensions.code` of the same error (docs/api.md's table). */
const REST_CODES: Record<string, string> = { unauthorized: 'UNAUTHENTICATED', validation_failed: 'BAD_USER_INPUT', internal_error: 'INTERNAL_SERVER_ERROR' };

/** A REST problem body (RFC 9457) as the errors GraphQL would have given. */
function problemErrors(body: unknown, status: number): ServerError[] | null {
  const p = body as { detail?: unknown; title?: unknown; code?: unknown; errors?: unknown } | null;
  if (!p || typeof p !== 'object' || typeof p.code !== 'string') return null;
  const fields = Array.isArray(p.errors)
    ? (p.errors as Array<Record<string, unknown>>)
        .filter((f) => f && typeof f.field === 'string')
        .map((f) => ({ field: f.field as string, message: typeof f.message === 'string' ? f.message : '' }))
    : [];
  const message = typeof p.detail === 'string' ? p.detail : typeof p.title === 'string' ? p.title : `HTTP ${status}`;
  return [{ message, code: REST_CODES[p.code] ?? p.code.toUpperCase(), fields }];
}

/** A stored source, as `POST /v1/apps/{slug}/sources` answers it. */
export interface UploadedSource {
  id: string;
  sha256: string;
  size_bytes: number;
  created_at: string;
}

export interface UploadOptions {
  /** Told the bytes handed to the connection so far, as they go. */
  onProgress?(sent: number, total: number): void;
  /** Told about a busy gateway (429, 503) before the upload is tried again. */
  onNotice?(message: string): void;
}

/** Times a busy gateway (429 or 503 with Retry-After) is asked again before giving up. */
const UPLOAD_RETRIES = 5;

const USER_AGENT = 'hatch-cli/0.1';

/** Close codes after which a new connection may succeed: drops, restarts, keep-alive timeouts. */
const RETRYABLE_CLOSE_CODES = new Set([1000, 1001, 1005, 1006, 1011, 1012, 1013, 1014, 4408, 4499]);

const MAX_CONSECUTIVE_FAILURES = 12;

export interface StreamOptions<TData, TItem> {
  /** The item a `next` payload carries (or the items, for a batched stream), or null to skip it. */
  pick(data: TData): TItem | readonly TItem[] | null;
  /** Items at or below the last one seen are dropped: what makes a resumed stream exact. */
  seq?(item: TItem): number;
  onItem(item: TItem): void;
  /** Ends the stream after this item (for streams the server keeps open). */
  until?(item: TItem): boolean;
  /** Told about drops and reconnects (for stderr). */
  onNotice?(message: string): void;
}

export class HatchApi {
  constructor(
    readonly apiUrl: string,
    readonly token: string | null,
  ) {}

  get graphqlUrl(): string {
    return `${this.apiUrl}/graphql`;
  }

  get wsUrl(): string {
    return this.graphqlUrl.replace(/^http/, 'ws');
  }

  async request<TData, TVars>(document: TypedDocumentNode<TData, TVars>, variables: TVars): Promise<TData> {
    let res: Response;
    try {
      res = await fetch(this.graphqlUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json, application/json',
          'user-agent': USER_AGENT,
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        },
        body: JSON.stringify({ query: print(document), variables }),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new TransportError(`cannot reach ${this.apiUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await res.text();
    let body: { data?: TData | null; errors?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new TransportError(`${this.graphqlUrl} answered HTTP ${res.status} without a GraphQL response; is --api-url right?`);
    }
    if (body.errors) throw new ApiError(toServerErrors(body.errors));
    if (!body.data) throw new TransportError(`${this.graphqlUrl} answered HTTP ${res.status} without data`);
    return body.data;
  }

  /**
   * Uploads a .tar.gz (`file`, `bytes` long) as a source of the egg `slug`: `created` false when
   * the egg already had these bytes. The file is streamed, with its length declared, so a gateway
   * refuses one over its limit before it is sent. A refusal is an ApiError with the server's
   * message and fields; a busy gateway (429, 503) is asked again after its Retry-After.
   */
  async uploadSource(slug: string, file: string, bytes: number, opts: UploadOptions = {}): Promise<{ source: UploadedSource; created: boolean }> {
    const url = `${this.apiUrl}/v1/apps/${encodeURIComponent(slug)}/sources`;
    for (let attempt = 0; ; attempt++) {
      let sent = 0;
      opts.onProgress?.(0, bytes);
      const counted = createReadStream(file).pipe(
        new Transform({
          transform(chunk: Buffer, _enc, done) {
            sent += chunk.length;
            opts.onProgress?.(sent, bytes);
            done(null, chunk);
          },
        }),
      );
      let res: Response;
      let text: string;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/gzip',
            'content-length': String(bytes),
            accept: 'application/json, application/problem+json',
            'user-agent': USER_AGENT,
            ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          },
          body: Readable.toWeb(counted) as ReadableStream<Uint8Array>,
          duplex: 'half',
        });
        // A refusal may come before the whole body went; the answer is read before the body stops.
        text = await res.text();
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new TransportError(`cannot upload to ${this.apiUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
      } finally {
        counted.destroy();
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new TransportError(`${url} answered HTTP ${res.status} without a JSON body; is --api-url right?`);
      }
      if (res.status === 200 || res.status === 201) {
        const source = body as UploadedSource;
        if (typeof source?.id !== 'string') throw new TransportError(`${url} answered HTTP ${res.status} without a source id`);
        return { source, created: res.status === 201 };
      }
      const errors = problemErrors(body, res.status);
      if (!errors) throw new TransportError(`${url} answered HTTP ${res.status}`);
      const retryAfter = Number(res.headers.get('retry-after') ?? NaN);
      if ((res.status === 429 || res.status === 503) && attempt < UPLOAD_RETRIES && Number.isFinite(retryAfter) && retryAfter >= 0) {
        const waitS = Math.min(10, Math.max(0.25, retryAfter));
        opts.onNotice?.(`${errors[0].message}; trying again in ${waitS}s`);
        await new Promise((r) => setTimeout(r, waitS * 1000));
        continue;
      }
      throw new ApiError(errors);
    }
  }

  /**
   * Runs a subscription until the server completes it, and survives dropped connections: after a
   * drop it connects again and subscribes with the same variables, and `seq` drops what was
   * already delivered, so the caller sees every item once, in order. Server errors and a refused
   * token end it with an ApiError; too many failed connects in a row with a TransportError.
   */
  async stream<TData, TVars extends Record<string, unknown>, TItem>(
    document: TypedDocumentNode<TData, TVars>,
    variables: TVars,
    opts: StreamOptions<TData, TItem>,
  ): Promise<void> {
    let lastSeq = -Infinity;
    let failures = 0;
    let everConnected = false;
    for (;;) {
      let connected = false;
      const client = createClient({
        url: this.wsUrl,
        webSocketImpl: class extends WebSocket {
          constructor(address: string, protocols?: string | string[]) {
            super(address, protocols, { headers: { 'user-agent': USER_AGENT } });
          }
        },
        connectionParams: this.token ? { authorization: `Bearer ${this.token}` } : {},
        retryAttempts: 0,
        lazy: true,
        on: {
          connected: () => {
            connected = everConnected = true;
            if (failures > 0) opts.onNotice?.('reconnected; resuming the stream');
            failures = 0;
          },
        },
      });
      try {
        await new Promise<void>((resolve, reject) => {
          client.subscribe<TData>(
            { query: print(document), variables },
            {
              next: (value) => {
                if (value.errors?.length) return reject(new ApiError(toServerErrors(value.errors)));
                if (!value.data) return;
                const picked = opts.pick(value.data);
                if (picked === null) return;
                for (const item of Array.isArray(picked) ? (picked as readonly TItem[]) : [picked as TItem]) {
                  if (opts.seq) {
                    const seq = opts.seq(item);
                    if (seq <= lastSeq) continue;
                    lastSeq = seq;
                  }
                  opts.onItem(item);
                  if (opts.until?.(item)) return resolve();
                }
              },
              error: reject,
              complete: resolve,
            },
          );
        });
        return;
      } catch (err) {
        if (err instanceof ApiError) throw err;
        if (Array.isArray(err)) throw new ApiError(toServerErrors(err));
        const code = (err as { code?: unknown })?.code;
        if (typeof code === 'number') {
          if (code === 4401) throw new ApiError([{ message: 'the token was refused (unauthorized)', code: 'UNAUTHENTICATED', fields: [] }]);
          if (!RETRYABLE_CLOSE_CODES.has(code)) {
            const reason = (err as { reason?: unknown }).reason;
            throw new TransportError(`the server closed the stream (code ${code}${typeof reason === 'string' && reason ? `: ${reason}` : ''})`);
          }
        }
        // A gateway that never answered is an error now; one that dropped us is retried a while.
        if (!everConnected)
          throw new TransportError(`cannot open a graphql-ws connection to ${this.wsUrl}: ${typeof code === 'number' ? `code ${code}` : describe(err)}`);
        if (!connected) failures++;
        else failures = 1;
        if (failures > MAX_CONSECUTIVE_FAILURES) throw new TransportError(`lost the connection to ${this.apiUrl} and could not reconnect`);
        const waitMs = Math.min(5000, 250 * 2 ** (failures - 1));
        const why = typeof code === 'number' ? `code ${code}` : describe(err);
        opts.onNotice?.(`connection lost (${why}); reconnecting in ${(waitMs / 1000).toFixed(1)}s`);
        await new Promise((r) => setTimeout(r, waitMs));
      } finally {
        void client.dispose();
      }
    }
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return (err as NodeJS.ErrnoException).code ?? err.message;
  const e = err as { message?: unknown; type?: unknown };
  const said = [e?.message, e?.type].find((v) => typeof v === 'string' && v !== '');
  return typeof said === 'string' ? said : 'connection error';
}
