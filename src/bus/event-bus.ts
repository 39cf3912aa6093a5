import { randomBytes } from 'node:crypto';

/** How one routing key's payloads travel between gateways: to JSON-able data and back. */
export interface TopicCodec<T = unknown> {
  encode(value: T): unknown;
  decode(data: unknown): T;
  /**
   * What listeners get after the bus was cut off from the other gateways and is back: events
   * sent meanwhile never arrive, so they look at storage again. Without it they get nothing.
   */
  resync?(): T;
}

/** Codecs by routing key (the part of an event name before `:`); others travel as plain JSON. */
export type TopicCodecs = Record<string, TopicCodec<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Carries events between the gateways sharing a database. `send` takes events already encoded
 * (each the JSON text of `[eventName, data]`) and must keep their order; `receive` is called
 * with every other gateway's events in the order their sender sent them.
 */
export interface BusTransport {
  /** `resumed` is called each time it receives again after its connection was lost. */
  start(origin: string, receive: (origin: string, events: unknown[]) => void, resumed: () => void): Promise<void>;
  send(origin: string, events: string[]): Promise<void>;
  close(): Promise<void>;
}

const plainJson: TopicCodec = { encode: (v) => v, decode: (d) => d };

/**
 * The EventTarget under the gateway's pubsub. Listeners in this process get an event at once,
 * synchronously, as with a plain EventTarget; once a transport is connected, the event is also
 * encoded and sent to the other gateways, whose listeners get it decoded. Events are sent in
 * the order they were dispatched, batched while a send is in flight.
 */
export class EventBus extends EventTarget {
  /** Tells this gateway's own events apart when the transport echoes them back. */
  readonly origin = `gw_${randomBytes(9).toString('base64url')}`;
  private transport: BusTransport | null = null;
  private outbox: string[] = [];
  private sending: Promise<void> | null = null;
  /** Event names someone in this process listens to, with how many listeners. */
  private readonly listened = new Map<string, number>();

  constructor(
    private readonly codecs: TopicCodecs,
    private readonly onError: (err: unknown) => void,
  ) {
    super();
  }

  /** Starts sharing events through `transport`; resolves once this gateway receives theirs. */
  async connect(transport: BusTransport): Promise<void> {
    await transport.start(
      this.origin,
      (origin, events) => this.receive(origin, events),
      () => this.resync(),
    );
    this.transport = transport;
  }

  override addEventListener(...args: Parameters<EventTarget['addEventListener']>): void {
    super.addEventListener(...args);
    const [type, listener] = args;
    if (listener) this.listened.set(type, (this.listened.get(type) ?? 0) + 1);
  }

  override removeEventListener(...args: Parameters<EventTarget['removeEventListener']>): void {
    super.removeEventListener(...args);
    const [type, listener] = args;
    const n = (this.listened.get(type) ?? 0) - (listener ? 1 : 0);
    if (n > 0) this.listened.set(type, n);
    else this.listened.delete(type);
  }

  override dispatchEvent(event: Event): boolean {
    const delivered = super.dispatchEvent(event);
    if (this.transport) {
      try {
        this.outbox.push(JSON.stringify([event.type, this.codec(event.type).encode((event as CustomEvent).detail)]));
      } catch (err) {
        this.onError(err);
        return delivered;
      }
      this.sending ??= this.drain();
    }
    return delivered;
  }

  /** Sends what is queued, then stops sharing; local delivery goes on. */
  async close(): Promise<void> {
    await this.sending;
    const transport = this.transport;
    this.transport = null;
    await transport?.close();
  }

  private async drain(): Promise<void> {
    // Everything dispatched in the same tick (a flushed batch of log lines) goes in one send.
    await Promise.resolve();
    while (this.outbox.length > 0 && this.transport) {
      const batch = this.outbox;
      this.outbox = [];
      try {
        await this.transport.send(this.origin, batch);
      } catch (err) {
        this.onError(err);
      }
    }
    this.outbox = [];
    this.sending = null;
  }

  private receive(origin: string, events: unknown[]): void {
    if (origin === this.origin) return;
    for (const e of events) {
      try {
        if (!Array.isArray(e) || typeof e[0] !== 'string') throw new Error('event bus: malformed event');
        const [type, data] = e as [string, unknown];
        super.dispatchEvent(new CustomEvent(type, { detail: this.codec(type).decode(data) }));
      } catch (err) {
        this.onError(err);
      }
    }
  }

  private resync(): void {
    for (const type of [...this.listened.keys()]) {
      const codec = this.codec(type);
      if (codec.resync) super.dispatchEvent(new CustomEvent(type, { detail: codec.resync() }));
    }
  }

  private codec(eventName: string): TopicCodec {
    const key = eventName.split(':', 1)[0];
    return this.codecs[key] ?? plainJson;
  }
}

/** The frame one send puts on the wire: the sender, and its events or where they are stored. */
export interface Frame {
  o: string;
  e?: unknown[];
  r?: string;
}

export function isFrame(v: unknown): v is Frame {
  const f = v as Frame;
  return typeof f === 'object' && f !== null && typeof f.o === 'string' && (Array.isArray(f.e) || typeof f.r === 'string');
}
