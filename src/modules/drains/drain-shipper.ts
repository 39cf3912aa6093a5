import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../../clock';
import { RowLease } from '../../db/lease';
import { InFlight } from '../../in-flight';
import { SecretBox } from '../../secrets';
import { AddressGuard } from '../webhooks/address-guard';
import { DrainLine, DrainSender, NdjsonSender, SenderOptions, SyslogSender } from './drain-senders';
import { LogDrainFormat, LogDrainStatus } from './log-drain.entity';
import { syslogTarget } from './drain-url';

export interface ShipperOptions extends SenderOptions {
  /** Lines per request (NDJSON) or per write (syslog). */
  batchLines: number;
  /** How often drains are claimed and looked at without being woken (the safety net). */
  pollMs: number;
  /** How long a claim on a drain lasts unless renewed (renewed every poll). */
  leaseMs: number;
  /** The first retry's delay, doubled each further failure up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Disable a drain after this many attempts in a row failed. */
  disableAfter: number;
  /** This gateway's identity (the lease holder). */
  gatewayId: string;
  onError: (err: unknown) => void;
}

interface DrainRow {
  id: string;
  app_id: string;
  slug: string;
  url: string;
  format: LogDrainFormat;
  secret_sealed: string | null;
  consecutive_failures: number;
  retry_at: Date | null;
}

interface LineRow {
  deployment_id: string;
  seq: number;
  timestamp: Date;
  type: string;
  message: string;
  stream: string | null;
}

const lease = new RowLease({ table: 'log_drains', until: 'lease_until', holder: 'lease_holder', scope: `status = '${LogDrainStatus.ACTIVE}'` });

/** The delay before attempt `failures + 1`: base × 2^(failures − 1), at most `max`. */
export function retryDelay(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
}

/**
 * Ships the log lines of the drains this gateway holds a lease on. Each drain has one worker
 * here: it reads the lines after the drain's cursors (per deployment), sends them in batches, and
 * moves the cursors once the receiver accepted a batch, so every line arrives at least once, in
 * order per deployment, across restarts and outages. Workers are woken by the log writer's
 * `stored` events (any gateway's), and every `pollMs` as a safety net.
 */
export class DrainShipper {
  private readonly workers = new Map<string, DrainWorker>();
  private readonly running = new InFlight();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private tickAgain = false;
  /** Until `start`: a gateway that does not ship (HATCHERY_LOG_DRAIN_WORKER=off) never claims a drain. */
  private stopped = true;

  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly guard: AddressGuard,
    readonly opts: ShipperOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), this.opts.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Claims and renews drains now (a drain was created, say), then lets every worker look for lines. */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = this.running.track(
      (async () => {
        do {
          this.tickAgain = false;
          await this.tick().catch(this.opts.onError);
        } while (this.tickAgain && !this.stopped);
      })().finally(() => (this.ticking = null)),
    );
  }

  /** Lines of an egg were stored (by any gateway; its APP_LOGS events): wakes its drains held here. */
  linesStored(appId: string): void {
    if (this.stopped || this.workers.size === 0) return;
    this.kickApp(appId);
  }

  /** Events from the other gateways may have been missed: every worker looks. */
  resync(): void {
    for (const w of this.workers.values()) w.kick();
  }

  private kickApp(appId: string): void {
    for (const w of this.workers.values()) if (w.appId === appId) w.kick();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    const held = await lease.claim<{ id: string }>(this.ds, {
      now,
      until: new Date(now.getTime() + this.opts.leaseMs),
      holder: this.opts.gatewayId,
    });
    const ids = new Set(held.map((r) => r.id));
    for (const [id, worker] of this.workers) {
      // Deleted, disabled, or claimed by another gateway after this one's lease lapsed.
      if (!ids.has(id)) {
        this.workers.delete(id);
        void this.running.track(worker.stop());
      }
    }
    const fresh = [...ids].filter((id) => !this.workers.has(id));
    if (fresh.length > 0) {
      const rows = await this.ds.query<DrainRow[]>(
        `SELECT d.id, d.app_id, a.slug, d.url, d.format, d.secret_sealed, d.consecutive_failures, d.retry_at
           FROM log_drains d JOIN apps a ON a.id = d.app_id WHERE d.id = ANY($1)`,
        [fresh],
      );
      for (const row of rows) if (!this.stopped) this.workers.set(row.id, new DrainWorker(this, row, this.sender(row)));
    }
    for (const w of this.workers.values()) w.kick();
  }

  private sender(row: DrainRow): DrainSender {
    if (row.format === LogDrainFormat.SYSLOG) return new SyslogSender(syslogTarget(row.url), row.slug, this.guard, this.opts);
    return new NdjsonSender(new URL(row.url), this.box.open(row.secret_sealed ?? ''), this.guard, this.opts);
  }

  /** Lets sends in progress finish, then lets go of this gateway's drains for the others. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const workers = [...this.workers.values()];
    this.workers.clear();
    await Promise.all(workers.map((w) => w.stop()));
    await this.running.settled();
    await lease.release(this.ds, { holder: this.opts.gatewayId }).catch(this.opts.onError);
  }

  /** The next batch: per deployment of the egg, the lines after the drain's cursor, in seq order. */
  async nextBatch(drainId: string, appId: string): Promise<DrainLine[]> {
    const rows = await this.ds.query<LineRow[]>(
      `SELECT l.deployment_id, l.seq, l.timestamp, l.type, l.message, l.stream
         FROM deployments d
         LEFT JOIN log_drain_cursors c ON c.drain_id = $1 AND c.deployment_id = d.id
         CROSS JOIN LATERAL (
           SELECT * FROM log_lines x WHERE x.deployment_id = d.id AND x.seq > COALESCE(c.acked_seq, 0) ORDER BY x.seq LIMIT $3
         ) l
        WHERE d.app_id = $2
        ORDER BY l.deployment_id, l.seq
        LIMIT $3`,
      [drainId, appId, this.opts.batchLines],
    );
    return rows.map((r) => ({ deploymentId: r.deployment_id, seq: r.seq, timestamp: r.timestamp, type: r.type, message: r.message, stream: r.stream }));
  }

  /** The receiver took the batch: the cursors move past it and the drain is healthy, in one statement. */
  async acknowledge(drainId: string, lines: DrainLine[]): Promise<void> {
    const last = new Map<string, number>();
    for (const l of lines) last.set(l.deploymentId, l.seq);
    await this.ds.query(
      `WITH acked AS (
         INSERT INTO log_drain_cursors (drain_id, deployment_id, acked_seq)
         SELECT $1, u.d, u.s FROM unnest($2::text[], $3::int[]) AS u(d, s)
          WHERE EXISTS (SELECT 1 FROM deployments WHERE id = u.d)
         ON CONFLICT (drain_id, deployment_id) DO UPDATE SET acked_seq = GREATEST(log_drain_cursors.acked_seq, EXCLUDED.acked_seq)
       )
       UPDATE log_drains SET consecutive_failures = 0, retry_at = NULL, last_error = NULL, last_delivered_at = $4 WHERE id = $1`,
      [drainId, [...last.keys()], [...last.values()], this.clock.now()],
    );
  }

  /**
   * An attempt failed: counts it, and either schedules the next one (returns its delay) or, past
   * the limit or on 410 Gone, disables the drain (returns null).
   */
  async failed(drainId: string, error: string, gone: boolean): Promise<number | null> {
    const now = this.clock.now();
    const [[row]] = await this.ds.query<[Array<{ consecutive_failures: number }>, number]>(
      `UPDATE log_drains SET consecutive_failures = consecutive_failures + 1, last_error = $2 WHERE id = $1 RETURNING consecutive_failures`,
      [drainId, error],
    );
    if (!row) return null;
    const failures = row.consecutive_failures;
    if (gone || failures >= this.opts.disableAfter) {
      const reason = gone ? 'the receiver answered 410 Gone' : `${failures} attempts in a row failed; the last: ${error}`;
      await this.ds.query(`UPDATE log_drains SET status = $2, disabled_reason = $3, retry_at = NULL, lease_holder = NULL, lease_until = NULL WHERE id = $1`, [
        drainId,
        LogDrainStatus.DISABLED,
        reason,
      ]);
      return null;
    }
    const delay = retryDelay(failures, this.opts.retryBaseMs, this.opts.retryMaxMs);
    await this.ds.query('UPDATE log_drains SET retry_at = $2 WHERE id = $1', [drainId, new Date(now.getTime() + delay)]);
    return delay;
  }

  now(): Date {
    return this.clock.now();
  }

  /** Holds a worker's run until it settles (see `settled`). */
  track<T>(task: Promise<T>): Promise<T> {
    return this.running.track(task);
  }

  /** Resolves once the claims and shipping under way now (and what they started) have settled. */
  async settled(): Promise<void> {
    await this.running.settled();
    // A claim starts workers' runs before it settles: wait for those too.
    await this.running.settled();
  }
}

