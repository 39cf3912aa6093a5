import { chmod, mkdir, rm, unlink } from 'node:fs/promises';
import net, { Server, Socket } from 'node:net';
import path from 'node:path';

/**
 * How a preview's container reaches its database and its Redis: through Unix sockets in a folder
 * bind-mounted at `/run/hatchery`, which this gateway serves and relays to the servers. No network
 * is involved (a container's 127.0.0.1 is the container itself, and the servers may listen on the
 * host's loopback only), and each relay lets through only what its preview may do:
 *
 * - `.s.PGSQL.5432`: a PostgreSQL connection is passed on only if its startup message names the
 *   preview's own role and database (the server then checks the password). Any other user, even
 *   one the server would trust without a password, is refused before the server hears of it.
 * - `redis.sock`: a Redis connection is signed in as the preview's ACL user before the app speaks,
 *   and any `AUTH` or `HELLO … AUTH` the app sends names that user whatever user it wrote, so no
 *   connection can switch to another user (such as a `default` without a password); `RESET`,
 *   which would sign it in as `default` and which no ACL rule can deny, is refused.
 */
export const RELAY_MOUNT = '/run/hatchery';
export const PG_SOCKET = '.s.PGSQL.5432';
export const REDIS_SOCKET = 'redis.sock';

export interface RelayTargets {
  postgres?: { host: string; port: number; role: string; database: string };
  redis?: { host: string; port: number; user: string; password: string };
}

/** The longest path a Unix socket may have (sun_path), less its terminating zero. */
const MAX_SOCKET_PATH = 107;

export class PreviewRelays {
  private readonly served = new Map<string, { servers: Server[]; sockets: Set<Socket> }>();

  /** The folder of a preview's sockets. */
  constructor(private readonly root: string) {}

  dirOf(previewId: string): string {
    const dir = path.join(this.root, previewId.toLowerCase());
    if (path.join(dir, PG_SOCKET).length > MAX_SOCKET_PATH) {
      throw new Error(`preview sockets under ${this.root} would be longer than ${MAX_SOCKET_PATH} characters: set HATCHERY_DATA_DIR to a shorter path`);
    }
    return dir;
  }

  /**
   * Serves the preview's relays (again after a restart: a socket nobody answers on is replaced; one
   * another gateway on this host serves is left to it). Resolves with the folder to mount.
   */
  async serve(previewId: string, targets: RelayTargets): Promise<string> {
    const dir = this.dirOf(previewId);
    if (this.served.has(previewId)) return dir;
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const entry = { servers: [] as Server[], sockets: new Set<Socket>() };
    this.served.set(previewId, entry);
    const track = (socket: Socket) => {
      entry.sockets.add(socket);
      socket.once('close', () => entry.sockets.delete(socket));
    };
    try {
      if (targets.postgres) {
        const pg = targets.postgres;
        const server = await listenOn(path.join(dir, PG_SOCKET), (client) => {
          track(client);
          relayPostgres(client, pg, track);
        });
        if (server) entry.servers.push(server);
      }
      if (targets.redis) {
        const redis = targets.redis;
        const server = await listenOn(path.join(dir, REDIS_SOCKET), (client) => {
          track(client);
          relayRedis(client, redis, track);
        });
        if (server) entry.servers.push(server);
      }
    } catch (err) {
      await this.stop(previewId);
      throw err;
    }
    return dir;
  }

  /** Whether this gateway serves the preview's relays. */
  serves(previewId: string): boolean {
    return this.served.has(previewId);
  }

  /** Stops serving the preview's relays and cuts their connections; with `remove`, its folder goes too (teardown). */
  async stop(previewId: string, opts: { remove?: boolean } = {}): Promise<void> {
    const entry = this.served.get(previewId);
    this.served.delete(previewId);
    if (entry) {
      for (const s of entry.sockets) s.destroy();
      await Promise.all(entry.servers.map((s) => new Promise<void>((done) => s.close(() => done()))));
    }
    if (opts.remove) await rm(this.dirOf(previewId), { recursive: true, force: true });
  }

  /** This gateway stops: its relays stop (another gateway on the host takes them over). */
  async close(): Promise<void> {
    await Promise.all([...this.served.keys()].map((id) => this.stop(id)));
  }
}

