import type { Socket } from 'node:net';
import { Client, ClientConfig } from 'pg';

export interface GuardedClientConfig extends ClientConfig {
  /**
   * A statement with no answer after this long (ms) is given up: the connection is closed, the
   * statement fails with ETIMEDOUT (503 to the client) and the pool drops the connection. For a
   * database that stops answering without closing the connection (a hung server, a network that
   * drops packets), where the server's own statement_timeout cannot fire. 0: never.
   */
  replyTimeoutMs?: number;
}

/**
 * A pg Client that never ends the process with an unheard 'error', and never waits forever for an
 * answer (see `replyTimeoutMs`).
 *
 * pg-pool takes its own error listener off a client while it is checked out, and callers (TypeORM's
 * query runner, pg-boss) attach theirs only once the checkout promise has resolved: a microtask
 * later. When the server shuts down just as a new connection is made, its ReadyForQuery and the
 * FATAL "terminating connection" arrive in one TCP read and are parsed in one go, so the client
 * emits 'error' in between, with no listener, and EventEmitter throws it as an uncaught exception.
 * With this listener always there, the client is only marked broken: the next statement on it
 * fails with the connection error, which its caller handles (503 while the database is away).
 *
 * pg's own `query_timeout` is not used for the second part: it fails the statement but keeps the
 * connection, whose next statement then waits behind the unanswered one.
 */
/**
 * A statement whose text starts with this comment runs as a named prepared statement: parsed and
 * planned once per connection, then only bound and executed. For the few statements every
 * request runs (see `prepared`); the comment stays in the text, so logs show which ones.
 */
export const PREPARED = '/* prepared */ ';

/** `sql` marked to run as a prepared statement (its text must not vary with the request's values). */
export const prepared = (sql: string): string => PREPARED + sql;

/** Statement names by text: a handful of texts, each named once. */
const names = new Map<string, string>();
/** The name a `prepared` statement runs under (the same on every connection). */
export const nameOf = (text: string): string => {
  let name = names.get(text);
  if (!name) names.set(text, (name = `hatchery_${names.size + 1}`));
  return name;
};

export class GuardedClient extends Client {
  private readonly replyTimeoutMs: number;

  constructor(config?: string | GuardedClientConfig) {
    super(config);
    this.replyTimeoutMs = typeof config === 'object' ? (config.replyTimeoutMs ?? 0) : 0;
    this.on('error', ignoreStrayError);
  }

  // Every overload of Client.query goes through here; only the promise form is timed (TypeORM's).
  override query(...args: unknown[]): never {
    if (typeof args[0] === 'string' && args[0].startsWith(PREPARED)) {
      const [text, values, ...rest] = args as [string, unknown[] | undefined, ...unknown[]];
      args = [{ name: nameOf(text), text, values }, ...rest];
    }
    const result = (Client.prototype.query as (...a: unknown[]) => unknown).apply(this, args);
    if (this.replyTimeoutMs > 0 && result instanceof Promise) {
      const timer = setTimeout(() => this.giveUp(), this.replyTimeoutMs).unref(); // the statement, not this timer, keeps the process busy
      const done = () => clearTimeout(timer);
      result.then(done, done);
    }
    return result as never;
  }

  private giveUp(): void {
    destroyConnection(
      this,
      Object.assign(new Error(`PostgreSQL did not answer within ${this.replyTimeoutMs} ms; the connection was closed`), { code: 'ETIMEDOUT' }),
    );
  }
}

/**
 * Closes the client's socket at once: its statements fail (with `err`, if given) and it emits
 * 'error'/'end'. For a server that does not answer, where `client.end()` would wait for it too.
 */
export function destroyConnection(client: Client, err?: Error): void {
  (client as unknown as { connection: { stream: Socket } }).connection.stream.destroy(err);
}

function ignoreStrayError(): void {
  // Nothing to do: the error also reaches whoever uses the client next, or the pool drops it.
}
