import net from 'node:net';
import { PgTransport } from '../../src/bus/pg-transport';
import { RedisTransport } from '../../src/bus/redis-transport';
import { createDataSource } from '../../src/data-source';

/**
 * Outbound connections that are accepted and then never answered (a half-dead database or Redis
 * behind a load balancer) fail after their timeout instead of hanging the caller.
 */
describe('connections to a server that accepts and never answers', () => {
  let silent: net.Server;
  let port: number;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    silent = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    port = (silent.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  });

  it('the gateway pool (HATCHERY_DB_CONNECT_TIMEOUT_MS) gives up opening a connection', async () => {
    const ds = createDataSource(`postgres://postgres@127.0.0.1:${port}/x`, { connectTimeoutMs: 300 });
    await expect(ds.initialize()).rejects.toThrow(/timeout/i);
  });

  it('the event bus LISTEN connection gives up, so its backoff can try again', async () => {
    const ds = createDataSource(`postgres://postgres@127.0.0.1:${port}/x`, { connectTimeoutMs: 300 });
    const transport = new PgTransport(ds, { url: `postgres://postgres@127.0.0.1:${port}/x`, channel: 't', onError: () => undefined, connectTimeoutMs: 300 });
    await expect(
      transport.start(
        'gw_test',
        () => undefined,
        () => undefined,
      ),
    ).rejects.toThrow(/timeout/i);
    await transport.close();
  });

  it('a Redis publish gives up after the command timeout', async () => {
    const errors: unknown[] = [];
    const transport = new RedisTransport({ url: `redis://127.0.0.1:${port}`, channel: 't', onError: (e) => errors.push(e) });
    await expect(transport.send('gw_test', ['["x",1]'])).rejects.toThrow(/timed? ?out/i);
    await transport.close();
  }, 15_000);
});
