import net from 'node:net';
import { Pool } from 'pg';
import { createDataSource } from '../../src/data-source';
import { GuardedClient } from '../../src/db/guarded-client';
import { createTestDatabase } from '../support/db';

/**
 * A server that shuts down just as a connection is made: it sends ReadyForQuery and a FATAL
 * "terminating connection due to administrator command" (57P01) in one TCP write, which a
 * stopping PostgreSQL does to a connection it has just accepted. Both are parsed in one go, so the
 * client emits 'error' before whoever checked it out from the pool has attached a listener. With a
 * plain pg Client that ends the process (CI once failed the database-outage test on it).
 */
function startDyingServer(): Promise<{ port: number; close(): Promise<void> }> {
  const message = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0, 'latin1');
    head.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };
  const int32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  };
  const fields = (pairs: Array<[string, string]>) => Buffer.concat([...pairs.map(([k, v]) => Buffer.from(`${k}${v}\0`, 'utf8')), Buffer.from([0])]);
  const server = net.createServer((socket) => {
    socket.once('data', () => {
      // Startup message in: authentication ok, ready for query, and at once the fatal error.
      socket.write(
        Buffer.concat([
          message('R', int32(0)),
          message('Z', Buffer.from('I')),
          message(
            'E',
            fields([
              ['S', 'FATAL'],
              ['V', 'FATAL'],
              ['C', '57P01'],
              ['M', 'terminating connection due to administrator command'],
            ]),
          ),
        ]),
      );
      socket.end();
    });
    socket.on('error', () => undefined);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      resolve({ port, close: () => new Promise<void>((r) => server.close(() => r())) });
    });
  });
}

describe('a connection the server terminates as it is handed out', () => {
  let dying: Awaited<ReturnType<typeof startDyingServer>>;
  beforeAll(async () => {
    dying = await startDyingServer();
  });
  afterAll(() => dying.close());

  it('does not end the process: the next statement on it fails with the connection error instead', async () => {
    const pool = new Pool({ host: '127.0.0.1', port: dying.port, user: 'postgres', database: 'x', Client: GuardedClient, max: 1 });
    try {
      const client = await pool.connect();
      // Had the 'error' been unheard, it would have been thrown from the socket's data handler by now.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await expect(client.query('SELECT 1')).rejects.toThrow(/not queryable|terminat/i);
      client.release(true);
    } finally {
      await pool.end();
    }
  });

  it('the gateway pool (TypeORM) makes its connections with GuardedClient (the job pool: test/jobs/statement-timeout)', async () => {
    const db = await createTestDatabase();
    const ds = createDataSource(db.url);
    try {
      await ds.initialize();
      const pool = (ds.driver as unknown as { master: { options: { Client?: unknown } } }).master;
      expect(pool.options.Client).toBe(GuardedClient);
      expect(await ds.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      if (ds.isInitialized) await ds.destroy();
      await db.drop();
    }
  });
});
