import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import Redis from 'ioredis';
import { Client } from 'pg';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { startGateway, TestGateway } from '../support/gateway';
import { until } from './helpers';

/**
 * `/readyz` tells the truth about every part a gateway needs, not only the database: the event
 * bus that brings other gateways' status changes and log lines to its subscribers (PostgreSQL
 * LISTEN, or Redis pub/sub with REDIS_URL) and its pg-boss job workers. Each part is cut for
 * real; `/readyz` answers 503 naming it, and 200 again once the gateway has recovered by itself.
 */

interface Ready {
  status: number;
  body: { status: string; database: string; events: string; jobs: string };
}

async function readyz(url: string): Promise<Ready> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Ready['body'] };
}

/** Polls /readyz until `ok` holds (bounded by `timeoutMs`); resolves with that answer. */
async function readyzUntil(url: string, what: string, ok: (r: Ready) => boolean, timeoutMs = 20_000): Promise<Ready> {
  const everyMs = 20;
  return until(
    what,
    async () => {
      const r = await readyz(url);
      return ok(r) ? r : null;
    },
    Math.ceil(timeoutMs / everyMs),
    everyMs,
  );
}

/** A connection to the test server's maintenance database, for what a gateway's own database cannot do to itself. */
async function adminClient(): Promise<Client> {
  const c = new Client({ connectionString: process.env.HATCHERY_TEST_SERVER_URL });
  await c.connect();
  return c;
}

const databaseName = (t: TestGateway) => new URL(t.db.url).pathname.slice(1);

/** Resolves with the detail of the next `name` event the gateway's bus hands its listeners. */
function nextBusEvent(t: TestGateway, name: string): Promise<unknown> {
  const target = t.gateway.pubsub.target;
  return new Promise((resolve) => {
    const listener = (e: Event) => {
      target.removeEventListener(name, listener);
      resolve((e as CustomEvent).detail);
    };
    target.addEventListener(name, listener);
  });
}

