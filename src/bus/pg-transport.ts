import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { destroyConnection, GuardedClient } from '../db/guarded-client';
import { BusTransport, Frame, isFrame, packEvents } from './event-bus';
import { within } from '../timeout';

/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; frames stay below this. */
export const NOTIFY_MAX_BYTES = 7900;
/** Room for a frame's envelope (`{"o":…,"n":…,"e":[]}`) around its events. */
const FRAME_ENVELOPE_BYTES = 120;
/** Stored payloads outlive any receiver's load by far; then they go. */
const PAYLOAD_RETENTION_S = 300;
const PRUNE_EVERY_MS = 60_000;
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5000;

export interface PgTransportOptions {
  /** The DataSource's server, for the dedicated LISTEN connection. */
  url: string;
  channel: string;
  onError: (err: unknown) => void;
  /**
   * Opening the LISTEN connection and its LISTEN statement; then the backoff tries again. The
   * connection is also checked every twice this long (`SELECT 1`), and replaced when the check
   * gets no answer within it: a connection that only listens would not notice a server or
   * network that went silent, and the gateway would stop getting the others' events unawares.
   */
  connectTimeoutMs?: number;
}

/** Not JSON, so no notification can be it. */
const RESUMED = '\u0000resumed';

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Events over PostgreSQL LISTEN/NOTIFY: one dedicated connection per gateway listens on the
 * channel; sends go through the DataSource's pool, all of one send in one statement, so their
 * notifications are delivered in order. An event too large for a notification is stored in
 * `event_payloads` by that same statement, and its frame carries the row's id instead.
 */
export class PgTransport implements BusTransport {
  private client: Client | null = null;
  private origin = '';
  private receive: (origin: string, events: unknown[]) => void = () => undefined;
  private resumed: () => void = () => undefined;
  /** Connections that failed before they were taken into use. */
  private readonly failed = new WeakSet<Client>();
  /** Notifications received and not yet handed on: kept in order while a stored payload loads. */
  private readonly inbox: string[] = [];
  private draining: Promise<void> = Promise.resolve();
  private busy = false;
  private frames = 0;
  private closed = false;
  private pruneTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private reconnectMs = RECONNECT_MIN_MS;

  constructor(
    private readonly ds: DataSource,
    private readonly opts: PgTransportOptions,
  ) {}

  /** The LISTEN connection is there and listening; false from its loss until a new one listens. */
  get connected(): boolean {
    return this.client !== null;
  }

  async start(origin: string, receive: (origin: string, events: unknown[]) => void, resumed: () => void): Promise<void> {
    this.origin = origin;
    this.receive = receive;
    this.resumed = resumed;
    this.closed = false;
    this.client = await this.listen();
    this.pruneTimer = setInterval(() => void this.prune().catch(this.opts.onError), PRUNE_EVERY_MS);
    this.pruneTimer.unref();
    this.heartbeatTimer = setInterval(() => this.heartbeat(), 2 * this.timeoutMs);
    this.heartbeatTimer.unref();
  }

  private get timeoutMs(): number {
    return this.opts.connectTimeoutMs ?? 5000;
  }

  /** Checks the LISTEN connection answers: GuardedClient closes one that does not, and `lost` replaces it. */
  private heartbeat(): void {
    if (this.client && !this.closed) this.client.query('SELECT 1').catch(() => undefined);
  }

