import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { ExecutionResult } from 'graphql';
import { WebSocket, type WebSocketServer } from 'ws';

/**
 * `bytes` in a store of its own. A small Buffer is a slice of Node's shared 8 KB pool, and one kept
 * for a subscription's lifetime keeps its whole slab: 2,000 idle subscribers each pinned about
 * 3.7 KB that way (the benchmark's idle phase, 2026-11-27).
 */
export function ownBuffer(bytes: Buffer): Buffer {
  if (bytes.byteLength === bytes.buffer.byteLength) return bytes;
  const own = Buffer.allocUnsafeSlow(bytes.byteLength);
  bytes.copy(own);
  return own;
}

/**
 * Each connection's messages reach their listeners in a store of their own (see `ownBuffer`).
 * graphql-ws awaits a subscription inside the handler of the message that started it, so it keeps
 * that message's Buffer for the subscription's lifetime: a slice of `ws`'s read (or of the pool),
 * which kept kilobytes per idle subscriber.
 */
export function ownMessageBuffers(wss: WebSocketServer): void {
  wss.on('connection', (socket) => {
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event === 'message' && Buffer.isBuffer(args[0])) args[0] = ownBuffer(args[0]);
      return emit(event, ...args);
    }) as typeof socket.emit;
  });
}

/** A WebSocket frame header: FIN and the text opcode, then the payload length (server frames are not masked). */
function frameHeader(length: number, extra: number): { frame: Buffer; at: number } {
  const lengthBytes = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const frame = Buffer.allocUnsafe(2 + lengthBytes + extra);
  frame[0] = 0x81;
  if (lengthBytes === 0) frame[1] = length;
  else if (lengthBytes === 2) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  return { frame, at: 2 + lengthBytes };
}

/** How many bytes may wait unsent on a socket before its results stop being written directly. */
export const DIRECT_MAX_BUFFERED = 1 << 20;

/**
 * graphql-ws writes every `next` message with its own JSON.stringify, so a result shared by 2,000
 * subscribers (see src/graphql/shared-execution.ts) would be serialized 2,000 times: with busy
 * logs that was the gateway's largest cost. Here a result is serialized once, into one buffer, and
 * each subscriber's message is a frame of its own: a few bytes naming the subscription, then that
 * same buffer. (Each subscriber's own copy of the text, 2,000 of them per flush of a busy log, was
 * what the garbage collector spent half the process's time moving while sockets drained.)
 *
 * How: `onNext` hands graphql-ws a small stand-in payload and leaves the result's bytes with the
 * socket, under the subscription's id; the socket's `send` swaps the stand-in for them. graphql-ws
 * sends right after `onNext` returns, and one subscription's messages go out one at a time, so
 * the slot is always the one just filled. The stand-in's key is random per process: no client
 * payload can look like it. The frame goes to the TCP socket the upgrade came on, as `ws` itself
 * writes one (header and payload, in order with its other frames: it queues none without
 * compression, which is then off); with an extension negotiated, or the socket closing, `ws`
 * sends the message.
 */
export function sharedPayloads(wss: WebSocketServer) {
  const key = `hatcheryShared${randomBytes(8).toString('hex')}`;
  const standIn: Record<string, number> = Object.freeze({ [key]: 1 });
  const prefix = '{"id":';
  const suffix = `,"type":"next","payload":{"${key}":1}}`;
  /** A result's JSON and the message's closing brace, computed for its first subscriber. */
  const serialized = new WeakMap<object, Buffer>();
  /** Per socket, per subscription id (as JSON): the payload bytes of the message being sent. */
  const slots = new WeakMap<WebSocket, Map<string, Buffer>>();
  /** The TCP socket under each WebSocket. */
  const tcps = new WeakMap<WebSocket, Duplex>();
  /** The result serialized last: the next subscriber of a busy log most likely gets the same one. */
  let last: { result: ExecutionResult; body: Buffer } | null = null;
  const bodyOf = (result: ExecutionResult): Buffer => {
    if (last !== null && last.result === result) return last.body;
    let body = serialized.get(result);
    if (body === undefined) {
      body = Buffer.from(`${JSON.stringify(result)}}`);
      serialized.set(result, body);
    }
    last = { result, body };
    return body;
  };
  /** The frame of one message: its header and the bytes naming the subscription, then `body`, in one corked write. */
  const writeFrame = (tcp: Duplex, head: string | Buffer, body: Buffer, cb?: (err?: Error | null) => void) => {
    const headBytes = typeof head === 'string' ? Buffer.byteLength(head) : head.length;
    const { frame, at } = frameHeader(headBytes + body.length, headBytes);
    if (typeof head === 'string') frame.write(head, at);
    else head.copy(frame, at);
    tcp.cork();
    tcp.write(frame);
    tcp.write(body, cb);
    tcp.uncork();
  };

  wss.on('connection', (socket, request) => {
    const tcp: Duplex = request.socket;
    tcps.set(socket, tcp);
    const send = socket.send.bind(socket) as (data: unknown, ...rest: unknown[]) => void;
    socket.send = ((data: unknown, ...rest: unknown[]) => {
      if (typeof data === 'string' && data.endsWith(suffix) && data.startsWith(prefix)) {
        const id = data.slice(prefix.length, data.length - suffix.length);
        const pending = slots.get(socket);
        const body = pending?.get(id);
        if (body === undefined) throw new Error(`ws payloads: no payload waiting for subscription ${id}`);
        pending!.delete(id);
        const head = `${prefix}${id},"type":"next","payload":`;
        const cb = rest.find((r): r is (err?: Error | null) => void => typeof r === 'function');
        if (socket.readyState !== WebSocket.OPEN || socket.extensions !== '' || tcp.destroyed) {
          return send(Buffer.concat([Buffer.from(head), body]), { binary: false }, cb);
        }
        writeFrame(tcp, head, body, cb);
        return;
      }
      return send(data, ...rest);
    }) as typeof socket.send;
  });

  return {
    /** For graphql-ws `onNext`, with a result that has no errors to format: what to send instead. */
    next(socket: WebSocket, id: string, result: ExecutionResult): Record<string, number> {
      const body = bodyOf(result);
      let pending = slots.get(socket);
      if (!pending) slots.set(socket, (pending = new Map<string, Buffer>()));
      pending.set(JSON.stringify(id), body);
      return standIn;
    },
    /**
     * A writer of subscription `id`'s `next` messages straight to the socket, for results
     * delivered without graphql-ws's loop (see `DIRECT` in src/bus/pubsub.ts): the message
     * graphql-ws would send, written now. It declines (false) when the socket is not open, `ws`
     * must frame the message itself (an extension), `stillOpen` says the subscription has ended,
     * or more than `maxBuffered` bytes already wait to be sent: a subscriber that lags then goes
     * the usual way, where its stream's bounded queue applies.
     */
    writer(socket: WebSocket, id: string, stillOpen: () => boolean, maxBuffered = DIRECT_MAX_BUFFERED): (result: ExecutionResult) => boolean {
      const head = ownBuffer(Buffer.from(`${prefix}${JSON.stringify(id)},"type":"next","payload":`));
      const tcp = tcps.get(socket);
      return (result) => {
        if (!tcp || socket.readyState !== WebSocket.OPEN || socket.extensions !== '' || tcp.destroyed || tcp.writableLength > maxBuffered || !stillOpen()) {
          return false;
        }
        writeFrame(tcp, head, bodyOf(result));
        return true;
      };
    },
  };
}