/** Awaits `p`, failing after `ms` instead of hanging until jest's own timeout. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('/readyz with the event bus over PostgreSQL LISTEN/NOTIFY', () => {
  let t: TestGateway;
  let admin: Client;

  beforeAll(async () => {
    t = await startGateway(); // HATCHERY_JOBS=off
    admin = await adminClient();
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE "${databaseName(t)}" ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin?.end();
    await t?.stop();
  });

  const listeners = async (): Promise<number[]> =>
    (
      await admin.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'hatchery-events' AND query ILIKE 'LISTEN%'`, [
        databaseName(t),
      ])
    ).rows.map((r: { pid: number }) => r.pid);

  it('reports every part, jobs off when this gateway runs none', async () => {
    expect(await readyz(t.url)).toEqual({ status: 200, body: { status: 'ok', database: 'up', events: 'up', jobs: 'off' } });
  });

  it('says events down (503) while the LISTEN connection is lost, and 200 once the bus has listened again by itself', async () => {
    const [before] = await listeners();
    expect(before).toEqual(expect.any(Number));
    // Keeps the lost connection from coming straight back, so the outage lasts until the test ends it.
    await admin.query(`ALTER DATABASE "${databaseName(t)}" ALLOW_CONNECTIONS false`);
    try {
      const killed = await admin.query('SELECT pg_terminate_backend($1) AS ok', [before]);
      expect(killed.rows[0].ok).toBe(true);
      const down = await readyzUntil(t.url, '/readyz to report the event bus down', (r) => r.body.events === 'down');
      expect(down).toEqual({ status: 503, body: { status: 'unavailable', database: 'up', events: 'down', jobs: 'off' } });
      // Still down on the next probe: the bus is retrying, not back.
      expect((await readyz(t.url)).body.events).toBe('down');
    } finally {
      await admin.query(`ALTER DATABASE "${databaseName(t)}" ALLOW_CONNECTIONS true`);
    }

    // No restart, no request: the transport's own backoff brings it back.
    const up = await readyzUntil(t.url, '/readyz to report the event bus back', (r) => r.status === 200);
    expect(up.body).toEqual({ status: 'ok', database: 'up', events: 'up', jobs: 'off' });
    const after = await listeners();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before);

    // 200 means events from other gateways arrive again: a frame from another origin reaches the bus's listeners.
    const received = nextBusEvent(t, 'readyz-probe');
    await t.gateway.ds.query('SELECT pg_notify($1, $2)', [
      t.config.eventsChannel,
      JSON.stringify({ o: 'gw_other', n: 0, e: [['readyz-probe', { after: 'pg' }]] }),
    ]);
    expect(await within(received, 5000, 'event over the new LISTEN connection')).toEqual({ after: 'pg' });
  }, 60_000);

  it('answers within a couple of seconds when the database does not answer', async () => {
    // Every pool connection busy: the readiness query cannot even start until they are free.
    const holders = Array.from({ length: 10 }, () => t.gateway.ds.query('SELECT pg_sleep(3)'));
    try {
      await until('every pool connection to be busy', async () => {
        const { rows } = await admin.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query = 'SELECT pg_sleep(3)' AND state = 'active'`,
          [databaseName(t)],
        );
        return rows[0].n === 10;
      });
      const started = Date.now();
      const answers = await Promise.all([readyz(t.url), readyz(t.url), readyz(t.url)]);
      const elapsed = Date.now() - started;
      for (const a of answers) expect(a).toEqual({ status: 503, body: { status: 'unavailable', database: 'down', events: 'up', jobs: 'off' } });
      expect(elapsed).toBeLessThan(2000);
    } finally {
      await Promise.all(holders);
    }
    await readyzUntil(t.url, '/readyz to report the database up again', (r) => r.status === 200);
  });
});

describe('/readyz with pg-boss jobs', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' });
  });
  afterAll(async () => {
    await t?.gateway.ds.query('ALTER SCHEMA pgboss_away RENAME TO pgboss').catch(() => undefined);
    await t?.stop();
  });

  it('says jobs down (503) while the workers cannot poll their queues, and 200 once they can again', async () => {
    expect(await readyz(t.url)).toEqual({ status: 200, body: { status: 'ok', database: 'up', events: 'up', jobs: 'up' } });

    // pg-boss's tables are gone from where it looks: every poll fails, the rest of the database answers.
    await t.gateway.ds.query('ALTER SCHEMA pgboss RENAME TO pgboss_away');
    try {
      const down = await readyzUntil(t.url, '/readyz to report the jobs down', (r) => r.body.jobs === 'down');
      expect(down).toEqual({ status: 503, body: { status: 'unavailable', database: 'up', events: 'up', jobs: 'down' } });
    } finally {
      await t.gateway.ds.query('ALTER SCHEMA pgboss_away RENAME TO pgboss');
    }
    const up = await readyzUntil(t.url, '/readyz to report the jobs back', (r) => r.status === 200);
    expect(up.body).toEqual({ status: 'ok', database: 'up', events: 'up', jobs: 'up' });
  }, 60_000);

  it('a stopped pg-boss is not healthy', async () => {
    const jobs = new Jobs(t.db.url, createLogger('silent'));
    expect(jobs.healthy).toBe(false); // not started yet
    await jobs.start([{ name: 'readyz-probe', handler: () => Promise.resolve() }]);
    try {
      expect(jobs.healthy).toBe(true);
    } finally {
      await jobs.stop(1000);
    }
    expect(jobs.healthy).toBe(false);
  });
});

describe('/readyz with the event bus over Redis pub/sub', () => {
  let port: number;
  let redis: ChildProcess | null = null;
  let t: TestGateway;

  /** A Redis of this test's own on 127.0.0.1:port; resolves once it accepts connections. */
  async function startRedis(): Promise<ChildProcess> {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmpdir()], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (c) => {
        out += c;
        if (out.includes('Ready to accept connections')) resolve();
      });
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
      proc.once('error', reject);
    });
    return proc;
  }

  async function stopRedis(): Promise<void> {
    const proc = redis;
    redis = null;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGKILL');
    await exited;
  }

  beforeAll(async () => {
    // A free port on 127.0.0.1, closed again for redis-server to take.
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    port = (probe.address() as { port: number }).port;
    probe.close();
    await once(probe, 'close');
    redis = await startRedis();
    t = await startGateway({ REDIS_URL: `redis://127.0.0.1:${port}` });
  });
  afterAll(async () => {
    if (!redis && t) redis = await startRedis().catch(() => null); // the gateway stops quickest with its Redis there
    await t?.stop();
    await stopRedis();
  });

  it('says events down (503) while Redis is unreachable, and 200 once the bus has subscribed again by itself', async () => {
    expect(await readyz(t.url)).toEqual({ status: 200, body: { status: 'ok', database: 'up', events: 'up', jobs: 'off' } });

    await stopRedis(); // the port is closed now: nothing answers there
    const down = await readyzUntil(t.url, '/readyz to report the event bus down', (r) => r.body.events === 'down');
    expect(down).toEqual({ status: 503, body: { status: 'unavailable', database: 'up', events: 'down', jobs: 'off' } });
    expect((await readyz(t.url)).body.events).toBe('down');

    redis = await startRedis();
    const up = await readyzUntil(t.url, '/readyz to report the event bus back', (r) => r.status === 200);
    expect(up.body).toEqual({ status: 'ok', database: 'up', events: 'up', jobs: 'off' });

    // 200 means events from other gateways arrive again.
    const received = nextBusEvent(t, 'readyz-probe');
    const pub = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true });
    try {
      await pub.connect();
      const channel = `${t.config.redisPrefix}${t.config.eventsChannel}`;
      expect(await pub.publish(channel, JSON.stringify({ o: 'gw_other', e: [['readyz-probe', { after: 'redis' }]] }))).toBe(1);
    } finally {
      pub.disconnect();
    }
    expect(await within(received, 5000, 'event over the resubscribed Redis connection')).toEqual({ after: 'redis' });
  }, 60_000);
});