/** Listens on a Unix socket anyone may connect to; null when another process already answers there. */
async function listenOn(file: string, onConnection: (socket: Socket) => void): Promise<Server | null> {
  if (await answers(file)) return null;
  await unlink(file).catch(() => undefined); // a stale socket: nobody answers on it
  const server = net.createServer(onConnection);
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(file, () => {
      server.off('error', fail);
      done();
    });
  });
  // The egg's process may run as any user.
  await chmod(file, 0o666);
  return server;
}

function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect(file);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/** Joins a client to its upstream both ways; either side ending or failing ends both. */
function join(client: Socket, upstream: Socket): void {
  client.pipe(upstream);
  upstream.pipe(client);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.once('close', end);
  upstream.once('close', end);
  client.on('error', end);
  upstream.on('error', end);
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
/** The longest startup message accepted (PostgreSQL's own limit is 10000). */
const MAX_STARTUP = 10_000;

/**
 * Reads the client's startup message; passes the connection on only if it names the preview's role
 * and database. SSL and GSS encryption requests are declined ('N': the socket never leaves the
 * host), a cancel request is passed on as it is (it carries its own secret).
 */
function relayPostgres(client: Socket, target: NonNullable<RelayTargets['postgres']>, track: (s: Socket) => void): void {
  let buffered = Buffer.alloc(0);
  client.on('error', () => client.destroy());
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 8) {
      const length = buffered.readInt32BE(0);
      if (length < 8 || length > MAX_STARTUP) return refusePg(client, '08P01', 'invalid startup packet length');
      if (buffered.length < length) return;
      const packet = buffered.subarray(0, length);
      buffered = buffered.subarray(length);
      const code = packet.readInt32BE(4);
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
        client.write('N');
        continue;
      }
      client.off('data', onData);
      client.pause();
      if (code === CANCEL_REQUEST) return passOn(packet);
      if (code !== PROTOCOL_3) return refusePg(client, '0A000', 'unsupported frontend protocol: this relay speaks protocol 3.0');
      const params = startupParams(packet.subarray(8));
      const user = params.get('user');
      const database = params.get('database') ?? user;
      if (user !== target.role || database !== target.database) {
        return refusePg(client, '28000', `this preview may only connect as "${target.role}" to the database "${target.database}"`);
      }
      return passOn(Buffer.concat([packet, buffered]));
    }
  };
  const passOn = (first: Buffer) => {
    const upstream = net.connect({ host: target.host, port: target.port });
    track(upstream);
    upstream.once('connect', () => {
      upstream.write(first);
      join(client, upstream);
      client.resume();
    });
    upstream.once('error', () => refusePg(client, '08006', 'the preview database server cannot be reached'));
  };
  client.on('data', onData);
}

/** The key/value pairs of a startup message's body. */
function startupParams(body: Buffer): Map<string, string> {
  const parts = body.toString('utf8').split('\0');
  const params = new Map<string, string>();
  for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) params.set(parts[i], parts[i + 1]);
  return params;
}

/** A FATAL ErrorResponse, as the server would send it, then the end of the connection. */
function refusePg(client: Socket, sqlState: string, message: string): void {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', sqlState],
      ['M', message],
    ].map(([k, v]) => Buffer.from(`${k}${v}\0`, 'utf8')),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(4 + fields.length, 1);
  client.end(Buffer.concat([header, fields]));
}

const RESET_REFUSED = 'RESET is not allowed: it would sign the connection out of its preview user';

/** The largest command the Redis relay holds while reading it (Redis's own bulk limit is 512 MB). */
const MAX_REDIS_COMMAND = 64 * 1024 * 1024;

/**
 * Signs the connection in as the preview's user, then relays it; commands are read one by one,
 * only so `AUTH` and `HELLO … AUTH` can be made to name the preview's user and `RESET` refused.
 */
