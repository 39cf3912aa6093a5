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
import { PgProxy } from '../support/pg-proxy';

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
/**
 * The whole gateway's start also opens its own pool and runs its migrations through the proxy before
 * pg-boss meets the silence, which took 4.7 s once on a loaded CI machine. What this bound has to
 * tell apart is the configured timeout (twice 400 ms) from the Jobs class's default (twice 5 s, so
 * at least 10 s): 9 s does that with room for a slow machine.
 */
const GATEWAY_START_BOUND_MS = 9000;

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
    const { ms, result } = await timed(jobs.start([{ name: 'never-runs', handler: () => Promise.resolve() }]));
    expect(rejection(result).message).toMatch(CONNECT_TIMEOUT_ERROR);
    expect(silent.accepted).toBeGreaterThanOrEqual(1); // it connected and was left waiting, not refused
    expect(ms).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS - 5); // it did wait for the database...
    expect(ms).toBeLessThan(BOUND_MS); // ...for the configured time, not pg-boss's default or forever

    // Shutting down what failed to start does not hang on the silent database either.
    const stopped = await timed(jobs.stop(1000));
    expect(stopped.ms).toBeLessThan(BOUND_MS);
  });

  it("the gateway's start fails with a timeout when only pg-boss's connections go unanswered", async () => {
    const proxy = new PgProxy(db.url, isPgBoss);
    await proxy.listen();
    toStop.push(() => proxy.close());
    const config = loadConfig({
      HATCHERY_ROUTER_PORT: '0',
      LOG_LEVEL: 'silent',
      HATCHERY_JOBS: 'on',
      HATCHERY_CRON_TICK_MS: '0',
      HATCHERY_ENCRYPTION_KEY: TEST_KEY,
      HOST: '127.0.0.1',
      HATCHERY_SHUTDOWN_GRACE_MS: '1000',
      HATCHERY_DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DATABASE_URL: proxy.url,
    });
    const gateway = buildApp(config);
    toStop.push(() => gateway.stop());

    const { ms, result } = await timed(gateway.start(0));
    expect(rejection(result).message).toMatch(CONNECT_TIMEOUT_ERROR);
    expect(proxy.swallowed).toBeGreaterThanOrEqual(1); // pg-boss's connections were the ones left waiting
    // The gateway's own pool got through the same proxy: the failure is pg-boss's.
    expect((await gateway.ds.query('SELECT 1 AS one'))[0].one).toBe(1);
    expect(ms).toBeLessThan(GATEWAY_START_BOUND_MS);

    const stopped = await timed(gateway.stop());
    expect(stopped.result.status).toBe('fulfilled');
    expect(stopped.ms).toBeLessThan(BOUND_MS);
  });

  it('a send on a started Jobs fails with a connection timeout once the database stops answering, and works again after', async () => {
    const proxy = new PgProxy(db.url);
    await proxy.listen();
    toStop.push(() => proxy.close());
    const jobs = new Jobs(proxy.url, createLogger('silent'), undefined, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
    toStop.push(() => jobs.stop(1000));
    await jobs.start([{ name: 'connect-probe', handler: () => Promise.resolve() }]);
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
