import { setMaxListeners } from 'node:events';
import { createPubSub as createYogaPubSub, type PubSub as YogaPubSub } from '@graphql-yoga/subscription';
import { LimitExceeded } from '../errors';

/** Topics by routing key: `[id, event]` for per-id topics, `[event]` for one stream. */
export type TopicMap = { [key: string]: [] | [unknown] | [number | string, unknown] };

/** The event a topic carries. */
type EventOf<T extends TopicMap, K extends keyof T> = T[K] extends [number | string, infer E] ? E : T[K] extends [infer E] ? E : never;

/** The yoga pubsub (type-graphql's), plus the EventTarget it runs on, for `listenNow`. */
export type PubSub<T extends TopicMap> = YogaPubSub<T> & {
  readonly target: EventTarget;
  /** How far one subscriber may fall behind before its stream ends. */
  readonly maxPending: number;
  /** Never set: lets `listenNow` infer the topic map. */
  readonly topics?: T;
};

/** In-process unless `target` is a shared bus (an `EventBus` connected to other gateways, see event-bus.ts). */
export function createPubSub<T extends TopicMap>(target: EventTarget = new EventTarget(), maxPending = 10_000): PubSub<T> {
  // Many subscribers on one deployment are normal, not a leak.
  setMaxListeners(0, target);
  return Object.assign(createYogaPubSub<T>({ eventTarget: target }), { target, maxPending });
}

/**
 * A stream that can hand its values straight to its consumer, skipping the promise and the
 * consumer's loop per value: the consumer gives it a sink (`stream[DIRECT](sink)`), and while the
 * consumer waits for the next value, the stream may call the sink with it at once, from within the
 * publisher's dispatch, instead of settling that wait. The sink answers whether it took the value;
 * a value it declines goes the usual way, as the next one the consumer's wait settles with. So
 * values keep their order, and nothing is handed over while the consumer handles an earlier one.
 * 2,000 subscribers following one busy log then cost a function call each per batch of lines, not
 * a chain of promises and iterators each (see src/graphql/shared-execution.ts, src/http/ws-payloads.ts).
 */
export const DIRECT = Symbol('direct delivery');
export type DirectSink<T> = (value: T) => boolean;
export interface DirectDelivery<T> {
  [DIRECT](sink: DirectSink<T>): void;
}
export const deliversDirectly = <T>(stream: unknown): stream is DirectDelivery<T> =>
  typeof stream === 'object' && stream !== null && typeof (stream as Partial<DirectDelivery<T>>)[DIRECT] === 'function';

/**
 * Subscribes now, not at the first `next()` (a replay-then-live stream must be listening before
 * it reads storage), with a bounded queue of its own: a subscriber that stops reading ends its
 * own stream with LIMIT_EXCEEDED instead of growing memory or failing the publisher.
 */
export function listenNow<T extends TopicMap, K extends keyof T & string>(
  pubsub: PubSub<T>,
  topic: K,
  id: T[K][0],
  maxPending = pubsub.maxPending,
  /** How much of `maxPending` one event takes (a batch of log lines: each line). */
  weigh: (event: EventOf<T, K>) => number = () => 1,
  /** Events this stream never reads: dropped as they arrive, neither queued nor waking a wait. */
  skip: (event: EventOf<T, K>) => boolean = () => false,
): AsyncIterator<EventOf<T, K>, undefined> & {
  close(): Promise<void>;
  push(event: EventOf<T, K>): void;
  onClose(cleanup: () => void): void;
  /**
   * Offered each event that arrives while a `next()` waits, before the wait settles with it: true
   * when it handled the event (the wait goes on), false to let the wait have it. Never offered an
   * event while one is queued, so events are handled in order.
   */
  intercept: ((event: EventOf<T, K>) => boolean) | null;
} {
  type Payload = EventOf<T, K>;
  const name = `${String(topic)}:${String(id)}`;
  const queue: Payload[] = [];
  let pending = 0;
  let waiting: ((r: IteratorResult<Payload>) => void) | null = null;
  let closed = false;
  let overflowed = false;
  const overflow = () => new LimitExceeded('subscription', `the subscriber fell more than ${maxPending} events behind; subscribe again from its last line`);
  /** The intercept's answer; one that throws did not take the event (it must not reach the publisher's dispatch). */
  const offer = (detail: Payload): boolean => {
    try {
      return iterator.intercept!(detail);
    } catch {
      return false;
    }
  };
  const listener = (e: Event) => {
    if (closed || overflowed) return;
    const detail = (e as CustomEvent<Payload>).detail;
    if (skip(detail)) return;
    if (waiting) {
      if (iterator.intercept !== null && offer(detail)) return;
      const resolve = waiting;
      waiting = null;
      resolve({ value: detail, done: false });
    } else if (pending + weigh(detail) > maxPending) {
      overflowed = true;
      queue.length = 0;
      pending = 0;
      pubsub.target.removeEventListener(name, listener);
    } else {
      queue.push(detail);
      pending += weigh(detail);
    }
  };
  pubsub.target.addEventListener(name, listener);
  const cleanups: Array<() => void> = [];
  const close = (): Promise<void> => {
    if (closed) return Promise.resolve();
    closed = true;
    pubsub.target.removeEventListener(name, listener);
    for (const cleanup of cleanups) cleanup();
    queue.length = 0;
    pending = 0;
    waiting?.({ value: undefined, done: true });
    waiting = null;
    return Promise.resolve();
  };
  const iterator = {
    intercept: null as ((event: Payload) => boolean) | null,
    next(): Promise<IteratorResult<Payload, undefined>> {
      if (queue.length) {
        const value = queue.shift()!;
        pending -= weigh(value);
        return Promise.resolve({ value, done: false });
      }
      if (overflowed) return Promise.reject(overflow());
      if (closed) return Promise.resolve({ value: undefined, done: true });
      // A pending next() means an empty queue, so overflow cannot happen while one waits.
      return new Promise((resolve) => (waiting = resolve));
    },
    async return(): Promise<IteratorResult<Payload, undefined>> {
      await close();
      return { value: undefined, done: true };
    },
    close,
    /** Queues an event of this process's own (it never overflows the queue). */
    push(event: Payload) {
      if (closed || overflowed) return;
      if (waiting) {
        const resolve = waiting;
        waiting = null;
        resolve({ value: event, done: false });
      } else {
        queue.push(event);
        pending += weigh(event);
      }
    },
    /** Runs `cleanup` when the stream closes (a listener of another topic, say). */
    onClose(cleanup: () => void) {
      if (closed) cleanup();
      else cleanups.push(cleanup);
    },
  };
  return iterator;
}

/**
 * `stream`, an async generator reading `events`, ended at once when its consumer stops (a client
 * unsubscribes or disconnects). A generator queues return() behind its pending `events.next()`,
 * which would hold the subscription and its listener until the next event; closing `events`
 * first settles that wait.
 */
export function endWithConsumer<T>(stream: AsyncGenerator<T, void>, events: { close(): Promise<void> }): AsyncIterableIterator<T> {
  return {
    next: () => stream.next(),
    return: async () => {
      await events.close();
      return stream.return(undefined);
    },
    throw: async (err?: unknown) => {
      await events.close();
      return stream.throw(err);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
