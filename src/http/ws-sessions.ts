import type { WebSocket } from 'ws';
import { Clock } from '../clock';
import type { AccessEvent } from '../modules/accounts/access.topics';

/** How often connections are checked against their tokens' expiry. */
const SWEEP_MS = 250;

/** graphql-ws close code for a token that no longer works (the contract's 4401). */
export const CLOSE_UNAUTHORIZED = 4401;

/**
 * This gateway's graphql-ws connections by the token each authenticated with. A connection
 * whose token is revoked (on any gateway: the event travels on the bus) or expires is closed
 * with 4401, which ends all its subscriptions; after the bus was cut off, every connection's
 * token is checked again in storage.
 */
export class WsSessions {
  private readonly byToken = new Map<string, Set<WebSocket>>();
  private readonly expiries = new Map<WebSocket, { tokenId: string; at: number | null }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly deps: {
      clock: Clock;
      /** The event bus (src/bus) the ACCESS topic arrives on. */
      events: EventTarget;
      /** Which of these token ids still work. */
      liveTokens(ids: string[]): Promise<Set<string>>;
      onError: (err: unknown) => void;
    },
  ) {
    deps.events.addEventListener('ACCESS', this.onAccess);
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS).unref();
  }

  /** The connection authenticated (again) with this token, which works until `expiresAt`. */
  track(socket: WebSocket, tokenId: string, expiresAt: Date | null): void {
    const previous = this.expiries.get(socket);
    if (previous && previous.tokenId !== tokenId) this.untrack(socket);
    let sockets = this.byToken.get(tokenId);
    if (!sockets) this.byToken.set(tokenId, (sockets = new Set()));
    if (!sockets.has(socket)) {
      sockets.add(socket);
      socket.once('close', () => this.untrack(socket));
    }
    this.expiries.set(socket, { tokenId, at: expiresAt ? expiresAt.getTime() : null });
  }

  private untrack(socket: WebSocket): void {
    const entry = this.expiries.get(socket);
    if (!entry) return;
    this.expiries.delete(socket);
    const sockets = this.byToken.get(entry.tokenId);
    sockets?.delete(socket);
    if (sockets?.size === 0) this.byToken.delete(entry.tokenId);
  }

  private readonly onAccess = (e: Event): void => {
    const event = (e as CustomEvent<AccessEvent>).detail;
    if (event.kind === 'token-revoked') this.closeToken(event.tokenId, 'Token revoked');
    else if (event.kind === 'resync') void this.recheck().catch(this.deps.onError);
  };

  private closeToken(tokenId: string, reason: string): void {
    for (const socket of [...(this.byToken.get(tokenId) ?? [])]) {
      this.untrack(socket);
      socket.close(CLOSE_UNAUTHORIZED, reason);
    }
  }

  private sweep(): void {
    const now = this.deps.clock.now().getTime();
    for (const [socket, { at }] of [...this.expiries]) {
      if (at !== null && at <= now) {
        this.untrack(socket);
        socket.close(CLOSE_UNAUTHORIZED, 'Token expired');
      }
    }
  }

  /** Revocations sent while the bus was down never arrive: storage says which tokens still work. */
  private async recheck(): Promise<void> {
    const ids = [...this.byToken.keys()];
    const live = await this.deps.liveTokens(ids);
    for (const id of ids) if (!live.has(id)) this.closeToken(id, 'Token revoked');
  }

  close(): void {
    clearInterval(this.sweeper);
    this.deps.events.removeEventListener('ACCESS', this.onAccess);
  }
}
