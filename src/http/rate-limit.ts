import { hash } from 'node:crypto';
import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Redis from 'ioredis';
import { Logger } from '../log';
import { GraphQLError } from 'graphql';
import { credentialOf } from '../graphql/build-context';
import { RateLimited } from '../errors';
import { ERROR_HTTP, sendProblem } from './problems';
import { GRAPHQL_PATH, isGraphQLRoute, sendGraphQLErrors } from './responses';

/**
 * Requests per minute per API token, and per client IP for requests without one, shared by REST,
 * GraphQL over HTTP and graphql-ws subscribes. Windows are fixed: the first request opens a
 * minute, and the count resets when it ends. A request is counted under the token it presents,
 * hashed, before any database lookup, so a flood costs no SQL; bad tokens are answered 401 and
 * counted against their IP, and an IP that has sent more bad tokens than the anonymous allowance
 * is refused (429) until its window ends, whatever token it tries next. With Redis the counts
 * are shared by every gateway; without it (or while Redis does not answer) each keeps its own.
 */

export interface Verdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

interface Count {
  count: number;
  ttlMs: number;
}

/** A bucket store: `add` counts a hit in the key's window (opened by the first), `peek` only reads. */
interface Store {
  add(key: string, windowMs: number, peek?: string): Promise<{ hit: Count; peeked: Count | null }>;
  close(): Promise<void>;
}

class MemoryStore implements Store {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper = setInterval(() => this.sweep(), 60_000).unref();

  private read(key: string): Count {
    const w = this.windows.get(key);
    const now = Date.now();
    return w && w.resetAt > now ? { count: w.count, ttlMs: w.resetAt - now } : { count: 0, ttlMs: 0 };
  }

  add(key: string, windowMs: number, peek?: string) {
    const now = Date.now();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) this.windows.set(key, (w = { count: 0, resetAt: now + windowMs }));
    w.count += 1;
    return Promise.resolve({ hit: { count: w.count, ttlMs: w.resetAt - now }, peeked: peek ? this.read(peek) : null });
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    this.windows.clear();
    return Promise.resolve();
  }
}

