import WebSocket from 'ws';
import { until } from '../crons/helpers';
import { haproxyHasNamespaces } from '../../src/http/edge';
import { mayEnterNamespaces } from '../../src/runtime/namespaces';
import { eggFiles, HostingContext } from './hosting.suite';

/** The router's requests by what served them, and the hosts HAProxy serves now, from GET /metrics. */
async function served(gatewayUrl: string): Promise<{ edge: number; node: number; hosts: number }> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const sum = (via: string) =>
    [...text.matchAll(new RegExp(`^hatchery_router_requests_total\\{via="${via}",status_class="[^"]+"\\} (\\d+)`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  const hosts = /^hatchery_router_edge_hosts (\d+)/m.exec(text);
  return { edge: sum('edge'), node: sum('node'), hosts: hosts ? Number(hosts[1]) : 0 };
}

/** An egg that answers with the X-Forwarded headers it got and the address the connection came from, and holds a WebSocket open. */
const HEADERS_EGG = `
const http = require('http');
const crypto = require('crypto');
const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ for: req.headers['x-forwarded-for'], proto: req.headers['x-forwarded-proto'], host: req.headers['x-forwarded-host'], port: req.headers['x-forwarded-port'], remote: req.socket.remoteAddress }));
});
server.on('upgrade', (req, socket) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
});
server.listen(Number(process.env.PORT));
`;

/** The gateway's settings for the hosting scenarios with HAProxy in front: hosts go back to the Node router after 3 s without a request, which the scenarios meet too. */
export const EDGE_ENV = { HATCHERY_ROUTER_EDGE: 'haproxy', HATCHERY_ROUTER_EDGE_IDLE_MS: '3000' };

/** What only HAProxy in front adds to the hosting scenarios (run by hosting.e2e after them). */
export function edgeScenarios(ctx: () => HostingContext): void {
  it('an awake egg is served by HAProxy itself after its first request; its requests are still logged to the deployment', async () => {
    const { gateway, newEgg, deployFiles, get, runtimeLines } = ctx();
    const slug = await newEgg();
    await gateway.services.apps.setTier(slug, 'always_on');
    const live = await deployFiles(slug, eggFiles('e1'));
    expect(live.status).toBe('LIVE');
    const before = await served(gateway.url);
    // The first request goes through the Node router, which hands the host to HAProxy.
    expect(await get(slug, '/first')).toMatchObject({ status: 200, body: 'e1 /first' });
    const after = await until('HAProxy to serve the egg', async () => {
      const r = await get(slug, '/edge?secret=1');
      expect(r).toMatchObject({ status: 200, body: 'e1 /edge?secret=1' });
      const now = await served(gateway.url);
      return now.edge > before.edge && now;
    });
    expect(after.edge).toBeGreaterThan(before.edge);
    // Each request through HAProxy is one runtime line, as through the Node router, without its query.
    const lines = await until('the request lines', async () => {
      const found = (await runtimeLines(live.id)).map((l) => l.message).filter((m) => /^GET \/(first|edge) 200 \d+ms$/.test(m));
      return found.some((m) => m.startsWith('GET /edge ')) && found;
    });
    expect(lines[0]).toMatch(/^GET \/first 200 \d+ms$/);
    expect(lines.join('\n')).not.toContain('secret');
  }, 120_000);

  it('a host idle for HATCHERY_ROUTER_EDGE_IDLE_MS goes back to the Node router; its next request hands it to HAProxy again', async () => {
    const { gateway, newEgg, deployFiles, get } = ctx();
    const slug = await newEgg();
    await gateway.services.apps.setTier(slug, 'always_on');
    expect((await deployFiles(slug, eggFiles('idle'))).status).toBe('LIVE');
    // Every host of the tests before gone back to the Node router first (their last request lines counted long before), so what
    // HAProxy serves and holds from here on is this egg.
    await until('no host with HAProxy', async () => (await served(gateway.url)).hosts === 0, 1_000_000);
    const before = await served(gateway.url);
    // Served by HAProxy and still held by it, read in one scrape: on a loaded machine one round of this loop can outlast the 3 s
    // a host stays, so a scrape can count the request HAProxy served after the host went back already.
    const serving = await until('HAProxy to serve the egg', async () => {
      const ok = (await get(slug, '/')).status === 200;
      const now = await served(gateway.url);
      return ok && now.edge > before.edge && now.hosts > 0 && now;
    });
    expect(serving.hosts).toBe(1);
    // No request for 3 s: HAProxy holds no host of this suite's any more.
    await until('every host back with the Node router', async () => (await served(gateway.url)).hosts === 0, 1_000_000);
    const idle = await served(gateway.url);
    expect(await get(slug, '/back')).toMatchObject({ status: 200, body: 'idle /back' });
    // (The Node router counts a request once its answer is closed.)
    const after = await until('the Node router to count it', async () => {
      const now = await served(gateway.url);
      return now.node > idle.node && now;
    });
    expect(after.node).toBe(idle.node + 1);
    expect(after.edge).toBe(idle.edge);
    await until('HAProxy to serve it again', async () => (await served(gateway.url)).hosts > 0);
  }, 120_000);

  it('the egg gets the X-Forwarded headers through HAProxy as through the Node router; HAProxy reaches it in its own network namespace, not through its published port', async () => {
    const { gateway, newEgg, deployFiles, get, hostOf } = ctx();
    const slug = await newEgg();
    await gateway.services.apps.setTier(slug, 'always_on');
    expect((await deployFiles(slug, { 'package.json': JSON.stringify({ scripts: { start: 'node server.js' } }), 'server.js': HEADERS_EGG })).status).toBe(
      'LIVE',
    );
    const viaNode = JSON.parse((await get(slug, '/')).body);
    const before = (await served(gateway.url)).edge;
    const viaEdge = await until('HAProxy to serve the egg', async () => {
      const r = await get(slug, '/');
      return (await served(gateway.url)).edge > before && JSON.parse(r.body);
    });
    // The port is the Host header's, 80 without one (as http-proxy-3 says it).
    for (const { remote: _remote, ...seen } of [viaNode, viaEdge]) expect(seen).toEqual({ for: '127.0.0.1', proto: 'http', host: hostOf(slug), port: '80' });
    // The Node router goes through the published port, whose proxy connects from the bridge; HAProxy (as root, built with
    // namespace support: CI's) from the egg's own loopback.
    expect(viaNode.remote).not.toMatch(/(^|:)127\.0\.0\.1$/);
    if (mayEnterNamespaces() && haproxyHasNamespaces('haproxy')) expect(viaEdge.remote).toMatch(/(^|:)127\.0\.0\.1$/);
    else expect(viaEdge.remote).toBe(viaNode.remote);
  }, 120_000);

  it('a WebSocket open through HAProxy keeps a free egg awake, across a reload of HAProxy; once closed, the egg sleeps', async () => {
    const { gateway, newEgg, deployFiles, get, hostOf } = ctx();
    // Another egg, whose first request through the router makes HAProxy reload while the WebSocket is open.
    const other = await newEgg();
    await gateway.services.apps.setTier(other, 'always_on');
    expect((await deployFiles(other, eggFiles('other'))).status).toBe('LIVE');
    const slug = await newEgg();
    const live = await deployFiles(slug, { 'package.json': JSON.stringify({ scripts: { start: 'node server.js' } }), 'server.js': HEADERS_EGG });
    expect(live.status).toBe('LIVE');
    const before = (await served(gateway.url)).edge;
    await until('HAProxy to serve the egg', async () => (await get(slug, '/')).status === 200 && (await served(gateway.url)).edge > before);
    const { port } = new URL(gateway.routerUrl);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`, { headers: { host: hostOf(slug) } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const opened = Date.now();
    // The reload: the WebSocket stays with the worker it came to, which HAProxy keeps until it closes.
    const reloaded = (await served(gateway.url)).edge;
    await until('HAProxy to serve the other egg', async () => (await get(other, '/')).status === 200 && (await served(gateway.url)).edge > reloaded);
    const row = async () =>
      (
        await gateway.ds.query<Array<{ last_request_at: Date | null; slept_at: Date | null }>>(
          'SELECT last_request_at, slept_at FROM deployments WHERE id = $1',
          [live.id],
        )
      )[0];
    // The gateway records the open connection as activity, again and again, past the sleep time (2.5 s).
    await until(
      'activity recorded past the sleep time',
      async () => {
        const r = await row();
        expect(r.slept_at).toBeNull();
        return r.last_request_at !== null && r.last_request_at.getTime() > opened + 3000;
      },
      1_000_000,
    );
    ws.terminate();
    await until('the egg to sleep', async () => (await row()).slept_at !== null, 1_000_000);
  }, 120_000);
}