/** The Standard Webhooks message id of a batch: the same for a retry of the same lines, another for other lines. */
export function batchMessageId(drainId: string, lines: DrainLine[]): string {
  const h = createHash('sha256').update(drainId);
  let current = '';
  for (const l of lines) {
    if (l.deploymentId !== current) h.update(`|${(current = l.deploymentId)}:${l.seq}`);
  }
  h.update(`|${lines.length}`);
  return `msg_${h.digest('base64url').slice(0, 32)}`;
}

/** Ships one drain on this gateway: one batch at a time, woken by new lines, paused while retrying. */
class DrainWorker {
  readonly appId: string;
  private loop: Promise<void> | null = null;
  private again = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly shipper: DrainShipper,
    private readonly row: DrainRow,
    private readonly sender: DrainSender,
  ) {
    this.appId = row.app_id;
    // Picked up while another holder was waiting to retry: the wait goes on here.
    const wait = row.retry_at ? new Date(row.retry_at).getTime() - shipper.now().getTime() : 0;
    if (wait > 0) this.retryIn(wait);
  }

  kick(): void {
    if (this.stopped || this.retryTimer) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    this.loop = this.shipper.track(
      (async () => {
        do {
          this.again = false;
          await this.shipAll().catch(this.shipper.opts.onError);
        } while (this.again && !this.stopped && !this.retryTimer);
      })().finally(() => (this.loop = null)),
    );
  }

  private retryIn(delayMs: number): void {
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.kick();
    }, delayMs);
    this.retryTimer.unref();
  }

  private async shipAll(): Promise<void> {
    const { shipper, row } = this;
    while (!this.stopped) {
      const lines = await shipper.nextBatch(row.id, row.app_id);
      if (lines.length === 0) return;
      const outcome = await this.sender.send(lines, batchMessageId(row.id, lines), shipper.now());
      if (outcome.ok) {
        await shipper.acknowledge(row.id, lines);
        continue;
      }
      const delay = await shipper.failed(row.id, outcome.error ?? 'failed', outcome.status === 410);
      if (delay === null) this.stopped = true;
      else if (!this.stopped) this.retryIn(delay);
      return;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.loop;
    this.sender.close();
  }
}