// INCR opens the window with its expiry; the second key is only read (bad-token count of the IP).
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
local p = tonumber(redis.call('GET', KEYS[2]) or '0')
local pttl = redis.call('PTTL', KEYS[2])
return {n, ttl, p, pttl}`;

type HitRedis = Redis & { hatcheryHit(key: string, peek: string, windowMs: number): Promise<[number, number, number, number]> };

/** Redis buckets; when Redis fails or is slow, the gateway counts on its own until it is back. */
class RedisStore implements Store {
  private readonly redis: HitRedis;
  private lastWarning = 0;

  constructor(
    url: string,
    private readonly fallback: MemoryStore,
    private readonly log: Logger,
  ) {
    this.redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    }) as HitRedis;
    this.redis.defineCommand('hatcheryHit', { numberOfKeys: 2, lua: HIT_SCRIPT });
    this.redis.on('error', (err) => this.warn(err));
  }

  private warn(err: unknown): void {
    if (Date.now() - this.lastWarning < 30_000) return;
    this.lastWarning = Date.now();
    this.log.warn({ err }, 'rate limit store (Redis) unavailable: counting locally');
  }

  /** Waits for the connection; a Redis that is down does not stop the gateway. */
  async connect(): Promise<void> {
    await this.redis.connect().catch((err) => this.warn(err));
  }

  async add(key: string, windowMs: number, peek?: string) {
    try {
      const [n, ttl, p, pttl] = await this.redis.hatcheryHit(key, peek ?? key, windowMs);
      return { hit: { count: n, ttlMs: ttl }, peeked: peek ? { count: p, ttlMs: Math.max(pttl, 0) } : null };
    } catch (err) {
      this.warn(err);
      return this.fallback.add(key, windowMs, peek);
    }
  }

  async close(): Promise<void> {
    await this.fallback.close();
    this.redis.disconnect();
  }
}

export interface RateLimiterOptions {
  /** Per token per window; 0: unlimited. */
  perMin: number;
  /** Per IP per window for requests without a token, and for bad tokens; 0: unlimited. */
  anonPerMin: number;
  redisUrl?: string | null;
  redisPrefix?: string;
  log: Logger;
}

/** Windows are one minute, as the limits' names say. */
const WINDOW_MS = 60_000;

const sha = (s: string) => hash('sha256', s, 'hex').slice(0, 32);

export class RateLimiter {
  private readonly store: Store;
  private readonly prefix: string;

  constructor(private readonly opts: RateLimiterOptions) {
    const memory = new MemoryStore();
    this.store = opts.redisUrl ? new RedisStore(opts.redisUrl, memory, opts.log) : memory;
    this.prefix = `${opts.redisPrefix ?? 'hatchery:'}rl:`;
  }

  async start(): Promise<void> {
    if (this.store instanceof RedisStore) await this.store.connect();
  }

  private verdict(c: Count, limit: number): Verdict {
    return {
      allowed: c.count <= limit,
      limit,
      remaining: Math.max(0, limit - c.count),
      resetSeconds: Math.max(1, Math.ceil(c.ttlMs / 1000)),
    };
  }

  /** Counts one request; null when no limit applies to it. */
  async take(credential: string | null, ip: string): Promise<Verdict | null> {
    const { perMin, anonPerMin } = this.opts;
    if (credential === null) {
      if (!anonPerMin) return null;
      return this.verdict((await this.store.add(`${this.prefix}ip:${ip}`, WINDOW_MS)).hit, anonPerMin);
    }
    if (!perMin) return null;
    const failKey = anonPerMin ? `${this.prefix}fail:${ip}` : undefined;
    const { hit, peeked } = await this.store.add(`${this.prefix}tok:${sha(credential)}`, WINDOW_MS, failKey);
    if (peeked && peeked.count >= anonPerMin) return { ...this.verdict(peeked, anonPerMin), allowed: false, remaining: 0 };
    return this.verdict(hit, perMin);
  }

  /**
   * Counts one request of an authenticated account, whichever of its tokens it came with: an
   * account cannot mint tokens for fresh budgets. Null when no limit applies.
   */
  async takeAccount(userId: string): Promise<Verdict | null> {
    if (!this.opts.perMin) return null;
    return this.verdict((await this.store.add(`${this.prefix}acct:${userId}`, WINDOW_MS)).hit, this.opts.perMin);
  }

  /** A request from `ip` presented a token that was refused, or was refused before its token was looked at. */
  async failedAuth(ip: string): Promise<void> {
    if (this.opts.anonPerMin) await this.store.add(`${this.prefix}fail:${ip}`, WINDOW_MS);
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

function rateLimitMessage(v: Verdict): string {
  return `Too many requests: the limit is ${v.limit} a minute; retry in ${v.resetSeconds} s`;
}

/** The GraphQL error of a request over the limit (GraphQL over HTTP and graphql-ws subscribes). */
export function rateLimitError(v: Verdict): GraphQLError {
  return new GraphQLError(rateLimitMessage(v), { extensions: { code: 'RATE_LIMITED', retryAfter: v.resetSeconds } });
}

/** Not limited: probes, metrics, the API documents, the explorer page and its assets, and the payment webhook (signed). */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs', '/billing/webhooks/stripe']);

function exempt(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  if (route === undefined) return false;
  if (EXEMPT.has(route) || route.startsWith(`${GRAPHQL_PATH}/explorer/`)) return true;
  // GET /graphql without a query is the explorer page (or a 400): nothing runs.
  return isGraphQLRoute(req) && (req.method === 'GET' || req.method === 'HEAD') && !Object.hasOwn(req.query ?? {}, 'query');
}

/** The domain error of an account over its limit: 429 with the verdict's headers. */
export function rateLimited(v: Verdict): RateLimited {
  return new RateLimited(rateLimitMessage(v), v.resetSeconds);
}

function limitHeaders(reply: FastifyReply, verdict: Verdict): void {
  reply.header('RateLimit-Limit', verdict.limit);
  reply.header('RateLimit-Remaining', verdict.remaining);
  reply.header('RateLimit-Reset', verdict.resetSeconds);
}

/** Requests whose token was found good; the others that carry one and are refused count against their IP. */
const authenticated = new WeakSet<FastifyRequest>();

/**
 * `RateLimit-*` headers (IETF draft names) on every limited response; 429 with `Retry-After` over
 * the limit. Before authentication a request counts under its token (no SQL); `authenticated`
 * then counts it under its account. A request that carries a token but is refused without it
 * being found good (a bad token, a bad API-Version, an operation over the limits, a random bearer
 * value on any refusal) counts against its IP, as requests without a token do.
 */
export function registerRateLimit(
  app: FastifyInstance,
  limiter: RateLimiter,
): { authenticated(req: FastifyRequest, reply: FastifyReply, userId: string): Promise<void> } {
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (exempt(req)) return;
    const verdict = await limiter.take(credentialOf(req.headers.authorization), req.ip);
    if (!verdict) return;
    limitHeaders(reply, verdict);
    if (verdict.allowed) return;
    reply.header('Retry-After', verdict.resetSeconds);
    if (isGraphQLRoute(req)) return sendGraphQLErrors(reply, ERROR_HTTP.RATE_LIMITED.status, [rateLimitError(verdict).toJSON()]);
    return sendProblem(reply, 'RATE_LIMITED', rateLimitMessage(verdict));
  });
  // Callback-style: most responses need nothing here, and an async hook costs a promise each.
  app.addHook('onResponse', (req, reply, done) => {
    const status = reply.statusCode;
    if (status < 400 || status >= 500 || status === 429 || authenticated.has(req) || exempt(req) || credentialOf(req.headers.authorization) === null) {
      return done();
    }
    limiter.failedAuth(req.ip).then(() => done(), done);
  });
  return {
    /** Counts the request under its account, once its token is found good; throws RateLimited over the limit. */
    async authenticated(req, reply, userId) {
      authenticated.add(req);
      const verdict = await limiter.takeAccount(userId);
      if (!verdict) return;
      const shown = Number(reply.getHeader('RateLimit-Remaining') ?? Infinity);
      if (!verdict.allowed || verdict.remaining < shown) limitHeaders(reply, verdict);
      if (verdict.allowed) return;
      reply.header('Retry-After', verdict.resetSeconds);
      throw rateLimited(verdict);
    },
  };
}
