import { randomBytes } from 'node:crypto';
import type { ExecutionResult } from 'graphql';
import type { WebSocket, WebSocketServer } from 'ws';

/**
 * graphql-ws writes every `next` message with its own JSON.stringify, so a result shared by 500
 * subscribers (see src/graphql/shared-execution.ts) would be serialized 500 times: with busy
 * logs that was the gateway's largest cost. Here a result is serialized once, and each
 * subscriber's message is the subscription's id around that text.
 *
 * How: `onNext` hands graphql-ws a small stand-in payload and leaves the result's JSON with the
 * socket, under the subscription's id; the socket's `send` swaps the stand-in for it. graphql-ws
 * sends right after `onNext` returns, and one subscription's messages go out one at a time, so
 * the slot is always the one just filled. The stand-in's key is random per process: no client
 * payload can look like it.
 */
export function sharedPayloads(wss: WebSocketServer) {
  const key = `hatcheryShared${randomBytes(8).toString('hex')}`;
  const standIn: Record<string, number> = Object.freeze({ [key]: 1 });
  const prefix = '{"id":';
  const suffix = `,"type":"next","payload":{"${key}":1}}`;
  /** A result's JSON, computed for its first subscriber. */
  const serialized = new WeakMap<object, string>();
  /** Per socket, per subscription id (as JSON): the payload text of the message being sent. */
  const slots = new WeakMap<WebSocket, Map<string, string>>();

  wss.on('connection', (socket) => {
    const send = socket.send.bind(socket) as (data: unknown, ...rest: unknown[]) => void;
    socket.send = ((data: unknown, ...rest: unknown[]) => {
      if (typeof data === 'string' && data.endsWith(suffix) && data.startsWith(prefix)) {
        const id = data.slice(prefix.length, data.length - suffix.length);
        const pending = slots.get(socket);
        const json = pending?.get(id);
        if (json === undefined) throw new Error(`ws payloads: no payload waiting for subscription ${id}`);
        pending!.delete(id);
        return send(`${prefix}${id},"type":"next","payload":${json}}`, ...rest);
      }
      return send(data, ...rest);
    }) as typeof socket.send;
  });

  return {
    /** For graphql-ws `onNext`, with a result that has no errors to format: what to send instead. */
    next(socket: WebSocket, id: string, result: ExecutionResult): Record<string, number> {
      let json = serialized.get(result);
      if (json === undefined) {
        json = JSON.stringify(result);
        serialized.set(result, json);
      }
      let pending = slots.get(socket);
      if (!pending) slots.set(socket, (pending = new Map<string, string>()));
      pending.set(JSON.stringify(id), json);
      return standIn;
    },
  };
}
