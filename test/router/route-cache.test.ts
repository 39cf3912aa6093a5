import http from 'node:http';
import { AddressInfo } from 'node:net';
import { createRouter, Router, RouterOptions } from '../../src/http/router';
import { createLogger } from '../../src/log';
import type { EggRoute } from '../../src/modules/deployments/deployments.service';
import { viaRouter as once } from '../support/router';

/** Through the router on a connection kept open, as browsers and load balancers do (`once` sends Connection: close). */
const keptOpen = new http.Agent({ keepAlive: true });
function viaRouter(routerUrl: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(routerUrl, { headers: { host }, agent: keptOpen }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The router's route cache and kept-open connections (src/http/router.ts), with the gateway's
 * parts replaced by counters: an egg's host is looked up once per routeCacheMs, a failed request
 * looks again at once, and requests share connections to the egg.
 */
describe('the router reuses a host’s route and its connections to the egg', () => {
  let egg: http.Server;
  let eggPort: number;
  const eggConnections = new Set<unknown>();
  let lookups = 0;
  let current: EggRoute | null;
  let endpointPort: number;
  let router: Router;
  let url: string;
  const host = 'hen.eggs.test';

  beforeAll(async () => {
    egg = http.createServer((_req, res) => res.end('cluck'));
    egg.on('connection', (socket) => eggConnections.add(socket));
    await new Promise<void>((resolve) => egg.listen(0, '127.0.0.1', resolve));
    eggPort = (egg.address() as AddressInfo).port;
  });
  afterAll(async () => {
    keptOpen.destroy();
    await router?.close();
    egg.closeAllConnections();
    await new Promise((resolve) => egg.close(resolve));
  });

  async function start(routeCacheMs: number) {
    await router?.close();
    lookups = 0;
    current = { kind: 'egg', slug: 'hen', deploymentId: 'dep_1', asleep: false, detail: null };
    endpointPort = eggPort;
    const deployments = {
      route: () => {
        lookups++;
        return Promise.resolve(current);
      },
      wakeForRequest: () => Promise.resolve(null),
      touch: () => Promise.resolve(),
      supervisor: { runtimeLine: () => undefined },
    } as unknown as RouterOptions['deployments'];
    const runtime = {
      kind: 'docker',
      endpoints: () => Promise.resolve([{ host: '127.0.0.1', port: endpointPort }]),
    } as unknown as RouterOptions['runtime'];
    router = createRouter({ appsDomain: 'eggs.test', deployments, runtime, log: createLogger('silent'), routeCacheMs, waitMs: 300 });
    url = await router.listen(0, '127.0.0.1');
  }

  it('within routeCacheMs a host is looked up once, over connections kept open to the egg', async () => {
    await start(60_000);
    eggConnections.clear();
    for (let i = 0; i < 10; i++) expect((await viaRouter(url, host)).body).toBe('cluck');
    expect(lookups).toBe(1);
    expect(eggConnections.size).toBe(1);
  });

  it('with 0 every request looks its host up', async () => {
    await start(0);
    for (let i = 0; i < 3; i++) expect((await viaRouter(url, host)).status).toBe(200);
    expect(lookups).toBe(3);
  });

  it('a request whose egg does not answer drops the route: the next request looks it up again', async () => {
    await start(60_000);
    const old = http.createServer((_req, res) => res.end('old'));
    await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
    endpointPort = (old.address() as AddressInfo).port;
    expect((await viaRouter(url, host)).body).toBe('old');
    expect(lookups).toBe(1);
    // The deployment is replaced and its container goes.
    current = { kind: 'egg', slug: 'hen', deploymentId: 'dep_2', asleep: false, detail: null };
    endpointPort = eggPort;
    old.closeAllConnections();
    await new Promise((resolve) => old.close(resolve));
    // Sent again at once to where the runtime says it runs now; and the route is read again next time.
    expect((await viaRouter(url, host)).body).toBe('cluck');
    expect((await viaRouter(url, host)).body).toBe('cluck');
    expect(lookups).toBe(2);
  });

  it('a client that closes its connection after each request gets the same answers', async () => {
    await start(60_000);
    for (let i = 0; i < 3; i++) expect((await once(url, host)).body).toBe('cluck');
    expect(lookups).toBe(1);
  });

  it('a sleeping egg’s route is never reused', async () => {
    await start(60_000);
    current = { kind: 'egg', slug: 'hen', deploymentId: null, asleep: false, detail: 'nothing live' };
    expect((await viaRouter(url, host)).status).toBe(503);
    expect((await viaRouter(url, host)).status).toBe(503);
    expect(lookups).toBeGreaterThanOrEqual(2);
  });
});
