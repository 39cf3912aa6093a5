import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { until } from '../crons/helpers';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createTestDatabase } from '../support/db';
import { describeHaproxy } from '../support/haproxy-describe';
import { startGateway, TEST_KEY, TestGateway } from '../support/gateway';
import { viaRouter } from '../support/router';

/** What a raw request gets back, whole. */
function raw(routerUrl: string, request: string): Promise<string> {
  const { port } = new URL(routerUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (out += c));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
    socket.end(request);
  });
}

/** The HAProxy master this process started (the gateway runs in it). */
const haproxyChild = (): number | null => {
  try {
    return (
      Number(
        execFileSync('pgrep', ['-P', String(process.pid), '-x', 'haproxy'], { encoding: 'utf8' })
          .trim()
          .split('\n')[0],
      ) || null
    );
  } catch {
    return null;
  }
};

describe('HATCHERY_ROUTER_EDGE=haproxy: the start', () => {
  it('without the executable, the gateway does not start, and says why', async () => {
    const db = await createTestDatabase();
    const gateway = buildApp(
      loadConfig({
        LOG_LEVEL: 'silent',
        HATCHERY_JOBS: 'off',
        HATCHERY_ROUTER_PORT: '0',
        HOST: '127.0.0.1',
        HATCHERY_ENCRYPTION_KEY: TEST_KEY,
        DATABASE_URL: db.url,
        HATCHERY_ROUTER_EDGE: 'haproxy',
        HATCHERY_HAPROXY_BIN: '/nonexistent/haproxy',
      }),
    );
    try {
      await expect(gateway.start(0)).rejects.toThrow(/could not start \/nonexistent\/haproxy.*HATCHERY_ROUTER_EDGE=node/);
    } finally {
      await gateway.stop();
      await db.drop();
    }
  });

  it('an unknown edge is refused by name', () => {
    expect(() => loadConfig({ HATCHERY_ROUTER_EDGE: 'nginx' })).toThrow(/HATCHERY_ROUTER_EDGE/);
  });
});

describeHaproxy('HATCHERY_ROUTER_EDGE=haproxy on the simulated runtime', () => {
  let t: TestGateway;
  const domain = 'eggs.test';

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_ROUTER_EDGE: 'haproxy', HATCHERY_APPS_DOMAIN: domain });
  });
  afterAll(async () => {
    await t?.stop();
    // Stopping the gateway stops HAProxy.
    expect(haproxyChild()).toBeNull();
  });

  it('HAProxy takes the router port; hosts it does not serve get the Node router’s answers', async () => {
    expect(haproxyChild()).toEqual(expect.any(Number));
    const r = await viaRouter(t.gateway.routerUrl, `no-such-egg.${domain}`);
    expect(r.status).toBe(404);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(r.body)).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('a request HAProxy cannot read is a 400, and the connection is closed', async () => {
    // (HAProxy 2.6 answers a request it cannot parse with its own HTML body: its error files do not apply there.)
    const answer = await raw(t.gateway.routerUrl, `GET / HTTP/1.1\r\nHost: a.${domain}\r\nno colon here\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('HAProxy killed is started again on the same port', async () => {
    const before = haproxyChild();
    expect(before).toEqual(expect.any(Number));
    process.kill(before!, 'SIGKILL');
    const again = await until(
      'HAProxy to serve again',
      async () => {
        const pid = haproxyChild();
        if (!pid || pid === before) return null;
        const r = await viaRouter(t.gateway.routerUrl, `no-such-egg.${domain}`).catch(() => null);
        return r?.status === 404 && pid;
      },
      1_000_000,
    );
    expect(again).not.toBe(before);
  });
});
