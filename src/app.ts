import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AddressInfo, Server as NodeServer } from 'node:net';
import { DataSource } from 'typeorm';
import { Clock, systemClock } from './clock';
import { Config } from './config';
import { createDataSource, DataSourceOptions } from './data-source';
import { EmbeddedPostgres, startEmbeddedPostgres } from './db/embedded';
import { contextFactory } from './graphql/build-context';
import { createPubSub } from './bus/pubsub';
import { GatewayPubSub, topicCodecs, Topics } from './modules';
import { EventBus } from './bus/event-bus';
import { AccessEvent } from './modules/accounts/access.topics';
import { expandStoredAppLines, expandStoredLines } from './modules/deployments/log-writer';
import { PgTransport } from './bus/pg-transport';
import { RedisTransport } from './bus/redis-transport';
import { buildGatewaySchema } from './graphql/schema';
import { createHttpServer, HttpServer } from './http/server';
import { mountRest } from './rest';
import { Jobs } from './jobs/jobs';
import { createLogger, Logger } from './log';
import { Metrics } from './metrics';
import { Runtime } from './runtime/runtime.port';
import { SimulatedRuntime } from './runtime/simulated.runtime';
import { DockerRuntime } from './runtime/docker/docker.runtime';
import { mayEnterNamespaces } from './runtime/namespaces';
import { SwarmRuntime } from './runtime/docker/swarm.runtime';
import { dockerClient } from './runtime/docker/engine';
import { PreviewDatabases } from './runtime/docker/preview-databases';
import { PreviewRedis } from './runtime/docker/preview-redis';
import { PreviewRelays } from './runtime/docker/preview-relays';
import { createRouter, Router } from './http/router';
import { SecretBox } from './secrets';
import Stripe from 'stripe';
import { SandboxProvider, StripeProvider } from './modules/billing/payment-provider';
import { createServices, Services } from './services';

export interface BuildOptions {
  clock?: Clock;
  /** Replaces the simulated runtime. */
  runtime?: (ds: DataSource) => Runtime;
  logger?: Logger;
  db?: DataSourceOptions;
}

export interface Gateway {
  /** Connects the database, migrates, and listens; resolves with the base URL. */
  start(port?: number): Promise<string>;
  /** Graceful: subscriptions close, in-flight requests finish, jobs stop, then the database. */
  stop(): Promise<void>;
  readonly url: string;
  /** The router's base URL: requests to eggs, by Host. */
  readonly routerUrl: string;
  /** The API's listener, for what only the server side sees (its connections). */
  readonly server: NodeServer;
  readonly services: Services;
  readonly ds: DataSource;
  readonly pubsub: GatewayPubSub;
  readonly log: Logger;
}

/**
 * A secret kept in the data dir (mode 0600), made by `make` the first time. Several gateways (or
 * test workers) starting at once on one data dir all end up with the first one's: it is written
 * whole to a file of its own, then linked into place, which fails if another got there first.
 */
function dataDirSecret(config: Config, name: string, make: () => string): string {
  const file = path.join(config.dataDir, name);
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true });
    const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(draft, make() + '\n', { mode: 0o600, flag: 'wx' });
    try {
      linkSync(draft, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(draft);
    }
  }
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/** The key for secrets at rest: from config, else generated once into the data dir. */
export function loadEncryptionKey(config: Config): Buffer {
  return (
    config.encryptionKey ??
    Buffer.from(
      dataDirSecret(config, 'encryption.key', () => randomBytes(32).toString('base64')),
      'base64',
    )
  );
}

/** Stripe when it is configured, else the built-in sandbox; both verified with the same secret. */
function paymentProvider(config: Config, baseUrl: () => string) {
  const webhookSecret = config.stripe.webhookSecret ?? dataDirSecret(config, 'stripe-webhook.secret', () => `whsec_${randomBytes(24).toString('base64')}`);
  const api = config.stripe.apiBase ? new URL(config.stripe.apiBase) : null;
  const stripe = new Stripe(config.stripe.secretKey ?? 'sk_test_sandbox_unused', {
    timeout: config.stripeTimeoutMs, // per attempt; the SDK's own default is 80 s
    maxNetworkRetries: 1, // so one call takes at most about twice the timeout
    ...(api ? { host: api.hostname, port: Number(api.port), protocol: api.protocol.replace(':', '') as 'http' | 'https' } : {}),
  });
  const provider = config.stripe.secretKey ? new StripeProvider(stripe, config.stripe.priceId!) : new SandboxProvider(baseUrl);
  return { provider, stripe, webhookSecret };
}

/** Connects to DATABASE_URL, or starts the embedded PostgreSQL; then runs pending migrations. */
export async function openDatabase(
  config: Config,
  log: Logger,
  opts?: DataSourceOptions,
): Promise<{ ds: DataSource; embedded: EmbeddedPostgres | null; url: string }> {
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(config.dataDir, (m) => log.info(m));
  const url = config.databaseUrl ?? embedded!.url;
  const ds = createDataSource(url, { statementTimeoutMs: config.dbStatementTimeoutMs, connectTimeoutMs: config.dbConnectTimeoutMs, ...opts });
  try {
    await ds.initialize();
    await ds.runMigrations({ transaction: 'each' });
  } catch (err) {
    if (ds.isInitialized) await ds.destroy();
    await embedded?.stop();
    throw err;
  }
  return { ds, embedded, url };
}

