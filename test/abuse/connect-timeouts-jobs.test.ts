import { once } from 'node:events';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { createTestDatabase, TestDatabase } from '../support/db';
import { TEST_KEY } from '../support/gateway';

/**
 * pg-boss's pool has the gateway's connect timeout (HATCHERY_DB_CONNECT_TIMEOUT_MS): a database that
 * accepts TCP and then never answers (a half-dead server or load balancer) makes starting or using
 * the jobs layer fail after that timeout, instead of hanging the gateway's start or the caller.
 * test/abuse/connect-timeouts.test.ts proves the same for the gateway pool and the event bus.
 */

const CONNECT_TIMEOUT_MS = 400;
/** pg's "Connection terminated due to connection timeout", or pg-pool's wait for a free connection. */
const CONNECT_TIMEOUT_ERROR = /connection timeout|timeout exceeded when trying to connect/i;
/**
 * Well under pg-boss's own default (10 s) and the Jobs class's (5 s): only the configured value fits.
 * A start waits about twice the timeout: pg-boss's best-effort `SELECT version()` probe swallows the
 * first connection timeout, and its schema check then meets the second.
 */
const BOUND_MS = 4000;

/** How long `p` took to settle, and how. */
async function timed<T>(p: Promise<T>): Promise<{ ms: number; result: PromiseSettledResult<T> }> {
  const started = performance.now();
  const [result] = await Promise.allSettled([p]);
  return { ms: performance.now() - started, result };
}

function rejection(result: PromiseSettledResult<unknown>): Error {
  if (result.status !== 'rejected') throw new Error('expected a rejection, but it resolved');
  return result.reason as Error;
}

/** Accepts TCP connections and never sends a byte. */
class SilentServer {
  readonly server = net.createServer((s) => {
    this.accepted++;
    this.sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
  });
  readonly sockets = new Set<net.Socket>();
  accepted = 0;
  port = 0;

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/**
 * A TCP proxy in front of the test PostgreSQL (on 127.0.0.1) that can swallow connections instead:
 * those whose startup message `blackholes` picks, or every new one once `silence()` was called
 * (which also cuts the connections it is forwarding, as a failover would).
 */
class BlackholeProxy {
  private readonly sockets = new Set<net.Socket>();
  private readonly forwarded = new Set<net.Socket>();
  private silent = false;
  /** Connections accepted and never answered. */
  swallowed = 0;
  port = 0;
  readonly server: net.Server;

  constructor(
    private readonly upstream: { host: string; port: number },
    private readonly blackholes: (startup: Buffer) => boolean = () => false,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
  }

  private accept(client: net.Socket): void {
    this.track(client);
    if (this.silent) {
      this.swallowed++;
      return;
    }
    // The first message (no TLS here) is the startup packet: Int32 length, Int32 protocol, then
    // NUL-terminated key/value pairs such as application_name.
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.length < 4 || head.length < head.readInt32BE(0)) return;
      client.off('data', onData);
      client.pause();
      if (this.silent || this.blackholes(head)) {
        this.swallowed++;
        return;
      }
      const server = net.connect(this.upstream.port, this.upstream.host);
      this.track(server);
      this.forwarded.add(client).add(server);
      const cut = () => {
        client.destroy();
        server.destroy();
      };
      client.on('close', cut);
      server.on('close', cut);
      server.write(head);
      client.pipe(server);
      server.pipe(client);
      client.resume();
    };
    client.on('data', onData);
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** From now on every new connection is swallowed; those being forwarded are cut. */
  silence(): void {
    this.silent = true;
    for (const s of this.forwarded) s.destroy();
    this.forwarded.clear();
  }

  /** Forwards new connections again (those already swallowed stay so). */
  restore(): void {
    this.silent = false;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const viaProxy = (dbUrl: string, port: number) => {
  const u = new URL(dbUrl);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
};

/** pg-boss's pg Pool inside a Jobs (as test/jobs/statement-timeout.test.ts reaches it). */
const poolOf = (jobs: Jobs) => ((jobs as unknown as { boss: { getDb(): unknown } }).boss.getDb() as { pool: Pool }).pool;

/** pg-boss names its connections `pgboss` (`pgboss:<instance>`); the gateway's own are named otherwise. */
const isPgBoss = (startup: Buffer) => startup.includes(Buffer.from('application_name\0pgboss'));

describe('pg-boss against a database that accepts and never answers (HATCHERY_DB_CONNECT_TIMEOUT_MS)', () => {
  const silent = new SilentServer();
  let db: TestDatabase;
  const toStop: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    await silent.listen();
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const stop of toStop.reverse()) await stop().catch(() => undefined);
    await silent.close();
    await db?.drop();
  });

