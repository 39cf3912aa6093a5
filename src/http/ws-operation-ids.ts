import type { RawData, WebSocket, WebSocketServer } from 'ws';
import { wsText } from './ws-text';

/** What graphql-ws keeps of a connection that this needs: its running operations, by id. */
interface OperationsOf {
  subscriptions: Record<string, unknown>;
  extra: { socket: WebSocket };
}

interface Ending {
  done: Promise<void>;
  end(): void;
}

interface SocketGate {
  ctx: OperationsOf | null;
  /** Operations the client completed that have not ended yet, by id. */
  ending: Map<string, Ending>;
  /** Messages held behind a subscribe that waits, in order; null while none waits. */
  queue: Promise<void> | null;
  held: number;
}

/** How long a subscribe waits at most for the operation its id ended (graphql-ws calls neither hook on some paths). */
const ENDING_LIMIT_MS = 2000;

/**
 * graphql-ws 6 loses a subscription whose id the client completed and subscribed again at once:
 * the completed operation, still ending, deletes the id's entry (by then the new operation's) in
 * its `finally`, and even sends the client a `complete` for it. Here a `subscribe` for an id whose
 * operation the client has just completed waits, and every message after it on that socket with
 * it (in order), until that operation has ended: graphql-ws's `onComplete` or `onError` for it
 * (`ended`), then the end of its `finally`. Everything else is passed on at once, as it came.
 * Register before `useServer` (it wraps the socket's message listener), and `attach` each
 * connection's context in `onConnect`.
 */
export function operationIdGate(wss: WebSocketServer) {
  const gates = new WeakMap<object, SocketGate>();

  const endingOf = (gate: SocketGate, id: string): Ending => {
    let end = () => undefined as void;
    const done = new Promise<void>((resolve) => (end = resolve));
    const limit = setTimeout(() => ending.end(), ENDING_LIMIT_MS);
    limit.unref();
    const ending: Ending = {
      done,
      end: () => {
        clearTimeout(limit);
        if (gate.ending.get(id) === ending) gate.ending.delete(id);
        end();
      },
    };
    return ending;
  };

  /** Passes a message on, or returns what it waits for before it is passed on. */
  const handle = (gate: SocketGate, data: RawData, pass: () => void): Promise<void> | undefined => {
    // Read only what may matter: a complete, or a subscribe while an operation is ending.
    const text = gate.ctx ? wsText(data) : '';
    const message = text.includes('"complete"') || (gate.ending.size > 0 && text.includes('"subscribe"')) ? parsed(text) : null;
    if (message && gate.ctx) {
      const { type, id } = message;
      if (type === 'complete' && id in gate.ctx.subscriptions && !gate.ending.has(id)) gate.ending.set(id, endingOf(gate, id));
      const ending = type === 'subscribe' ? gate.ending.get(id) : undefined;
      if (ending) return ending.done.then(pass);
    }
    pass();
    return undefined;
  };

  wss.on('connection', (socket) => {
    const gate: SocketGate = { ctx: null, ending: new Map(), queue: null, held: 0 };
    gates.set(socket, gate);
    const on = socket.on.bind(socket);
    socket.on = ((event: string, listener: (...args: unknown[]) => void) => {
      if (event !== 'message') return on(event, listener);
      return on('message', (data: RawData, isBinary: boolean) => {
        const pass = () => void listener(data, isBinary);
        const release = () => {
          if (--gate.held === 0) gate.queue = null;
        };
        if (gate.queue) {
          gate.held++;
          gate.queue = gate.queue.then(() => handle(gate, data, pass)).then(release);
          return;
        }
        const waiting = handle(gate, data, pass);
        if (waiting) {
          gate.held = 1;
          gate.queue = waiting.then(release);
        }
      });
    }) as typeof socket.on;
  });

  return {
    /** The connection's graphql-ws context, from `onConnect`. */
    attach(ctx: OperationsOf): void {
      const gate = gates.get(ctx.extra.socket);
      if (gate) gate.ctx = ctx;
    },
    /**
     * graphql-ws's `onComplete` or `onError` for an operation: what waits for its id goes on once
     * its `finally` has run (after what is queued now: this hook's caller awaits it first).
     */
    ended(ctx: OperationsOf, id: string): void {
      const ending = gates.get(ctx.extra.socket)?.ending.get(id);
      if (ending) setImmediate(() => ending.end());
    },
  };
}

/** The type and id of a graphql-ws message, or null (graphql-ws itself answers anything it cannot read). */
function parsed(text: string): { type: string; id: string } | null {
  try {
    const message: unknown = JSON.parse(text);
    if (typeof message !== 'object' || message === null) return null;
    const { type, id } = message as { type?: unknown; id?: unknown };
    return typeof type === 'string' && typeof id === 'string' ? { type, id } : null;
  } catch {
    return null;
  }
}