function relayRedis(client: Socket, target: NonNullable<RelayTargets['redis']>, track: (s: Socket) => void): void {
  client.pause();
  client.on('error', () => client.destroy());
  const upstream = net.connect({ host: target.host, port: target.port });
  track(upstream);
  const fail = (message: string) => {
    client.end(`-ERR ${message}\r\n`);
    upstream.destroy();
  };
  upstream.once('error', () => fail('the preview Redis cannot be reached'));
  upstream.once('connect', () => {
    upstream.write(encodeCommand(['AUTH', target.user, target.password]));
    let reply = '';
    const onReply = (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      const end = reply.indexOf('\r\n');
      if (end < 0) return;
      upstream.off('data', onReply);
      if (reply.slice(0, end) !== '+OK') return fail(`the preview's Redis user was refused: ${reply.slice(1, end)}`);
      const rest = Buffer.from(reply.slice(end + 2), 'latin1');
      if (rest.length) client.write(rest);
      upstream.pipe(client);
      const upstreamGone = () => client.destroy();
      upstream.once('close', upstreamGone);
      upstream.on('error', upstreamGone);
      client.once('close', () => upstream.destroy());
      const parser = new CommandReader((cmd, raw) => {
        const verb = cmd[0]?.toString('latin1').toUpperCase();
        if (verb === 'AUTH' && cmd.length >= 2) upstream.write(encodeCommand(['AUTH', target.user, cmd[cmd.length - 1]]));
        // RESET signs the connection in as `default`, and no ACL rule can deny it: refused, in its turn among the replies.
        else if (verb === 'RESET') upstream.write(encodeCommand(['EVAL', `return redis.error_reply('NOPERM ${RESET_REFUSED}')`, '0']));
        else if (verb === 'HELLO' && cmd.some((a) => a.toString('latin1').toUpperCase() === 'AUTH')) {
          const at = cmd.findIndex((a) => a.toString('latin1').toUpperCase() === 'AUTH');
          const rewritten = [...cmd];
          if (at + 1 < rewritten.length) rewritten[at + 1] = Buffer.from(target.user);
          upstream.write(encodeCommand(rewritten));
        } else upstream.write(raw);
      });
      client.on('data', (chunk: Buffer) => {
        const problem = parser.push(chunk);
        if (problem) fail(problem);
      });
      client.resume();
    };
    upstream.on('data', onReply);
  });
}

function encodeCommand(args: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = typeof a === 'string' ? Buffer.from(a) : a;
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/**
 * Splits a client's byte stream into Redis commands: RESP arrays of bulk strings, or inline
 * commands (a line of words, as typed into telnet). Each comes with its raw bytes.
 */
export class CommandReader {
  private buffer: Buffer = Buffer.alloc(0);

  constructor(private readonly onCommand: (args: Buffer[], raw: Buffer) => void) {}

  /** Takes more bytes; returns a problem that ends the connection, or null. */
  push(chunk: Buffer): string | null {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const parsed = this.next();
      if (parsed === null) break;
      if (typeof parsed === 'string') return parsed;
      this.buffer = this.buffer.subarray(parsed.length);
      this.onCommand(parsed.args, parsed.raw);
    }
    if (this.buffer.length > MAX_REDIS_COMMAND) return 'command too long';
    return null;
  }

  /** The next whole command, null if more bytes are needed, or a protocol problem. */
  private next(): { args: Buffer[]; raw: Buffer; length: number } | string | null {
    const b = this.buffer;
    if (b.length === 0) return null;
    const lineEnd = b.indexOf('\r\n');
    if (b[0] !== 0x2a /* '*' */) {
      // Inline: words up to the end of the line.
      const end = lineEnd >= 0 ? lineEnd : b.indexOf('\n');
      if (end < 0) return null;
      const length = b[end] === 0x0d ? end + 2 : end + 1;
      const words = b
        .subarray(0, end)
        .toString('latin1')
        .split(/\s+/)
        .filter((w) => w.length > 0)
        .map((w) => Buffer.from(w, 'latin1'));
      return { args: words, raw: b.subarray(0, length), length };
    }
    if (lineEnd < 0) return null;
    const count = Number(b.subarray(1, lineEnd).toString('latin1'));
    if (!Number.isInteger(count) || count < 0 || count > 1024 * 1024) return 'Protocol error: invalid multibulk length';
    let at = lineEnd + 2;
    const args: Buffer[] = [];
    for (let i = 0; i < count; i++) {
      const end = b.indexOf('\r\n', at);
      if (end < 0) return null;
      if (b[at] !== 0x24 /* '$' */) return "Protocol error: expected '$'";
      const size = Number(b.subarray(at + 1, end).toString('latin1'));
      if (!Number.isInteger(size) || size < 0 || size > MAX_REDIS_COMMAND) return 'Protocol error: invalid bulk length';
      if (b.length < end + 2 + size + 2) return null;
      args.push(b.subarray(end + 2, end + 2 + size));
      at = end + 2 + size + 2;
    }
    return { args, raw: b.subarray(0, at), length: at };
  }
}