  async send(origin: string, events: string[]): Promise<void> {
    const notes: string[] = [];
    const storedIds: string[] = [];
    const stored: string[] = [];
    const maxBytes = NOTIFY_MAX_BYTES - FRAME_ENVELOPE_BYTES;
    for (const run of packEvents(events, maxBytes)) {
      const n = this.frames++;
      if (run.length === 1 && Buffer.byteLength(run[0]) + 1 > maxBytes) {
        // Beyond a notification: stored, and its frame carries the row's id.
        const id = randomUUID();
        storedIds.push(id);
        stored.push(`[${run[0]}]`);
        notes.push(`{"o":${JSON.stringify(origin)},"n":${n},"r":"${id}"}`);
      } else {
        notes.push(`{"o":${JSON.stringify(origin)},"n":${n},"e":[${run.join(',')}]}`);
      }
    }
    // Unique frame numbers also keep PostgreSQL from folding equal notifications of one transaction.
    if (stored.length === 0) {
      await this.ds.query('SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n', [this.opts.channel, notes]);
    } else {
      await this.ds.query(
        `WITH stored AS (INSERT INTO event_payloads (id, payload) SELECT * FROM unnest($2::uuid[], $3::jsonb[]))
         SELECT pg_notify($1, n) FROM unnest($4::text[]) AS n`,
        [this.opts.channel, storedIds, stored, notes],
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.pruneTimer = this.heartbeatTimer = this.reconnectTimer = null;
    const client = this.client;
    this.client = null;
    if (client) {
      // A silent server never answers the goodbye: after the timeout the socket is just closed.
      await within(
        client.end().catch(() => undefined),
        this.timeoutMs,
        () => undefined,
      );
      destroyConnection(client);
    }
    await this.draining;
  }

  private async listen(): Promise<Client> {
    const client: Client = new GuardedClient({
      connectionString: this.opts.url,
      keepAlive: true,
      application_name: 'hatchery-events',
      connectionTimeoutMillis: this.timeoutMs,
      replyTimeoutMs: this.timeoutMs,
    });
    client.on('notification', (n) => {
      if (!this.closed && n.channel === this.opts.channel && n.payload) this.take(n.payload);
    });
    client.on('error', (err) => {
      this.failed.add(client);
      this.lost(client, err);
    });
    client.on('end', () => {
      this.failed.add(client);
      this.lost(client, null);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.opts.channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    return client;
  }

  /** The LISTEN connection went away: get another, backing off while the server is unreachable. */
  private lost(client: Client, err: unknown): void {
    if (client !== this.client || this.closed) return;
    this.client = null;
    client.end().catch(() => undefined);
    // Events sent until it listens again do not reach this gateway as events; log streams fill
    // such gaps from storage (DeploymentsService.watchLogs).
    this.opts.onError(err ?? new Error('event bus: the LISTEN connection closed; reconnecting'));
    const retry = () => {
      this.reconnectTimer = null;
      if (this.closed) return;
      this.listen().then(
        (c) => {
          if (this.closed) return void c.end().catch(() => undefined);
          this.client = c;
          if (this.failed.has(c)) return this.lost(c, null);
          this.reconnectMs = RECONNECT_MIN_MS;
          // Behind anything received on the connection that was lost.
          this.take(RESUMED);
        },
        () => {
          this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS);
          this.reconnectTimer = setTimeout(retry, this.reconnectMs);
          this.reconnectTimer.unref();
        },
      );
    };
    this.reconnectTimer = setTimeout(retry, this.reconnectMs);
    this.reconnectTimer.unref();
  }

  private take(payload: string): void {
    this.inbox.push(payload);
    if (!this.busy) this.draining = this.drain();
  }

  /** Hands frames on in arrival order; synchronous unless a frame's events must be loaded. */
  private async drain(): Promise<void> {
    this.busy = true;
    try {
      for (let raw = this.inbox.shift(); raw !== undefined; raw = this.inbox.shift()) {
        try {
          if (raw === RESUMED) {
            this.resumed();
            continue;
          }
          const frame: unknown = JSON.parse(raw);
          if (!isFrame(frame)) throw new Error('event bus: malformed notification');
          if (frame.o === this.origin) continue;
          const events = frame.e ?? (await this.load(frame as Frame & { r: string }));
          this.receive(frame.o, events);
        } catch (err) {
          this.opts.onError(err);
        }
      }
    } finally {
      this.busy = false;
    }
  }

  private async load(frame: Frame & { r: string }): Promise<unknown[]> {
    const [row] = await this.ds.query<Array<{ payload: unknown[] }>>('SELECT payload FROM event_payloads WHERE id = $1', [frame.r]);
    if (!row) throw new Error(`event bus: stored payload ${frame.r} is gone`);
    return row.payload;
  }

  private async prune(): Promise<void> {
    await this.ds.query(`DELETE FROM event_payloads WHERE created_at < now() - make_interval(secs => $1)`, [PAYLOAD_RETENTION_S]);
  }
}
