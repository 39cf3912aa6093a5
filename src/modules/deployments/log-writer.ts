import { DataSource } from 'typeorm';
import { Clock } from '../../clock';
import { pgCode } from '../../db/transaction';
import { GatewayPubSub } from '../topics';
import type { Metrics } from '../../metrics';
import type { DeploymentEvent } from './deployments.topics';
import { LogLine, LogType } from './log-line.entity';

/**
 * On a gateway with subscribers to a deployment, turns another gateway's `stored` event into the
 * lines it names, read from storage in one statement (for all of this gateway's subscribers).
 */
export function expandStoredLines(ds: DataSource): (eventName: string, value: unknown) => Promise<DeploymentEvent[]> {
  return async (eventName, value) => {
    const e = value as DeploymentEvent;
    if (e.kind !== 'stored') return [];
    const deploymentId = eventName.slice(eventName.indexOf(':') + 1);
    const lines = await ds
      .getRepository(LogLine)
      .createQueryBuilder('l')
      .where('l.deployment_id = :deploymentId AND l.seq > :after AND l.seq <= :upTo', { deploymentId, after: e.after, upTo: e.upTo })
      .orderBy('l.seq', 'ASC')
      .getMany();
    return lines.length ? [{ kind: 'lines', lines }] : [];
  };
}

export interface LogWriterOptions {
  flushMs?: number;
  maxBatch?: number;
  onError?: (err: unknown) => void;
  metrics?: Metrics;
}

/**
 * Batches log lines into one INSERT per flush, then publishes them. Lines are published only
 * after they are stored, which is what lets a subscriber replay storage and then go live
 * without a gap. Sequence numbers are per deployment, assigned here, continuing from storage.
 */
export class LogWriter {
  private readonly seqs = new Map<string, number>();
  private buffer: LogLine[] = [];
  private timer: NodeJS.Timeout | null = null;
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
    const [row] = await this.ds.query<Array<{ seq: string | number }>>('SELECT COALESCE(MAX(seq), 0) AS seq FROM log_lines WHERE deployment_id = $1', [
      deploymentId,
    ]);
    this.seqs.set(deploymentId, Math.max(Number(row.seq), this.seqs.get(deploymentId) ?? 0));
  }

  append(deploymentId: string, type: LogType, message: string, at?: Date): void {
    const last = this.seqs.get(deploymentId);
    if (last === undefined) throw new Error(`log writer: deployment ${deploymentId} was not opened`);
    this.seqs.set(deploymentId, last + 1);
    this.buffer.push(Object.assign(new LogLine(), { deploymentId, seq: last + 1, timestamp: at ?? this.clock.now(), type, message }));
    if (this.buffer.length >= this.maxBatch) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Stops tracking a deployment (deleted, or no longer writing); its unflushed lines are dropped. */
  forget(deploymentId: string): void {
    this.seqs.delete(deploymentId);
    this.buffer = this.buffer.filter((l) => l.deploymentId !== deploymentId);
  }

  /** Writes everything appended so far; resolves once it is stored and published. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(() => this.write(batch)).catch((err) => this.options.onError?.(err));
    return this.flushing;
  }

  private async write(batch: LogLine[]): Promise<void> {
    if (batch.length === 0) return;
    const published = await this.store(batch);
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
      this.pubsub.publish('DEPLOYMENT', deploymentId, { kind: 'lines', lines });
      this.pubsub.publish('DEPLOYMENT', deploymentId, { kind: 'stored', after: lines[0].seq - 1, upTo: lines[lines.length - 1].seq });
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
    const columns = [batch.map((l) => l.seq), batch.map((l) => l.timestamp.toISOString()), batch.map((l) => l.type), batch.map((l) => l.message)];
    try {
      const rows: Array<{ id: string }> = await this.ds.query(
        `WITH live AS (
           SELECT x.id, x.ord FROM unnest($1::text[]) WITH ORDINALITY AS x(id, ord)
            WHERE EXISTS (SELECT 1 FROM deployments d WHERE d.id = x.id)
         ), stored AS (
           INSERT INTO log_lines (deployment_id, seq, timestamp, type, message)
           SELECT live.id, u.s, u.t, u.ty, u.m
             FROM unnest($2::int[], $3::int[], $4::timestamptz[], $5::text[], $6::text[]) AS u(i, s, t, ty, m)
             JOIN live ON live.ord = u.i
         )
         SELECT id FROM live`,
        [ids, batch.map((l) => index.get(l.deploymentId)), ...columns],
      );
      const live = new Set(rows.map((r) => r.id));
      return live.size === ids.length ? batch : batch.filter((l) => live.has(l.deploymentId));
    } catch (err) {
      if (pgCode(err) !== '23505' && pgCode(err) !== '23503') throw err;
    }
    const rows: Array<{ deployment_id: string; seq: number }> = await this.ds.query(
      `INSERT INTO log_lines (deployment_id, seq, timestamp, type, message)
       SELECT u.d, u.s, u.t, u.ty, u.m
         FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::text[], $5::text[]) AS u(d, s, t, ty, m)
        WHERE EXISTS (SELECT 1 FROM deployments d WHERE d.id = u.d)
       ON CONFLICT DO NOTHING
       RETURNING deployment_id, seq`,
      [batch.map((l) => l.deploymentId), ...columns],
    );
    const kept = new Set(rows.map((r) => `${r.deployment_id}:${r.seq}`));
    return batch.filter((line) => kept.has(`${line.deploymentId}:${line.seq}`));
  }

  async close(): Promise<void> {
    await this.flush();
  }
}