  it('Jobs.start fails with a connection timeout after the configured time, and stop() then returns', async () => {
    const jobs = new Jobs(`postgres://postgres@127.0.0.1:${silent.port}/x`, createLogger('silent'), undefined, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
    const { ms, result } = await timed(jobs.start([{ name: 'never-runs', handler: async () => undefined }]));
    expect(rejection(result).message).toMatch(CONNECT_TIMEOUT_ERROR);
    expect(silent.accepted).toBeGreaterThanOrEqual(1); // it connected and was left waiting, not refused
    expect(ms).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS - 5); // it did wait for the database...
    expect(ms).toBeLessThan(BOUND_MS); // ...for the configured time, not pg-boss's default or forever

    // Shutting down what failed to start does not hang on the silent database either.
    const stopped = await timed(jobs.stop(1000));
    expect(stopped.ms).toBeLessThan(BOUND_MS);
  });

  it("the gateway's start fails with a timeout when only pg-boss's connections go unanswered", async () => {
    const upstream = new URL(db.url);
    const proxy = new BlackholeProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) }, isPgBoss);
    await proxy.listen();
    toStop.push(() => proxy.close());
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      HATCHERY_JOBS: 'on',
      HATCHERY_CRON_TICK_MS: '0',
      HATCHERY_ENCRYPTION_KEY: TEST_KEY,
      HOST: '127.0.0.1',
      HATCHERY_SHUTDOWN_GRACE_MS: '1000',
      HATCHERY_DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DATABASE_URL: viaProxy(db.url, proxy.port),
    });
    const gateway = buildApp(config);
    toStop.push(() => gateway.stop());

    const { ms, result } = await timed(gateway.start(0));
    expect(rejection(result).message).toMatch(CONNECT_TIMEOUT_ERROR);
    expect(proxy.swallowed).toBeGreaterThanOrEqual(1); // pg-boss's connections were the ones left waiting
    // The gateway's own pool got through the same proxy: the failure is pg-boss's.
    expect((await gateway.ds.query('SELECT 1 AS one'))[0].one).toBe(1);
    expect(ms).toBeLessThan(BOUND_MS);

    const stopped = await timed(gateway.stop());
    expect(stopped.result.status).toBe('fulfilled');
    expect(stopped.ms).toBeLessThan(BOUND_MS);
  });

  it('a send on a started Jobs fails with a connection timeout once the database stops answering, and works again after', async () => {
    const upstream = new URL(db.url);
    const proxy = new BlackholeProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
    await proxy.listen();
    toStop.push(() => proxy.close());
    const jobs = new Jobs(viaProxy(db.url, proxy.port), createLogger('silent'), undefined, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
    toStop.push(() => jobs.stop(1000));
    await jobs.start([{ name: 'connect-probe', handler: async () => undefined }]);
    await jobs.send('connect-probe', 60_000);

    // The open connections drop (a statement on one of them fails at once, "Connection terminated
    // unexpectedly"); every new one is accepted and never answered. Once the pool has noticed the
    // drops, the next statement has to open a connection.
    const pool = poolOf(jobs);
    proxy.silence();
    while (pool.idleCount > 0) await once(pool, 'remove');
    const { ms, result } = await timed(jobs.send('connect-probe', 120_000));
    expect(rejection(result).message).toMatch(CONNECT_TIMEOUT_ERROR);
    expect(proxy.swallowed).toBeGreaterThanOrEqual(1);
    expect(ms).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS - 5);
    expect(ms).toBeLessThan(BOUND_MS);

    proxy.restore();
    await expect(jobs.send('connect-probe', 180_000)).resolves.toBeUndefined();
  });
});
