import net from 'node:net';
import { RateLimiter } from '../../src/http/rate-limit';
import { createLogger } from '../../src/log';
import { unique } from '../support/factories';

/**
 * A Redis that takes the connection and then says nothing (a hung server, a black-holing proxy)
 * must not hang the limiter: its start returns, and every take() answers from the gateway's own
 * count, the same as when Redis refuses the connection (rate-limit-redis.test.ts).
 */
const PER_MIN = 3;

/** The complete RESP commands at the start of `buf` (arrays of bulk strings), and what is left. */
function parseCommands(buf: string): { commands: string[][]; rest: string } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const header = /^\*(\d+)\r\n/.exec(buf.slice(at));
    if (!header) break;
    let pos = at + header[0].length;
    const args: string[] = [];
    for (let i = 0; i < Number(header[1]); i++) {
      const len = /^\$(\d+)\r\n/.exec(buf.slice(pos));
      if (!len || buf.length < pos + len[0].length + Number(len[1]) + 2) return { commands, rest: buf.slice(at) };
      pos += len[0].length;
      args.push(buf.slice(pos, pos + Number(len[1])));
      pos += Number(len[1]) + 2;
    }
    commands.push(args);
    at = pos;
  }
  return { commands, rest: buf.slice(at) };
}

/**
 * A TCP server on loopback that accepts connections and records the commands they send. With
 * `handshake`, it answers ioredis's connection handshake (CLIENT SETINFO, then the INFO of the
 * ready check) like a Redis would, and is silent from then on; without, it never answers at all.
 */
async function silentServer(opts: { handshake: boolean }) {
  const sockets = new Set<net.Socket>();
  const received: string[] = [];
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = '';
    let ready = false;
    socket.on('data', (chunk) => {
      const { commands, rest } = parseCommands(pending + chunk.toString('latin1'));
      pending = rest;
      for (const [name, ...args] of commands) {
        received.push([name, ...args].join(' '));
        if (!opts.handshake || ready) continue;
        if (/^client$/i.test(name)) socket.write('+OK\r\n');
        if (/^info$/i.test(name)) {
          const info = 'redis_version:7.2.0\r\nloading:0\r\n';
          socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`);
          ready = true;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    /** The names of the commands received so far, upper case. */
    commands: () => received.map((c) => c.split(' ')[0].toUpperCase()),
    connections: () => connections,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('rate limits with a Redis that accepts the connection and never answers', () => {
  const limiterFor = (url: string) =>
    new RateLimiter({ perMin: PER_MIN, anonPerMin: 2, redisUrl: url, redisPrefix: `${unique('test-rl-silent')}:`, log: createLogger('silent') });

  /** PER_MIN takes allowed, counting down, then a refusal; another token and the anonymous IP count apart. */
  async function expectLocalCounting(limiter: RateLimiter): Promise<void> {
    for (let i = 1; i <= PER_MIN; i++) {
      expect(await limiter.take('hatch_silent_a', '127.0.0.1')).toEqual({ allowed: true, limit: PER_MIN, remaining: PER_MIN - i, resetSeconds: 60 });
    }
    expect(await limiter.take('hatch_silent_a', '127.0.0.1')).toMatchObject({ allowed: false, limit: PER_MIN, remaining: 0 });
    expect(await limiter.take('hatch_silent_b', '127.0.0.1')).toMatchObject({ allowed: true, remaining: PER_MIN - 1 });
    expect(await limiter.take(null, '127.0.0.7')).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
  }

  it('silent from the first byte: start() returns and take() counts locally', async () => {
    const redis = await silentServer({ handshake: false });
    const limiter = limiterFor(redis.url);
    try {
      await limiter.start();
      expect(redis.connections()).toBeGreaterThanOrEqual(1);
      // The ready check was sent and never answered.
      expect(redis.commands()).toContain('INFO');
      await expectLocalCounting(limiter);
    } finally {
      await limiter.close();
      await redis.close();
    }
  });

  it('silent once connected: each take() gives up on its Redis command after the command timeout and counts locally', async () => {
    const redis = await silentServer({ handshake: true });
    const limiter = limiterFor(redis.url);
    try {
      await limiter.start();
      expect(redis.commands().filter((c) => c.startsWith('EVAL'))).toEqual([]);
      const started = Date.now();
      expect(await limiter.take('hatch_silent_c', '127.0.0.1')).toEqual({ allowed: true, limit: PER_MIN, remaining: PER_MIN - 1, resetSeconds: 60 });
      const waited = Date.now() - started;
      // The script went to the server (the connection was ready), which never answered it:
      // the answer above is the local count, after the 500 ms command timeout and not much later.
      expect(redis.commands().filter((c) => c.startsWith('EVAL'))).toHaveLength(1);
      expect(waited).toBeGreaterThanOrEqual(450);
      expect(waited).toBeLessThan(5000);
      for (let i = 2; i <= PER_MIN; i++) expect(await limiter.take('hatch_silent_c', '127.0.0.1')).toMatchObject({ allowed: true, remaining: PER_MIN - i });
      expect(await limiter.take('hatch_silent_c', '127.0.0.1')).toMatchObject({ allowed: false, remaining: 0 });
      await limiter.failedAuth('127.0.0.8');
      await limiter.failedAuth('127.0.0.8');
      // Two bad tokens from this address reach the anonymous allowance (2): any token is refused there.
      expect(await limiter.take('hatch_silent_d', '127.0.0.8')).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    } finally {
      await limiter.close();
      await redis.close();
    }
  });
});
