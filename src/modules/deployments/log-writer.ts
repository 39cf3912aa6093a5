import { DataSource } from 'typeorm';
import { Clock } from '../../clock';
import { pgCode } from '../../db/transaction';
import { GatewayPubSub } from '../topics';
import type { Metrics } from '../../metrics';
import type { AppLogEvent, DeploymentEvent } from './deployments.topics';
import { LogLine, LogStream, LogType } from './log-line.entity';

/** Stored lines of a deployment with seq in (after, upTo], oldest first. */
function storedLines(ds: DataSource, deploymentId: string, after: number, upTo: number): Promise<LogLine[]> {
  return ds
    .getRepository(LogLine)
    .createQueryBuilder('l')
    .where('l.deployment_id = :deploymentId AND l.seq > :after AND l.seq <= :upTo', { deploymentId, after, upTo })
    .orderBy('l.seq', 'ASC')
    .getMany();
}

/** `expandStoredLines` for an egg's log events (APP_LOGS). */
export function expandStoredAppLines(ds: DataSource): (eventName: string, value: unknown) => Promise<AppLogEvent[]> {
  return async (_eventName, value) => {
    const e = value as AppLogEvent;
    if (e.kind !== 'stored') return [];
    const lines = await storedLines(ds, e.deploymentId, e.after, e.upTo);
    return lines.length ? [{ kind: 'lines', lines }] : [];
  };
}

/**
 * On a gateway with subscribers to a deployment, turns another gateway's `stored` event into the
 * lines it names, read from storage in one statement (for all of this gateway's subscribers).
 */
export function expandStoredLines(ds: DataSource): (eventName: string, value: unknown) => Promise<DeploymentEvent[]> {
  return async (eventName, value) => {
    const e = value as DeploymentEvent;
    if (e.kind !== 'stored') return [];
    const deploymentId = eventName.slice(eventName.indexOf(':') + 1);
    const lines = await storedLines(ds, deploymentId, e.after, e.upTo);
    return lines.length ? [{ kind: 'lines', lines }] : [];
  };
}

export interface LogWriterOptions {
  flushMs?: number;
  maxBatch?: number;
  onError?: (err: unknown) => void;
  metrics?: Metrics;
  /** Makes today's log partition when a batch found none (the gateway ran past the days made ahead). */
  ensurePartitions?: () => Promise<void>;
}

/** How many forgotten deployments a writer remembers, to drop their late lines quietly. */
const FORGOTTEN_KEPT = 10_000;

/**
 * Batches log lines into one INSERT per flush, then publishes them. Lines are published only
 * after they are stored, which is what lets a subscriber replay storage and then go live
 * without a gap. Sequence numbers are per deployment, assigned here, continuing from storage.
 */
export class LogWriter {
  private readonly seqs = new Map<string, number>();
  /**
   * Deployments stopped being written here, the newest last: a line the runtime still hands over
   * for one (a container's last output, an idle check failing as the egg is removed) is dropped,
   * not an error that would end the process from a stream's callback.
   */
  private readonly forgotten = new Set<string>();
  private buffer: LogLine[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The last batch's storing: the next batch is stored after it (in order), not after its publishing. */
  private storing: Promise<unknown> = Promise.resolve();
  /** The last batch's storing and publishing: batches are published in order, each once stored. */
  private flushing: Promise<void> = Promise.resolve();
  private readonly flushMs: number;
  private readonly maxBatch: number;

  constructor(
    private readonly ds: DataSource,
    private readonly pubsub: GatewayPubSub,
    private readonly clock: Clock,
    private readonly options: LogWriterOptions = {},
  ) {
    this.flushMs = options.flushMs ?? 25;
    this.maxBatch = options.maxBatch ?? 500;
  }

  /** Must be awaited once per deployment before `append`, to continue its sequence. */
  async open(deploymentId: string): Promise<void> {
    if (!this.seqs.has(deploymentId)) await this.resume(deploymentId);
  }

  /**
   * Continues a deployment's sequence from storage, where another gateway may have written it
   * further since this one last did; from this writer's own if that is further still.
   */
  async resume(deploymentId: string): Promise<void> {
    // After the newest line stored, or the newest one retention removed when none is left.
    const [row] = await this.ds.query<Array<{ seq: string | number }>>(
      `SELECT GREATEST(COALESCE((SELECT MAX(seq) FROM log_lines WHERE deployment_id = $1), 0),
                       COALESCE((SELECT logs_removed_seq FROM deployments WHERE id = $1), 0)) AS seq`,
      [deploymentId],
    );
    this.seqs.set(deploymentId, Math.max(Number(row.seq), this.seqs.get(deploymentId) ?? 0));
    this.forgotten.delete(deploymentId);
  }

  /** `replica`: the egg's replica whose output the line is (see LogLine.replica); absent for the platform's own lines. */
  append(deploymentId: string, type: LogType, message: string, at?: Date, stream?: 'stdout' | 'stderr', replica?: number): void {
    const last = this.seqs.get(deploymentId);
    if (last === undefined) {
      if (this.forgotten.has(deploymentId)) return;
      throw new Error(`log writer: deployment ${deploymentId} was not opened`);
    }
    this.seqs.set(deploymentId, last + 1);
    const line = Object.assign(new LogLine(), {
      deploymentId,
      seq: last + 1,
      timestamp: at ?? this.clock.now(),
      type,
      message,
      stream: (stream as LogStream) ?? null,
      replica: replica ?? null,
    });
    this.buffer.push(line);
    if (this.buffer.length >= this.maxBatch) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.flushMs);
  }

