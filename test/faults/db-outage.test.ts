import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp, Gateway } from '../../src/app';
import { DeploymentsDocument, DeploymentStatusDocument, ViewerDocument } from '../../src/client/generated';
import { loadConfig } from '../../src/config';
import { EmbeddedPostgres, startEmbeddedPostgres } from '../../src/db/embedded';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { collect, gql, rest, TEST_KEY, wsClient } from '../support/gateway';
import { until } from './helpers';

/**
 * The database goes away and comes back. The gateway runs on a PostgreSQL cluster this test
 * controls; while the cluster is stopped, every request that needs the database answers 503
 * (REST problem+json `service_unavailable`, GraphQL HTTP 503 with `SERVICE_UNAVAILABLE`, a
 * graphql-ws connection is closed with 1013), never 500, and `/readyz` says 503 while `/healthz`
 * stays 200. When the cluster is back on the same
 * port, the very same gateway serves again without a restart: reads, writes, builds and
 * subscriptions.
 */
describe('a database that goes away and comes back', () => {
  let dir: string;
  let pg: EmbeddedPostgres;
  let gateway: Gateway;
  let url: string;
  let owner: TestUser;
  let slug: string;
  let liveId: string;
  let down = false;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'hatchery-outage-'));
    chmodSync(dir, 0o755); // as root: the cluster stays in here, not in /var/lib/hatchery-postgres
    pg = await startEmbeddedPostgres(dir);
    gateway = buildApp(
      loadConfig({
        HATCHERY_ROUTER_PORT: '0',
        LOG_LEVEL: 'silent',
        HATCHERY_SIM_BUILD_MS: '150',
        HATCHERY_SIM_RUNTIME_LOG_MS: '3600000',
        HATCHERY_CRON_TICK_MS: '200',
        HATCHERY_ENCRYPTION_KEY: TEST_KEY,
        HATCHERY_RATE_LIMIT_PER_MIN: '1000000',
        HATCHERY_RATE_LIMIT_ANON_PER_MIN: '1000000',
        HOST: '127.0.0.1',
        DATABASE_URL: pg.url,
      }),
    );
    url = await gateway.start(0);
    owner = await makeUser(gateway);
    slug = (await makeApp(url, owner)).slug;
    liveId = (await deploy(url, owner, slug)).id;
    expect(await settle(url, owner, liveId)).toBe('LIVE');
  }, 90_000);

  afterAll(async () => {
    // A test that failed during the outage leaves the cluster stopped: the gateway stops cleanly only with its database.
    if (down) pg = await startEmbeddedPostgres(dir, undefined, { port: Number(new URL(pg.url).port) });
    await gateway?.stop();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** What a client sees now: status and error code on each transport, and the probes. */
  async function probe() {
    const list = await rest(url, owner.token, 'GET', `/deployments?project=${slug}&limit=5`);
    const write = await rest(url, owner.token, 'POST', '/deploy', { project: slug });
    const viewer = await gql(url, owner.token, ViewerDocument);
    const deployments = await gql(url, owner.token, DeploymentsDocument, { project: slug, first: 5 });
    const readyz = await rest(url, null, 'GET', '/readyz');
    const healthz = await rest(url, null, 'GET', '/healthz');
    return {
      rest: [list, write].map((r) => ({
        status: r.status,
        code: r.body?.code,
        type: r.headers.get('content-type')?.split(';')[0],
        retryAfter: r.headers.get('retry-after'),
      })),
      graphql: [viewer, deployments].map((g) => ({ status: g.status, codes: (g.errors ?? []).map((e) => e.extensions?.code), data: g.data ?? null })),
      readyz: readyz.status,
      healthz: healthz.status,
      bodies: JSON.stringify([list.body, write.body, viewer, deployments]),
    };
  }

  it('answers 503 while the database is down, and recovers by itself when it is back', async () => {
    const port = Number(new URL(pg.url).port);
    const before = await rest(url, owner.token, 'GET', `/deployments?project=${slug}&limit=5`);
    expect(before.status).toBe(200);
    expect((await rest(url, null, 'GET', '/readyz')).status).toBe(200);

    await pg.stop();
    down = true;

    // Several rounds: also once the pool's connections are gone, still 503, never a 500.
    for (let round = 0; round < 3; round++) {
      const p = await probe();
      const down = { status: 503, code: 'service_unavailable', type: 'application/problem+json', retryAfter: expect.stringMatching(/^\d+$/) };
      expect(p.rest).toEqual([down, down]);
      expect(p.graphql).toEqual([
        { status: 503, codes: ['SERVICE_UNAVAILABLE'], data: null },
        { status: 503, codes: ['SERVICE_UNAVAILABLE'], data: null },
      ]);
      expect(p.readyz).toBe(503);
      expect(p.healthz).toBe(200);
      // A 5xx never leaks the cause's internals.
      expect(p.bodies).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|SELECT|postgres|\.ts:\d+/i);
    }
    // graphql-ws: the connection is closed with 1013 (try again later), not 4401 (a bad token).
    let client: ReturnType<typeof wsClient> | null = null;
    const closeCode = await new Promise<number>((resolve) => {
      client = wsClient(url, owner.token, (code) => resolve(code));
      collect(client, DeploymentStatusDocument, { id: liveId }).done.catch(() => undefined);
    });
    await client!.dispose();
    expect(closeCode).toBe(1013);

    pg = await startEmbeddedPostgres(dir, undefined, { port });
    down = false;

    // The same gateway, no restart: /readyz turns 200 as soon as the database answers again.
    await until('/readyz to report the database up', async () => (await rest(url, null, 'GET', '/readyz')).status === 200, 500, 20);
    const after = await probe();
    expect(after.rest.map((r) => r.status)).toEqual([200, 201]);
    expect(after.graphql.map((g) => [g.status, g.codes])).toEqual([
      [200, []],
      [200, []],
    ]);
    expect(after.readyz).toBe(200);
    expect(after.healthz).toBe(200);
    // Nothing was lost, and nothing refused during the outage was half-written.
    const listed = await rest(url, owner.token, 'GET', `/deployments?project=${slug}&limit=100`);
    expect(listed.body.data.map((d: { id: string }) => d.id)).toContain(liveId);
    expect(listed.body.data).toHaveLength(2); // the first deploy and the one accepted after recovery

    // Builds, log writes and status events work again: a new deployment goes live, watched over graphql-ws.
    const fresh = await deploy(url, owner, slug);
    expect(await settle(url, owner, fresh.id)).toBe('LIVE');
    const logs = await rest(url, owner.token, 'GET', `/deployments/${fresh.id}/logs?type=build`);
    expect(logs.body.data.map((l: { message: string }) => l.message)).toContain('==> Build succeeded');
  }, 90_000);
});
