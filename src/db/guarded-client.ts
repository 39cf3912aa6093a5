import { Client, ClientConfig } from 'pg';

/**
 * A pg Client that never ends the process with an unheard 'error'.
 *
 * pg-pool takes its own error listener off a client while it is checked out, and callers (TypeORM's
 * query runner, pg-boss) attach theirs only once the checkout promise has resolved: a microtask
 * later. When the server shuts down just as a new connection is made, its ReadyForQuery and the
 * FATAL "terminating connection" arrive in one TCP read and are parsed in one go, so the client
 * emits 'error' in between, with no listener, and EventEmitter throws it as an uncaught exception.
 * With this listener always there, the client is only marked broken: the next statement on it
 * fails with the connection error, which its caller handles (503 while the database is away).
 */
export class GuardedClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    this.on('error', ignoreStrayError);
  }
}

function ignoreStrayError(): void {
  // Nothing to do: the error also reaches whoever uses the client next, or the pool drops it.
}
