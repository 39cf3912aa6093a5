import { newGatewayId } from '../ids';

/** What `TopicCodec.encode` returns for an event that stays in this process. */
export const LOCAL_ONLY: unique symbol = Symbol('local only');

/** How one routing key's payloads travel between gateways: to JSON-able data and back. */
export interface TopicCodec<T = unknown> {
  /** The event as JSON-able data for the other gateways, or LOCAL_ONLY to keep it here. */
  encode(value: T): unknown;
  decode(data: unknown): T;
  /**
   * What listeners get after the bus was cut off from the other gateways and is back: events
   * sent meanwhile never arrive, so they look at storage again. Without it they get nothing.
   */
  resync?: () => T;
}

/** Codecs by routing key (the part of an event name before `:`); others travel as plain JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each key has its own payload type; TopicCodec<unknown> would refuse them (encode takes T)
export type TopicCodecs = Record<string, TopicCodec<any>>;

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
  /**
   * Whether it receives the other gateways' events now: false while its connection is lost and
   * not yet back (or after close). Known locally, without asking the server.
   */
  readonly connected: boolean;
}

const plainJson: TopicCodec = { encode: (v) => v, decode: (d) => d };

/**
 * Turns an event from another gateway into the events this gateway's listeners get before it
 * (e.g. "lines 41..80 of deployment D are stored" into those lines, read once per gateway). Only
 * called when someone in this process listens to the event's name.
 */
export type Expander = (eventName: string, value: unknown) => Promise<unknown[]>;

/**
 * The EventTarget under the gateway's pubsub. Listeners in this process get an event at once,
 * synchronously, as with a plain EventTarget; once a transport is connected, the event is also
 * encoded and sent to the other gateways, whose listeners get it decoded. Events are sent in
 * the order they were dispatched, batched while a send is in flight.
 */
export class EventBus extends EventTarget {
  private transport: BusTransport | null = null;
  private outbox: string[] = [];
  private sending: Promise<void> | null = null;
  /** Event names someone in this process listens to, with how many listeners. */
  private readonly listened = new Map<string, number>();
  private readonly expanders = new Map<string, Expander>();
  /** Received events wait here, in order, while an earlier one is being expanded. */
  private inbound: Promise<void> = Promise.resolve();
  private inboundPending = 0;
  private readonly taps = new Map<string, Array<(eventName: string, value: unknown) => void>>();

  constructor(
    private readonly codecs: TopicCodecs,
    private readonly onError: (err: unknown) => void,
    /** This gateway (see newGatewayId): tells its own events apart when the transport echoes them back. */
    readonly origin = newGatewayId(),
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

  /** Whether events from the other gateways reach this one now (for /readyz). */
  get connected(): boolean {
    return this.transport?.connected ?? false;
  }

  /** Expands events of one routing key (the part of the name before `:`) from other gateways. */
  expandWith(key: string, expander: Expander): void {
    this.expanders.set(key, expander);
  }

  /**
   * Sees every event of one routing key as this gateway's listeners would (its own and, decoded,
   * the others'), without listening to it: nothing is expanded for a tap.
   */
  tap(key: string, fn: (eventName: string, value: unknown) => void): void {
    this.taps.set(key, [...(this.taps.get(key) ?? []), fn]);
  }

  private tapped(event: Event): void {
    const fns = this.taps.get(event.type.split(':', 1)[0]);
    if (!fns) return;
    for (const fn of fns) {
      try {
        fn(event.type, (event as CustomEvent).detail);
      } catch (err) {
        this.onError(err);
      }
    }
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
    this.tapped(event);
    if (this.transport) {
      try {
        const encoded = this.codec(event.type).encode((event as CustomEvent).detail);
        if (encoded === LOCAL_ONLY) return delivered;
        this.outbox.push(JSON.stringify([event.type, encoded]));
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
    await this.inbound;
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
    const decoded: Array<[string, unknown]> = [];
    for (const e of events) {
      try {
        if (!Array.isArray(e) || typeof e[0] !== 'string') throw new Error('event bus: malformed event');
        const [type, data] = e as [string, unknown];
        decoded.push([type, this.codec(type).decode(data)]);
      } catch (err) {
        this.onError(err);
      }
    }
    const expands = decoded.some(([type]) => this.expanderFor(type));
    // Synchronous unless something must be loaded first, or is still waiting behind such a load.
    if (!expands && this.inboundPending === 0) {
      for (const [type, value] of decoded) this.deliver(type, value);
      return;
    }
    this.inOrder(async () => {
      for (const [type, value] of decoded) {
        const expander = this.expanderFor(type);
        if (expander) {
          let before: unknown[];
          try {
            before = await expander(type, value);
          } catch (err) {
            // What it stood for is not here: listeners look at storage themselves.
            this.onError(err);
            const resync = this.codec(type).resync;
            if (resync) this.deliver(type, resync());
            continue;
          }
          for (const v of before) this.deliver(type, v);
        }
        this.deliver(type, value);
      }
    });
  }

  private resync(): void {
    const run = () => {
      for (const type of [...this.listened.keys()]) {
        const codec = this.codec(type);
        if (codec.resync) this.deliver(type, codec.resync());
      }
    };
    if (this.inboundPending === 0) run();
    else
      this.inOrder(() => {
        run();
        return Promise.resolve();
      });
  }

  private inOrder(step: () => Promise<void>): void {
    this.inboundPending++;
    this.inbound = this.inbound
      .then(step)
      .catch((err) => this.onError(err))
      .finally(() => this.inboundPending--);
  }

  private expanderFor(type: string): Expander | undefined {
    if (!this.listened.has(type)) return undefined;
    return this.expanders.get(type.split(':', 1)[0]);
  }

  private deliver(type: string, value: unknown): void {
    const event = new CustomEvent(type, { detail: value });
    try {
      super.dispatchEvent(event);
    } catch (err) {
      this.onError(err);
    }
    this.tapped(event);
  }

  private codec(eventName: string): TopicCodec {
    const key = eventName.split(':', 1)[0];
    return this.codecs[key] ?? plainJson;
  }
}

/**
 * Groups encoded events, in order, into runs of at most `maxBytes` (an event counted with its
 * separator), one frame each. An event larger than `maxBytes` is a run of its own.
 */
export function packEvents(events: string[], maxBytes: number): string[][] {
  const runs: string[][] = [];
  let run: string[] = [];
  let bytes = 0;
  for (const e of events) {
    const size = Buffer.byteLength(e) + 1;
    if (run.length > 0 && bytes + size > maxBytes) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(e);
    bytes += size;
  }
  if (run.length > 0) runs.push(run);
  return runs;
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
