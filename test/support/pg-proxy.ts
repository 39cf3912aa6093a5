import net from 'node:net';

const drop = () => undefined;

/**
 * A TCP proxy on 127.0.0.1 in front of the test PostgreSQL, for databases that misbehave without
 * going away. It can swallow connections (accept them and never answer): those whose startup
 * message `blackholes` picks, or every new one after `silence()` or `freeze()`. `silence()` also
 * cuts the connections it is forwarding (as a failover would); `freeze()` keeps them open and lets
 * nothing through either way (a hung server, a network dropping packets). `restore()` forwards
 * new connections again; swallowed and frozen ones stay so until their client closes them.
 */
export class PgProxy {
  private readonly sockets = new Set<net.Socket>();
  private readonly forwarded = new Set<[client: net.Socket, server: net.Socket]>();
  private readonly frozen = new Set<net.Socket>();
  private mode: 'forward' | 'silent' | 'frozen' = 'forward';
  /** Connections accepted and never answered. */
  swallowed = 0;
  /** Connections closed by their client while they were swallowed or frozen. */
  closedWhileStuck = 0;
  /** The database URL through the proxy (after `listen`). */
  url = '';
  private readonly server: net.Server;
  private readonly upstream: URL;

  constructor(
    databaseUrl: string,
    private readonly blackholes: (startup: Buffer) => boolean = () => false,
  ) {
    this.upstream = new URL(databaseUrl);
    this.server = net.createServer((client) => this.accept(client));
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    const u = new URL(this.upstream);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    this.url = u.toString();
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
  }

  /** Accepted and never answered; read and dropped, so its client's close is noticed. */
  private swallow(client: net.Socket): void {
    this.swallowed++;
    this.stick(client);
  }

  private stick(s: net.Socket): void {
    this.frozen.add(s);
    s.on('data', drop).resume();
    s.once('close', () => {
      if (this.frozen.delete(s)) this.closedWhileStuck++;
    });
  }

  private accept(client: net.Socket): void {
    this.track(client);
    if (this.mode !== 'forward') return this.swallow(client);
    // The first message (no TLS here) is the startup packet: Int32 length, Int32 protocol, then
    // NUL-terminated key/value pairs such as application_name.
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.length < 4 || head.length < head.readInt32BE(0)) return;
      client.off('data', onData);
      if (this.mode !== 'forward' || this.blackholes(head)) return this.swallow(client);
      client.pause();
      const server = net.connect(Number(this.upstream.port || 5432), this.upstream.hostname);
      this.track(server);
      const pair: [net.Socket, net.Socket] = [client, server];
      this.forwarded.add(pair);
      const cut = () => {
        this.forwarded.delete(pair);
        client.destroy();
        server.destroy();
      };
      client.on('close', cut);
      server.on('close', cut);
      server.write(head);
      client.pipe(server);
      server.pipe(client);
      client.resume();
    };
    client.on('data', onData);
  }

  /** From now on every new connection is swallowed; those being forwarded are cut. */
  silence(): void {
    this.mode = 'silent';
    for (const [client, server] of this.forwarded) {
      client.destroy();
      server.destroy();
    }
    this.forwarded.clear();
  }

  /** From now on every new connection is swallowed; those being forwarded stay open, and nothing passes. */
  freeze(): void {
    this.mode = 'frozen';
    for (const pair of this.forwarded) {
      const [client, server] = pair;
      this.forwarded.delete(pair);
      client.unpipe(server);
      server.unpipe(client);
      server.on('data', drop).resume();
      this.stick(client);
    }
  }

  /** Forwards new connections again (those already swallowed or frozen stay so). */
  restore(): void {
    this.mode = 'forward';
  }

  /** Connections open through the proxy now, forwarded or stuck. */
  open(): number {
    return this.forwarded.size + this.frozen.size;
  }

  /** Swallowed or frozen connections still open (their client has not given them up). */
  stuckOpen(): number {
    return this.frozen.size;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