export function buildApp(config: Config, opts: BuildOptions = {}): Gateway {
  const log = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  // Shared with the other gateways on this database once started (src/bus).
  const busError = (err: unknown) => log.warn({ err }, 'event bus');
  const bus = new EventBus(topicCodecs, busError);
  const pubsub = createPubSub<Topics>(bus, config.subscriptionMaxPending);
  const metrics = new Metrics({}, (err) => log.warn({ err }, 'metrics collection failed'));
  let ds: DataSource | null = null;
  let embedded: EmbeddedPostgres | null = null;
  let services: Services | null = null;
  let http: HttpServer | null = null;
  let jobs: Jobs | null = null;
  let router: Router | null = null;
  let runtime: Runtime | null = null;
  let relays: PreviewRelays | null = null;
  let url = '';
  let routerUrl = '';

  const need = <T>(v: T | null, what: string): T => {
    if (v === null) throw new Error(`gateway not started: ${what} unavailable`);
    return v;
  };

  return {
    get url() {
      return url;
    },
    get routerUrl() {
      return routerUrl;
    },
    get services() {
      return need(services, 'services');
    },
    get server() {
      return need(http, 'HTTP server').app.server;
    },
    get ds() {
      return need(ds, 'database');
    },
    pubsub,
    log,

    async start(port = config.port) {
      let dbUrl: string;
      ({ ds, embedded, url: dbUrl } = await openDatabase(config, log, opts.db));
      const key = loadEncryptionKey(config);
      const box = new SecretBox(key);
      const onError = (err: unknown) => log.error({ err }, 'background task failed');
      const channel = config.eventsChannel;
      // Log lines travel between gateways as "stored up to seq N"; each gateway reads them once.
      bus.expandWith('DEPLOYMENT', expandStoredLines(ds));
      bus.expandWith('APP_LOGS', expandStoredAppLines(ds));
      await bus.connect(
        config.redisUrl
          ? new RedisTransport({ url: config.redisUrl, channel: `${config.redisPrefix}${channel}`, onError: busError })
          : new PgTransport(ds, { url: dbUrl, channel, onError: busError, connectTimeoutMs: config.dbConnectTimeoutMs }),
      );
      // Webhook deliveries due soon: once pg-boss runs, through its queue (any gateway's worker
      // sends); without pg-boss, in this process if it delivers at all.
      const wakeWebhooks = (delayMs = 0): void => {
        if (jobs) void jobs.send('webhooks-deliver', delayMs).catch(onError);
        else if (config.webhooks.worker && !config.jobs) setTimeout(() => void services?.webhooks.deliverDue().catch(onError), delayMs).unref();
      };
      const simulated = new SimulatedRuntime(ds, {
        buildMs: config.simBuildMs,
        runtimeLogMs: config.simRuntimeLogMs,
        sleepAfterMs: config.simSleepAfterMs,
        commandMs: config.simCommandMs,
      });
      // HAProxy in front reaches eggs on this host in their own network namespaces where it may (src/runtime/namespaces.ts).
      const edgeNamespaces = config.routerEdge === 'haproxy' && config.routerEdgeNamespaces === 'auto' && mayEnterNamespaces();
      // `auto` is resolved before (src/main.ts asks the Engine); left as it is, it means simulated.
      runtime = opts.runtime
        ? opts.runtime(ds)
        : config.runtime === 'docker'
          ? new (config.docker.mode === 'swarm' ? SwarmRuntime : DockerRuntime)(
              dockerClient(config.docker.host),
              { ...config.docker, namespaces: edgeNamespaces },
              {
                relays: (relays = new PreviewRelays(path.join(config.dataDir, 'previews'))),
                databases: new PreviewDatabases(config.previewDatabaseUrl ?? dbUrl, key),
                redis: config.redisUrl ? new PreviewRedis(config.redisUrl, key) : null,
              },
            )
          : simulated;
      // Swarm mode needs a manager to talk to: said at start, not at the first deploy.
      if (runtime instanceof SwarmRuntime) await runtime.localNode();
      const baseUrl = () => config.publicUrl ?? url;
      services = createServices({
        ds,
        clock,
        pubsub,
        box,
        runtime,
        appsDomain: config.appsDomain,
        previewTtlMs: config.previewTtlMs,
        allowances: config.energy,
        payments: paymentProvider(config, baseUrl),
        baseUrl,
        crons: { missedAfterMs: config.cronMissedAfterMs, runTimeoutMs: config.cronRunTimeoutMs },
        limits: config.limits,
        sources: config.sources,
        webhooks: { ...config.webhooks, ca: config.webhooks.caFile ? readFileSync(config.webhooks.caFile) : undefined, wake: wakeWebhooks },
        logDrains: config.logDrains,
        logRetentionDays: config.logRetentionDays,
        onError,
        metrics,
        leaseMs: config.leaseMs,
        gatewayId: bus.origin,
        // Kept only while events from the other gateways arrive (their revocations among them).
        tokenCache: { ms: config.tokenCacheMs, usable: () => bus.connected },
      });
      const tokens = services.accounts;
      bus.addEventListener('ACCESS', (e) => tokens.forget((e as CustomEvent<AccessEvent>).detail));
      const schema = buildGatewaySchema(pubsub);
      const db = ds;
      const accounts = services.accounts;
      http = await createHttpServer({
        schema,
        buildContext: contextFactory({ services, ds, clock }),
        log,
        keepAliveMs: config.keepAliveMs,
        shutdownGraceMs: config.shutdownGraceMs,
        billing: services.billing,
        selfUrl: () => url,
        mount: (app, tools) => mountRest(app, { schema, log, ...tools }),
        sessions: { clock, events: bus, liveTokens: (ids) => accounts.liveTokenIds(ids) },
        ready: {
          database: async () => (await db.query<unknown[]>('SELECT 1')).length === 1,
          events: () => bus.connected,
          jobs: () => (config.jobs ? (jobs?.healthy ?? false) : null),
        },
        metrics,
        limits: {
          bodyLimitBytes: config.bodyLimitBytes,
          operations: config.graphqlLimits,
          wsMaxSubscriptions: config.wsMaxSubscriptions,
          rateLimit: { perMin: config.rateLimit.perMin, anonPerMin: config.rateLimit.anonPerMin, redisUrl: config.redisUrl, redisPrefix: config.redisPrefix },
          trustProxy: config.trustProxy,
          requestTimeoutMs: config.requestTimeoutMs,
          idleTimeoutMs: config.idleTimeoutMs,
          maxConnectionsPerIp: config.maxConnectionsPerIp,
        },
      });
      await services.deployments.start();
      await services.previews.reclaimOrphans();
      services.crons.start(config.cronTickMs);
      if (config.jobs) {
        jobs = new Jobs(dbUrl, log, metrics, { statementTimeoutMs: config.dbStatementTimeoutMs, connectTimeoutMs: config.dbConnectTimeoutMs });
        const deployments = services.deployments;
        const { volumes, previews, energy, webhooks, sources } = services;
        await jobs.start([
          { name: 'deployments-reclaim', cron: '* * * * *', handler: () => deployments.supervisor.reclaimOrphans() },
          { name: 'volumes-erase', cron: '* * * * *', handler: () => volumes.eraseExpired() },
          { name: 'volumes-measure', cron: '* * * * *', handler: () => volumes.measure() },
          { name: 'previews-expire', cron: '* * * * *', handler: () => previews.expire() },
          {
            name: 'previews-reclaim',
            cron: '* * * * *',
            handler: async () => {
              await previews.reclaimOrphans();
              await previews.serveRunning();
            },
          },
          { name: 'energy-meter', cron: '* * * * *', handler: () => energy.meter() },
          { name: 'sources-prune', cron: '* * * * *', handler: () => sources.prune() },
          { name: 'logs-retention', cron: '7 * * * *', handler: () => deployments.retention.run() },
          ...(config.webhooks.worker ? [{ name: 'webhooks-deliver', cron: '* * * * *', pollSeconds: 0.5, handler: () => webhooks.deliverDue() }] : []),
        ]);
      }
      if (config.webhooks.worker) services.webhooks.wake(); // what a crashed gateway left in the outbox
      if (config.logDrains.worker) {
        // Any gateway's stored lines wake the drains of their egg that this gateway ships.
        const shipper = services.drains.shipper;
        bus.tap('APP_LOGS', (name, event) => {
          const kind = (event as { kind?: string }).kind;
          if (kind === 'stored') shipper.linesStored(name.slice(name.indexOf(':') + 1));
          else if (kind === 'resync') shipper.resync();
        });
        services.drains.start();
      }
      // Running previews reach their database and Redis through this host's relays: serve any left unserved.
      void services.previews.serveRunning().catch(onError);
      await http.app.listen({ port, host: config.host });
      const address = http.app.server.address() as AddressInfo;
      url = `http://${config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host}:${address.port}`;
      router = createRouter({
        appsDomain: config.appsDomain,
        deployments: services.deployments,
        runtime,
        log,
        metrics,
        wakeTimeoutMs: config.docker.healthTimeoutMs,
        edge: config.routerEdge === 'haproxy' ? { bin: config.haproxyBin, idleMs: config.routerEdgeIdleMs, namespaces: edgeNamespaces } : undefined,
      });
      routerUrl = await router.listen(config.routerPort, config.host);
      return url;
    },

    async stop() {
      await router?.close();
      await http?.close();
      await services?.deployments.stop();
      await services?.previews.stop();
      await services?.crons.stop();
      await services?.webhooks.stop();
      await services?.drains.stop();
      await jobs?.stop(config.shutdownGraceMs);
      await relays?.close();
      await bus.close();
      if (ds?.isInitialized) await ds.destroy();
      await embedded?.stop();
      http = null;
      jobs = null;
      router = null;
    },
  };
}
