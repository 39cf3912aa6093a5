import Redis from 'ioredis';
import { BusTransport, isFrame, packEvents } from './event-bus';
import { within } from '../timeout';

/** Frames stay well below Redis' pub/sub output buffer limits for slow subscribers. */
const FRAME_MAX_BYTES = 256 * 1024;
const START_TIMEOUT_MS = 10_000;
/** Longest a publish (or any command) may wait for Redis. */
const COMMAND_TIMEOUT_MS = 2000;

export interface RedisTransportOptions {
  url: string;
  channel: string;
  onError: (err: unknown) => void;
}

/**
 * Events over Redis pub/sub: one connection publishes, one subscribes. Commands on one
 * connection run in order, so a gateway's events reach the others in the order it sent them.
 * Payloads of any size travel inline. ioredis reconnects and subscribes again by itself; events
 * published while a connection is down are missed.
 */
export class RedisTransport implements BusTransport {
  private readonly pub: Redis;
  private readonly sub: Redis;
  private lastErrorAt = 0;
  /** The subscriber's SUBSCRIBE was answered on its current connection. */
  private subscribed = false;

  constructor(private readonly opts: RedisTransportOptions) {
    // A publish waits for Redis at most COMMAND_TIMEOUT_MS: a Redis that accepts and hangs cannot hold up a send or the stop.
    const common = { lazyConnect: true, maxRetriesPerRequest: 3, connectTimeout: START_TIMEOUT_MS, commandTimeout: COMMAND_TIMEOUT_MS };
    // Named after the channel, so an operator can tell which deployment a connection serves.
    this.pub = new Redis(opts.url, { ...common, connectionName: `hatchery-events-pub:${opts.channel}` });
    this.sub = new Redis(opts.url, { ...common, connectionName: `hatchery-events-sub:${opts.channel}` });
    for (const conn of [this.pub, this.sub]) conn.on('error', (err) => this.report(err));
    this.sub.on('close', () => (this.subscribed = false));
  }

  /** Both connections are up and the channel is subscribed; false while ioredis reconnects. */
  get connected(): boolean {
    return this.subscribed && this.sub.status === 'ready' && this.pub.status === 'ready';
  }

  async start(origin: string, receive: (origin: string, events: unknown[]) => void, resumed: () => void): Promise<void> {
    this.sub.on('message', (channel: string, message: string) => {
      if (channel !== this.opts.channel) return;
      try {
        const frame: unknown = JSON.parse(message);
        if (!isFrame(frame) || !frame.e) throw new Error('event bus: malformed message');
        if (frame.o !== origin) receive(frame.o, frame.e);
      } catch (err) {
        this.opts.onError(err);
      }
    });
    try {
      await within(Promise.all([this.pub.connect(), this.sub.connect().then(() => this.sub.subscribe(this.opts.channel))]), START_TIMEOUT_MS, () => {
        throw new Error(`event bus: Redis did not answer within ${START_TIMEOUT_MS} ms`);
      });
    } catch (err) {
      this.pub.disconnect();
      this.sub.disconnect();
      throw err;
    }
    this.subscribed = true;
    // ioredis subscribes again by itself on reconnecting; once this (idempotent) SUBSCRIBE is
    // answered, that one is too.
    this.sub.on('ready', () => {
      this.sub.subscribe(this.opts.channel).then(
        () => {
          if (this.sub.status === 'ready') this.subscribed = true;
          resumed();
        },
        (err) => this.report(err),
      );
    });
  }

  async send(origin: string, events: string[]): Promise<void> {
    const frames = packEvents(events, FRAME_MAX_BYTES).map((run) => `{"o":${JSON.stringify(origin)},"e":[${run.join(',')}]}`);
    // Written to one connection in this order; Redis runs them in this order.
    await Promise.all(frames.map((f) => this.pub.publish(this.opts.channel, f)));
  }

  async close(): Promise<void> {
    this.subscribed = false;
    await Promise.allSettled([this.sub.quit(), this.pub.quit()]);
    this.sub.disconnect();
    this.pub.disconnect();
  }

  /** A Redis that is down errors on every retry; once a few seconds is enough to tell. */
  private report(err: unknown): void {
    const now = Date.now();
    if (now - this.lastErrorAt < 5000) return;
    this.lastErrorAt = now;
    this.opts.onError(err);
  }
}
