import { DataSource } from 'typeorm';
import { Clock } from '../../clock';
import { pgCode } from '../../db/transaction';

const DAY_MS = 86_400_000;
/** Daily partitions made ahead of time, today included. */
const DAYS_AHEAD = 8;
/** Serialises partition changes across gateways (pg_advisory_xact_lock). */
const PARTITIONS_LOCK = 0x4c4f4753; // 'LOGS'

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const partitionName = (day: string) => `log_lines_d${day.replace(/-/g, '')}`;

/** A partition of log_lines and its days: from (inclusive) up to (exclusive), UTC midnights. */
interface Partition {
  name: string;
  /** -Infinity for the partition of the lines stored before the upgrade (MINVALUE). */
  from: number;
  upTo: number;
}

const boundDay = (re: RegExp, bound: string, none: number) => {
  const m = re.exec(bound);
  return m ? Date.parse(`${m[1]}T00:00:00Z`) : none;
};

/**
 * Log retention by whole days. log_lines is partitioned by the day (UTC) a line was stored, one
 * partition a day (migration LogPartitions). `ensurePartitions` makes today's and the next week's
 * ahead of time (at start and hourly); `run` also removes every partition whose last day is past
 * HATCHERY_LOG_RETENTION_DAYS: it records on the deployments with lines there up to when their
 * logs were removed (`logs_removed_before`), detaches the partition CONCURRENTLY (writers go on,
 * the parent takes no exclusive lock) and drops it. No row is deleted one by one; a line goes
 * between `days` and `days + 1` days after it was stored.
 */
export class LogRetention {
  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly days: number,
  ) {}

  /** The partitions of log_lines, oldest first. */
  async partitions(): Promise<Partition[]> {
    const rows: Array<{ name: string; bound: string }> = await this.ds.query(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'log_lines'::regclass`,
    );
    return rows
      .map((r) => ({
        name: r.name,
        from: boundDay(/FROM \('(\d{4}-\d\d-\d\d)'\)/, r.bound, -Infinity),
        upTo: boundDay(/TO \('(\d{4}-\d\d-\d\d)'\)/, r.bound, Infinity),
      }))
      .sort((a, b) => a.upTo - b.upTo);
  }

  /**
   * Makes the daily partitions from today on (DAYS_AHEAD of them) that do not exist yet. Today is
   * the database's, as in the column's default that picks a line's partition.
   */
  async ensurePartitions(): Promise<void> {
    const [{ day }] = await this.ds.query<Array<{ day: string }>>(`SELECT ((now() AT TIME ZONE 'UTC'))::date::text AS day`);
    const today = Date.parse(`${day}T00:00:00Z`);
    // Days a partition covers already (a daily one, or the one of the lines before the upgrade) are left to it.
    const have = await this.partitions();
    const wanted = Array.from({ length: DAYS_AHEAD }, (_, i) => today + i * DAY_MS).filter((d) => !have.some((p) => p.from <= d && d < p.upTo));
    if (wanted.length === 0) return;
    await this.ds.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [PARTITIONS_LOCK]);
      for (const day of wanted) {
        const from = isoDay(day);
        await tx.query(`CREATE TABLE IF NOT EXISTS "${partitionName(from)}" PARTITION OF log_lines FOR VALUES FROM ('${from}') TO ('${isoDay(day + DAY_MS)}')`);
      }
    });
  }

  /**
   * Makes the partitions ahead, then removes the ones past the retention (none when `days` is 0);
   * resolves with how many lines went.
   */
  async run(): Promise<number> {
    await this.ensurePartitions();
    if (this.days <= 0) return 0;
    const cutoff = this.clock.now().getTime() - this.days * DAY_MS;
    let removed = 0;
    for (const p of await this.partitions()) {
      if (p.upTo > cutoff) break;
      removed += await this.drop(p);
    }
    return removed;
  }

  private async drop(p: Partition): Promise<number> {
    const upTo = new Date(p.upTo);
    let n: number;
    try {
      // Said before the lines go: a reader meanwhile sees them still, or the mark; never neither.
      // And the newest seq removed, so a log whose lines all went goes on numbering after it. One
      // read of the partition counts its lines too.
      [{ n }] = await this.ds.query<Array<{ n: number }>>(
        `WITH m AS (SELECT deployment_id, max(seq) AS seq, count(*) AS n FROM "${p.name}" GROUP BY deployment_id),
              marked AS (
                UPDATE deployments d SET logs_removed_before = GREATEST(COALESCE(d.logs_removed_before, $1), $1),
                                         logs_removed_seq = GREATEST(COALESCE(d.logs_removed_seq, 0), m.seq)
                  FROM m WHERE d.id = m.deployment_id)
         SELECT COALESCE(sum(n), 0)::int AS n FROM m`,
        [upTo],
      );
    } catch (err) {
      // Another run dropped it meanwhile.
      if (pgCode(err) === '42P01') return 0;
      throw err;
    }
    try {
      await this.ds.query(`ALTER TABLE log_lines DETACH PARTITION "${p.name}" CONCURRENTLY`);
    } catch (err) {
      // A detach another run began and did not finish (it was cancelled): finish it.
      if (pgCode(err) !== '55000') throw err;
      await this.ds.query(`ALTER TABLE log_lines DETACH PARTITION "${p.name}" FINALIZE`);
    }
    await this.ds.query(`DROP TABLE IF EXISTS "${p.name}"`);
    return n;
  }
}