  /**
   * Stops tracking a deployment (deleted, or no longer writing); its unflushed lines are dropped,
   * and so are lines appended for it later, until it is opened again.
   */
  forget(deploymentId: string): void {
    if (this.seqs.delete(deploymentId)) {
      this.forgotten.delete(deploymentId);
      this.forgotten.add(deploymentId);
      if (this.forgotten.size > FORGOTTEN_KEPT) this.forgotten.delete(this.forgotten.values().next().value!);
    }
    this.buffer = this.buffer.filter((l) => l.deploymentId !== deploymentId);
  }

  /**
   * Writes everything appended so far; resolves once it is stored and published. Batches are
   * stored one after another and published one after another, each once stored; a batch is
   * stored while the one before is being published (the INSERT runs in PostgreSQL while this
   * process hands the earlier lines to subscribers), so a busy log's lines wait for one of the
   * two, not both.
   */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.buffer;
    this.buffer = [];
    const stored = this.storing.then(() => this.storeBatch(batch));
    this.storing = stored.catch(() => undefined);
    this.flushing = this.flushing
      .then(() => stored)
      .then((published) => this.publish(published))
      .catch((err) => this.options.onError?.(err));
    return this.flushing;
  }

  /** Stores a batch; resolves with the lines stored (see `store`). */
  private async storeBatch(batch: LogLine[]): Promise<LogLine[]> {
    if (batch.length === 0) return [];
    try {
      return await this.store(batch);
    } catch (err) {
      // "no partition of relation log_lines found for row": make it, then store the batch again.
      if (pgCode(err) !== '23514' || !this.options.ensurePartitions) throw err;
      await this.options.ensurePartitions();
      return await this.store(batch);
    }
  }

  private publish(published: LogLine[]): void {
    if (published.length === 0) return;
    for (const type of [LogType.BUILD, LogType.RUNTIME]) this.options.metrics?.logLinesStored(type, published.filter((l) => l.type === type).length);
    const byDeployment = new Map<string, LogLine[]>();
    for (const line of published) {
      const lines = byDeployment.get(line.deploymentId);
      if (lines) lines.push(line);
      else byDeployment.set(line.deploymentId, [line]);
    }
    for (const [deploymentId, lines] of byDeployment) {
      // This gateway's subscribers get the lines, one event for all of them; the other gateways
      // one small event naming what was stored (see DeploymentEvent).
      const after = lines[0].seq - 1;
      const upTo = lines[lines.length - 1].seq;
      this.pubsub.publish('DEPLOYMENT', deploymentId, { kind: 'lines', lines });
      this.pubsub.publish('DEPLOYMENT', deploymentId, { kind: 'stored', after, upTo });
      // And for the egg's streams (appLogs, drains), which follow all its deployments.
      this.pubsub.publish('APP_LOGS', lines[0].appId, { kind: 'lines', lines });
      this.pubsub.publish('APP_LOGS', lines[0].appId, { kind: 'stored', deploymentId, after, upTo });
    }
  }

  /**
   * Stores a batch in one statement; resolves with the lines stored. Lines of deployments deleted
   * meanwhile are skipped. The usual case, one writer per deployment, takes the plain insert:
   * each deployment is looked up once and no line needs a conflict check. Only when that fails
   * (a line stored already, by a writer this one took over from; a deployment deleted between the
   * lookup and the insert) is the batch stored line by line, skipping what cannot be stored.
   */
  private async store(batch: LogLine[]): Promise<LogLine[]> {
    const ids = [...new Set(batch.map((l) => l.deploymentId))];
    const index = new Map(ids.map((id, i) => [id, i + 1]));
    const columns = [
      batch.map((l) => l.seq),
      batch.map((l) => l.timestamp.toISOString()),
      batch.map((l) => l.type),
      batch.map((l) => l.message),
      batch.map((l) => l.stream),
      batch.map((l) => l.replica ?? null),
    ];
    try {
      const rows: Array<{ id: string; app_id: string }> = await this.ds.query(
        `WITH live AS (
           SELECT x.id, x.ord, d.app_id FROM unnest($1::text[]) WITH ORDINALITY AS x(id, ord)
             JOIN deployments d ON d.id = x.id
         ), stored AS (
           INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message, stream, replica)
           SELECT live.id, live.app_id, u.s, u.t, u.ty, u.m, u.st, u.r
             FROM unnest($2::int[], $3::int[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::smallint[]) AS u(i, s, t, ty, m, st, r)
             JOIN live ON live.ord = u.i
         )
         SELECT id, app_id FROM live`,
        [ids, batch.map((l) => index.get(l.deploymentId)), ...columns],
      );
      const apps = new Map(rows.map((r) => [r.id, r.app_id]));
      const stored = apps.size === ids.length ? batch : batch.filter((l) => apps.has(l.deploymentId));
      for (const line of stored) line.appId = apps.get(line.deploymentId)!;
      return stored;
    } catch (err) {
      if (pgCode(err) !== '23505' && pgCode(err) !== '23503') throw err;
    }
    const rows: Array<{ deployment_id: string; seq: number; app_id: string }> = await this.ds.query(
      `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message, stream, replica)
       SELECT u.d, d.app_id, u.s, u.t, u.ty, u.m, u.st, u.r
         FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::smallint[]) AS u(d, s, t, ty, m, st, r)
         JOIN deployments d ON d.id = u.d
       ON CONFLICT DO NOTHING
       RETURNING deployment_id, seq, app_id`,
      [batch.map((l) => l.deploymentId), ...columns],
    );
    const kept = new Map(rows.map((r) => [`${r.deployment_id}:${r.seq}`, r.app_id]));
    const stored = batch.filter((line) => kept.has(`${line.deploymentId}:${line.seq}`));
    for (const line of stored) line.appId = kept.get(`${line.deploymentId}:${line.seq}`)!;
    return stored;
  }

  async close(): Promise<void> {
    await this.flush();
  }
}
