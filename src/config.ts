import path from 'node:path';
import { parseTrustProxy, TrustProxy } from './http/client-ip';

/** Every setting the gateway reads. This module is the only reader of process.env. */
export interface Config {
  port: number;
  host: string;
  /** null: start an embedded PostgreSQL in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  /** 32-byte key for secrets at rest; null: generated into the data dir on first start. */
  encryptionKey: Buffer | null;
  appsDomain: string;
  /** What builds and runs eggs; `auto`: docker when an Engine answers, else simulated (src/runtime/select.ts). */
  runtime: 'auto' | 'docker' | 'simulated';
  docker: {
    /** The Engine's address as `DOCKER_HOST` writes it (`unix:///path`, `tcp://host:port`); null: /var/run/docker.sock. */
    host: string | null;
    /** The base of the Node image generated for a source without a Dockerfile. */
    nodeImage: string;
    /** A build (image and first start) that takes longer fails. */
    buildTimeoutMs: number;
    /** A new container must accept connections on $PORT within this, or its deployment fails. */
    healthTimeoutMs: number;
    /** A free-tier egg with no request for this long is stopped until the next request wakes it; 0: never. */
    sleepAfterMs: number;
    /** How old a volume's measured `used_mb` may be when read. */
    volumeUsageMaxAgeMs: number;
    /** `container`: one container per replica; `swarm`: a Swarm service per deployment (the Engine must be a swarm manager). */
    mode: 'container' | 'swarm';
  };
  /** The router's port (requests to eggs, by Host); 0 picks a free one. */
  routerPort: number;
  /** `haproxy`: HAProxy serves awake eggs in front of the Node router (src/http/edge.ts); `node`: the Node router alone. */
  routerEdge: 'node' | 'haproxy';
  /** The HAProxy executable, for routerEdge `haproxy`. */
  haproxyBin: string;
  /** How long a host HAProxy serves may go without a request (or an open connection) before the Node router takes it back. */
  routerEdgeIdleMs: number;
  /** `auto`: HAProxy reaches an egg on this host in its own network namespace where it can (as root), not through its published port; `off`: always the published port. */
  routerEdgeNamespaces: 'auto' | 'off';
  /** The PostgreSQL server where each preview gets a database and role of its own (docker runtime); null: the gateway's own. */
  previewDatabaseUrl: string | null;
  simBuildMs: number;
  previewTtlMs: number;
  simRuntimeLogMs: number;
  /** 0: simulated eggs never sleep. */
  simSleepAfterMs: number;
  simCommandMs: number;
  /** How often the cron scheduler looks for due crons; 0: never by itself (tests tick it). */
  cronTickMs: number;
  /** Log lines older than this many days are removed by the `logs-retention` job; 0 keeps them. */
  logRetentionDays: number;
  /** Events one subscriber may fall behind by before its stream ends with LIMIT_EXCEEDED. */
  subscriptionMaxPending: number;
  /** How long an authenticated token's lookup is kept (0: every request reads it); see TokenCacheOptions. */
  tokenCacheMs: number;
  /** Count caps, each a 422 limit_exceeded when reached. */
  limits: {
    /** Live (neither revoked nor expired) API tokens per account, the first one included. */
    tokensPerAccount: number;
    /** Eggs an account owns (collaborations do not count). */
    eggsPerAccount: number;
    cronsPerEgg: number;
    /** The most replicas an egg of each tier may run. */
    replicas: { free: number; always_on: number };
  };
  webhooks: {
    allowHosts: string[];
    timeoutMs: number;
    retryScheduleMs: number[];
    disableAfter: number;
    /** PEM file of an extra CA to trust for receivers (operators' internal CAs, tests). */
    caFile: string | null;
    /** Whether this gateway sends deliveries (off: leaves them to the others). */
    worker: boolean;
  };
  /** Log drains; their URLs follow the webhooks' address rules, timeout and extra CA. */
  logDrains: {
    /** Lines per request (NDJSON) or per write (syslog). */
    batchLines: number;
    /** How often each gateway claims drains and looks for lines without being woken. */
    pollMs: number;
    /** The first retry's delay after a failed attempt, doubled each further failure up to `retryMaxMs`. */
    retryBaseMs: number;
    retryMaxMs: number;
    /** A drain is disabled after this many attempts in a row failed. */
    disableAfter: number;
    /** Whether this gateway ships drains (off: leaves them to the others). */
    worker: boolean;
  };
  cronMissedAfterMs: number;
  cronRunTimeoutMs: number;
  jobs: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  shutdownGraceMs: number;
  /** Proxies whose X-Forwarded-For names the client (per-IP rate limits); false: none. */
  trustProxy: TrustProxy;
  /** Where users reach this gateway (sandbox checkout pages); null: the address it listens on. */
  publicUrl: string | null;
  energy: {
    free: { daily: number; weekly: number };
    always_on: { daily: number; weekly: number };
  };
  stripe: {
    secretKey: string | null;
    priceId: string | null;
    /** null: generated into the data dir (sandbox only). */
    webhookSecret: string | null;
    /** For tests against a local Stripe-compatible server: `http://127.0.0.1:12111`. */
    apiBase: string | null;
  };
  keepAliveMs: number;
  /** Redis for state shared by every gateway (rate limits); null: each gateway keeps its own. */
  redisUrl: string | null;
  /** Prefix of every Redis key this deployment uses, so several can share one Redis. */
  redisPrefix: string;
  /** Abuse limits on GraphQL operations, whatever the transport (HTTP, graphql-ws, REST's own at start). */
  graphqlLimits: { maxDepth: number; maxCost: number; maxAliases: number; maxDirectives: number; maxTokens: number };
  /** Requests per minute: per token, and per client IP for requests without one; 0: unlimited. */
  rateLimit: { perMin: number; anonPerMin: number };
  /** Operations running at once on one graphql-ws connection. */
  wsMaxSubscriptions: number;
  /** Largest request body (and graphql-ws message), bytes. */
  bodyLimitBytes: number;
  /** The whole HTTP request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** An HTTP connection with no bytes either way for this long is closed. */
  idleTimeoutMs: number;
  /** Open connections per client address; 0: no cap. */
  maxConnectionsPerIp: number;
  /** Longest any SQL statement of the gateway may run. */
  dbStatementTimeoutMs: number;
  /** How long opening a database connection (or waiting for one from a pool) may take. */
  dbConnectTimeoutMs: number;
  /** Per Stripe API call. */
  stripeTimeoutMs: number;
  /** How long a gateway's claim on a build or a running egg lasts unless renewed (every third of it). */
  leaseMs: number;
  /** The channel on which gateways sharing the database share events (NOTIFY; on Redis after `redisPrefix`). */
  eventsChannel: string;
  /** Uploaded sources (.tar.gz of an egg's folder). */
  sources: {
    /** Largest upload, compressed and once unpacked (HATCHERY_SOURCE_MAX_MB). */
    maxBytes: number;
    /** How long a source no deployment references is kept (each egg's newest is always kept). */
    retentionMs: number;
  };
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** A list like `5s,5m,2h` (units ms, s, m, h) as milliseconds. */
function durations(env: NodeJS.ProcessEnv, name: string, fallback: string): number[] {
  const raw = env[name] || fallback;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return raw.split(',').map((part) => {
    const m = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(part);
    if (!m) throw new ConfigError(`${name} must be a comma-separated list like 5s,5m,2h; got "${raw}"`);
    return Number(m[1]) * unit[m[2]];
  });
}

function trustProxy(env: NodeJS.ProcessEnv): TrustProxy {
  try {
    return parseTrustProxy(env.HATCHERY_TRUST_PROXY);
  } catch (err) {
    throw new ConfigError(`HATCHERY_TRUST_PROXY must be a hop count or a comma-separated list of proxy addresses or CIDR ranges: ${(err as Error).message}`);
  }
}

function key(env: NodeJS.ProcessEnv): Buffer | null {
  const raw = env.HATCHERY_ENCRYPTION_KEY;
  if (!raw) return null;
  const buf = Buffer.from(raw, 'base64');
  if (buf.length !== 32) throw new ConfigError('HATCHERY_ENCRYPTION_KEY must be 32 bytes, base64-encoded');
  return buf;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const config: Config = {
    port: int(env, 'PORT', 4000, 0, 65535),
    host: env.HOST || '0.0.0.0',
    databaseUrl: env.DATABASE_URL || null,
    dataDir: path.resolve(env.HATCHERY_DATA_DIR || '.hatchery'),
    encryptionKey: key(env),
    appsDomain: env.HATCHERY_APPS_DOMAIN || 'hatchery.run',
    runtime: oneOf(env, 'HATCHERY_RUNTIME', ['auto', 'docker', 'simulated'] as const, 'auto'),
    docker: {
      host: env.DOCKER_HOST || null,
      nodeImage: env.HATCHERY_NODE_IMAGE || 'node:20-slim',
      buildTimeoutMs: int(env, 'HATCHERY_BUILD_TIMEOUT_MS', 600_000, 1000, 86_400_000),
      healthTimeoutMs: int(env, 'HATCHERY_HEALTH_TIMEOUT_MS', 60_000, 100, 3_600_000),
      sleepAfterMs: int(env, 'HATCHERY_SLEEP_AFTER_MS', 900_000, 0, 7 * 86_400_000),
      volumeUsageMaxAgeMs: int(env, 'HATCHERY_VOLUME_USAGE_MAX_AGE_MS', 60_000, 0, 86_400_000),
      mode: oneOf(env, 'HATCHERY_DOCKER_MODE', ['container', 'swarm'] as const, 'container'),
    },
    routerPort: int(env, 'HATCHERY_ROUTER_PORT', 8080, 0, 65535),
    routerEdge: oneOf(env, 'HATCHERY_ROUTER_EDGE', ['node', 'haproxy'] as const, 'node'),
    haproxyBin: env.HATCHERY_HAPROXY_BIN || 'haproxy',
    routerEdgeIdleMs: int(env, 'HATCHERY_ROUTER_EDGE_IDLE_MS', 60_000, 1000, 86_400_000),
    routerEdgeNamespaces: oneOf(env, 'HATCHERY_ROUTER_EDGE_NAMESPACES', ['auto', 'off'] as const, 'auto'),
    previewDatabaseUrl: env.HATCHERY_PREVIEW_DATABASE_URL || null,
    simBuildMs: int(env, 'HATCHERY_SIM_BUILD_MS', 2000, 0, 600_000),
    previewTtlMs: int(env, 'HATCHERY_PREVIEW_TTL_HOURS', 168, 1, 24 * 365) * 3600 * 1000,
    simRuntimeLogMs: int(env, 'HATCHERY_SIM_RUNTIME_LOG_MS', 5000, 50, 3_600_000),
    simSleepAfterMs: int(env, 'HATCHERY_SIM_SLEEP_AFTER_MS', 0, 0, 86_400_000),
    simCommandMs: int(env, 'HATCHERY_SIM_COMMAND_MS', 500, 0, 3_600_000),
    cronTickMs: int(env, 'HATCHERY_CRON_TICK_MS', 1000, 0, 60_000),
    logRetentionDays: int(env, 'HATCHERY_LOG_RETENTION_DAYS', 30, 0, 36_500),
    subscriptionMaxPending: int(env, 'HATCHERY_SUBSCRIPTION_MAX_PENDING', 10_000, 10, 1_000_000),
    tokenCacheMs: int(env, 'HATCHERY_TOKEN_CACHE_MS', 250, 0, 1000),
    limits: {
      tokensPerAccount: int(env, 'HATCHERY_MAX_TOKENS_PER_ACCOUNT', 50, 1, 100_000),
      eggsPerAccount: int(env, 'HATCHERY_MAX_EGGS_PER_ACCOUNT', 100, 1, 100_000),
      cronsPerEgg: int(env, 'HATCHERY_MAX_CRONS_PER_EGG', 20, 1, 100_000),
      replicas: {
        free: int(env, 'HATCHERY_MAX_REPLICAS_FREE', 1, 1, 100),
        always_on: int(env, 'HATCHERY_MAX_REPLICAS_ALWAYS_ON', 3, 1, 100),
      },
    },
    webhooks: {
      allowHosts: (env.HATCHERY_WEBHOOK_ALLOW_HOSTS ?? '')
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
      timeoutMs: int(env, 'HATCHERY_WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
      retryScheduleMs: durations(env, 'HATCHERY_WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,10h'),
      disableAfter: int(env, 'HATCHERY_WEBHOOK_DISABLE_AFTER', 5, 1, 1000),
      caFile: env.HATCHERY_WEBHOOK_CA_FILE || null,
      worker: oneOf(env, 'HATCHERY_WEBHOOK_WORKER', ['on', 'off'] as const, 'on') === 'on',
    },
    logDrains: {
      batchLines: int(env, 'HATCHERY_LOG_DRAIN_BATCH_LINES', 1000, 1, 10_000),
      pollMs: int(env, 'HATCHERY_LOG_DRAIN_POLL_MS', 1000, 20, 60_000),
      retryBaseMs: int(env, 'HATCHERY_LOG_DRAIN_RETRY_BASE_MS', 1000, 10, 3_600_000),
      retryMaxMs: int(env, 'HATCHERY_LOG_DRAIN_RETRY_MAX_MS', 300_000, 10, 86_400_000),
      disableAfter: int(env, 'HATCHERY_LOG_DRAIN_DISABLE_AFTER', 30, 1, 100_000),
      worker: oneOf(env, 'HATCHERY_LOG_DRAIN_WORKER', ['on', 'off'] as const, 'on') === 'on',
    },
    cronMissedAfterMs: int(env, 'HATCHERY_CRON_MISSED_AFTER_MS', 30_000, 1000, 3_600_000),
    cronRunTimeoutMs: int(env, 'HATCHERY_CRON_RUN_TIMEOUT_MS', 3_600_000, 1000, 86_400_000),
    jobs: oneOf(env, 'HATCHERY_JOBS', ['on', 'off'] as const, 'on') === 'on',
    logLevel: oneOf(env, 'LOG_LEVEL', ['debug', 'info', 'warn', 'error', 'silent'] as const, 'info'),
    shutdownGraceMs: int(env, 'HATCHERY_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    trustProxy: trustProxy(env),
    keepAliveMs: int(env, 'HATCHERY_WS_KEEPALIVE_MS', 15_000, 1000, 600_000),
    redisUrl: env.REDIS_URL || null,
    redisPrefix: env.HATCHERY_REDIS_PREFIX || 'hatchery:',
    graphqlLimits: {
      maxDepth: int(env, 'HATCHERY_GRAPHQL_MAX_DEPTH', 12, 1, 1000),
      maxCost: int(env, 'HATCHERY_GRAPHQL_MAX_COST', 10_000, 1, 100_000_000),
      maxAliases: int(env, 'HATCHERY_GRAPHQL_MAX_ALIASES', 15, 0, 10_000),
      maxDirectives: int(env, 'HATCHERY_GRAPHQL_MAX_DIRECTIVES', 20, 0, 10_000),
      maxTokens: int(env, 'HATCHERY_GRAPHQL_MAX_TOKENS', 1000, 1, 1_000_000),
    },
    rateLimit: {
      perMin: int(env, 'HATCHERY_RATE_LIMIT_PER_MIN', 600, 0, 100_000_000),
      anonPerMin: int(env, 'HATCHERY_RATE_LIMIT_ANON_PER_MIN', 60, 0, 100_000_000),
    },
    wsMaxSubscriptions: int(env, 'HATCHERY_WS_MAX_SUBSCRIPTIONS', 100, 1, 100_000),
    bodyLimitBytes: int(env, 'HATCHERY_BODY_LIMIT_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    requestTimeoutMs: int(env, 'HATCHERY_REQUEST_TIMEOUT_MS', 30_000, 1000, 3_600_000),
    idleTimeoutMs: int(env, 'HATCHERY_IDLE_TIMEOUT_MS', 120_000, 1000, 3_600_000),
    maxConnectionsPerIp: int(env, 'HATCHERY_MAX_CONNECTIONS_PER_IP', 256, 0, 1_000_000),
    dbStatementTimeoutMs: int(env, 'HATCHERY_DB_STATEMENT_TIMEOUT_MS', 30_000, 0, 86_400_000),
    dbConnectTimeoutMs: int(env, 'HATCHERY_DB_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    stripeTimeoutMs: int(env, 'HATCHERY_STRIPE_TIMEOUT_MS', 10_000, 100, 600_000),
    leaseMs: int(env, 'HATCHERY_LEASE_MS', 30_000, 300, 600_000),
    eventsChannel: env.HATCHERY_EVENTS_CHANNEL || 'hatchery_events',
    sources: {
      // At most 2047 MB: sizes are PostgreSQL integers and GraphQL Ints.
      maxBytes: int(env, 'HATCHERY_SOURCE_MAX_MB', 100, 1, 2047) * 1024 * 1024,
      retentionMs: int(env, 'HATCHERY_SOURCE_RETENTION_MS', 24 * 3600 * 1000, 0, 365 * 24 * 3600 * 1000),
    },
    publicUrl: env.HATCHERY_PUBLIC_URL ? env.HATCHERY_PUBLIC_URL.replace(/\/+$/, '') : null,
    energy: {
      free: {
        daily: int(env, 'HATCHERY_ENERGY_FREE_DAILY', 120, 0, 1_000_000),
        weekly: int(env, 'HATCHERY_ENERGY_FREE_WEEKLY', 600, 0, 10_000_000),
      },
      always_on: {
        daily: int(env, 'HATCHERY_ENERGY_ALWAYS_ON_DAILY', 1440, 0, 1_000_000),
        weekly: int(env, 'HATCHERY_ENERGY_ALWAYS_ON_WEEKLY', 5000, 0, 10_000_000),
      },
    },
    stripe: {
      secretKey: env.STRIPE_SECRET_KEY || null,
      priceId: env.STRIPE_PRICE_ID || null,
      webhookSecret: env.STRIPE_WEBHOOK_SECRET || null,
      apiBase: env.STRIPE_API_BASE || null,
    },
  };
  if (config.cronTickMs > 0 && config.cronMissedAfterMs < 2 * config.cronTickMs) {
    throw new ConfigError('HATCHERY_CRON_MISSED_AFTER_MS must be at least twice HATCHERY_CRON_TICK_MS, or due times would be missed while running');
  }
  if (!/^[A-Za-z0-9_.:-]{1,63}$/.test(config.eventsChannel)) {
    throw new ConfigError('HATCHERY_EVENTS_CHANNEL must be 1 to 63 letters, digits or _.:-');
  }
  if (config.stripe.secretKey && !config.stripe.priceId) throw new ConfigError('STRIPE_SECRET_KEY needs STRIPE_PRICE_ID (the energy pack price)');
  if (config.stripe.secretKey && !config.stripe.webhookSecret) throw new ConfigError('STRIPE_SECRET_KEY needs STRIPE_WEBHOOK_SECRET');
  return config;
}
