import { DataSource, SelectQueryBuilder } from 'typeorm';
import { endWithConsumer, listenNow } from '../../bus/pubsub';
import { decodeCursor, Page, pageSize, PG_INT_MAX, toPage } from '../../db/paging';
import { ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import type { AccessEvent } from '../accounts/access.topics';
import type { App } from '../apps/app.entity';
import type { AppsService } from '../apps/apps.service';
import { GatewayPubSub } from '../topics';
import type { AppLogEvent } from './deployments.topics';
import { containsPattern, LogFilter, matchesFilter, parseLogFilter } from './log-filter';
import { LogLine, LogType } from './log-line.entity';
import { appLogBatchStream, notStreamed } from './log-stream';

export const LOG_PAGE_MAX = 1000;
export const LOG_PAGE_DEFAULT = 100;
export const REPLAY_BATCH = 500;
/** An egg's lines carry more fields: a smaller page keeps its REST query within the cost limit. */
export const APP_LOG_PAGE_MAX = 500;

/** What a log read may be narrowed by, on a deployment's logs or an egg's. */
export interface LogQuery {
  type?: LogType | null;
  since?: Date | null;
  /** Only lines before this moment (exclusive). */
  until?: Date | null;
  /** The last N matching lines, oldest first. */
  tail?: number | null;
  /** A filter (log-filter.ts). */
  q?: string | null;
  first?: number | null;
  after?: string | null;
}

/** The checks of `tail` both log reads make: 1 to 1000, not with `first` or `after`. */
export function checkTail(q: LogQuery, max = LOG_PAGE_MAX): number | null {
  if (q.tail === null || q.tail === undefined) return null;
  if (!Number.isInteger(q.tail) || q.tail < 1 || q.tail > max) throw ValidationFailed.field('tail', `must be an integer from 1 to ${max}`);
  if (q.first !== null && q.first !== undefined) throw ValidationFailed.field('tail', 'give tail or first, not both');
  if (q.after) throw ValidationFailed.field('tail', 'reads the newest lines: continue from its endCursor with after, without tail');
  return q.tail;
}

/** Narrows a query over `log_lines l` by type, time and a parsed filter. */
export function whereLines(
  qb: SelectQueryBuilder<LogLine>,
  q: { type?: LogType | null; since?: Date | null; until?: Date | null; match?: LogFilter | null },
): SelectQueryBuilder<LogLine> {
  if (q.type) qb.andWhere('l.type = :type', { type: q.type });
  if (q.since) qb.andWhere('l.timestamp > :since', { since: q.since });
  if (q.until) qb.andWhere('l.timestamp < :until', { until: q.until });
  const m = q.match;
  if (m) {
    if (m.type) qb.andWhere('l.type = :matchType', { matchType: m.type });
    if (m.stream) qb.andWhere('l.stream = :matchStream', { matchStream: m.stream });
    if (m.deployment) qb.andWhere('l.deployment_id = :matchDeployment', { matchDeployment: m.deployment });
    m.include.forEach((word, i) => qb.andWhere(`l.message ILIKE :inc${i}`, { [`inc${i}`]: containsPattern(word) }));
    m.exclude.forEach((word, i) => qb.andWhere(`l.message NOT ILIKE :exc${i}`, { [`exc${i}`]: containsPattern(word) }));
  }
  return qb;
}

/** Where a line sits in an egg's log: its time, then its deployment and seq. */
type AppKey = { at: Date; deploymentId: string; seq: number };
const MAX_DATE_MS = 8.64e15;
const APP_KEY = /^t:(0|[1-9]\d{0,15}):(dep_[0-9a-z]{26}):(0|[1-9]\d{0,9})$/;
const appCursor = (l: LogLine) => `t:${l.timestamp.getTime()}:${l.deploymentId}:${l.seq}`;

function decodeAppCursor(after: string | null | undefined): AppKey | null {
  // Within what the columns hold: a timestamp JavaScript can name, a seq within `integer`.
  const key = decodeCursor(after, (k) => {
    const m = APP_KEY.exec(k);
    return m !== null && Number(m[1]) <= MAX_DATE_MS && Number(m[3]) <= PG_INT_MAX;
  });
  if (!key) return null;
  const [, ms, deploymentId, seq] = APP_KEY.exec(key)!;
  return { at: new Date(Number(ms)), deploymentId, seq: Number(seq) };
}

export interface AppLogsDeps {
  ds: DataSource;
  pubsub: GatewayPubSub;
  apps: AppsService;
}

/**
 * An egg's logs: the lines of all its deployments, interleaved by time (then deployment, then
 * seq), read a page at a time, or followed live across redeploys (`watch`).
 */
export class AppLogs {
  constructor(private readonly deps: AppLogsDeps) {}

  async page(app: App, q: LogQuery): Promise<Page<LogLine>> {
    const filter = { type: q.type ?? null, since: q.since ?? null, until: q.until ?? null, match: parseLogFilter(q.q, 'app') };
    const tail = checkTail(q, APP_LOG_PAGE_MAX);
    if (tail !== null) {
      const newest = await this.read(app.id, { ...filter, after: null, newestFirst: true }, tail);
      return toPage(newest.reverse(), tail, appCursor);
    }
    const limit = pageSize(q.first, APP_LOG_PAGE_MAX, LOG_PAGE_DEFAULT);
    const rows = await this.read(app.id, { ...filter, after: decodeAppCursor(q.after), newestFirst: false }, limit + 1);
    return toPage(rows, limit, appCursor);
  }

  private read(
    appId: string,
    q: {
      after: AppKey | null;
      newestFirst: boolean;
      type: LogType | null;
      since: Date | null;
      until: Date | null;
      match: LogFilter | null;
      /** Only lines of these deployments, up to these seqs (a stream's snapshot of storage). */
      upTo?: Map<string, number>;
    },
    limit: number,
  ): Promise<LogLine[]> {
    const dir = q.newestFirst ? 'DESC' : 'ASC';
    const qb = this.deps.ds
      .getRepository(LogLine)
      .createQueryBuilder('l')
      .where('l.app_id = :appId', { appId })
      .orderBy('l.timestamp', dir)
      .addOrderBy('l.deployment_id', dir)
      .addOrderBy('l.seq', dir)
      .limit(limit);
    if (q.after) {
      qb.andWhere('(l.timestamp, l.deployment_id, l.seq) > (:afterAt, :afterDeployment, :afterSeq)', {
        afterAt: q.after.at,
        afterDeployment: q.after.deploymentId,
        afterSeq: q.after.seq,
      });
    }
    if (q.upTo) {
      qb.andWhere('l.seq <= COALESCE((SELECT w.s FROM unnest(CAST(:upToIds AS text[]), CAST(:upToSeqs AS int[])) AS w(d, s) WHERE w.d = l.deployment_id), 0)', {
        upToIds: [...q.upTo.keys()],
        upToSeqs: [...q.upTo.values()],
      });
    }
    return whereLines(qb, q).getMany();
  }

  /** Stored lines of one deployment with seq in (after, before), matching, oldest first. */
  private readDeployment(deploymentId: string, after: number, before: number, q: { since: Date | null; match: LogFilter | null }): Promise<LogLine[]> {
    const qb = this.deps.ds
      .getRepository(LogLine)
      .createQueryBuilder('l')
      .where('l.deployment_id = :deploymentId AND l.seq > :after', { deploymentId, after })
      .orderBy('l.seq', 'ASC')
      .limit(REPLAY_BATCH);
    if (Number.isFinite(before)) qb.andWhere('l.seq < :before', { before });
    return whereLines(qb, q).getMany();
  }

  /** The newest stored seq of each of the egg's deployments (0 for one with no line yet). */
  private async newestSeqs(appId: string): Promise<Map<string, number>> {
    const rows: Array<{ id: string; seq: number }> = await this.deps.ds.query(
      `SELECT d.id, COALESCE((SELECT max(l.seq) FROM log_lines l WHERE l.deployment_id = d.id), 0)::int AS seq FROM deployments d WHERE d.app_id = $1`,
      [appId],
    );
    return new Map(rows.map((r) => [r.id, r.seq]));
  }

  /**
   * The egg's stored lines after `since` (all when absent) in time order, then every new line of
   * any of its deployments as it is stored, across redeploys, in batches: none lost or repeated.
   * Ends when the subscriber can no longer see the egg.
   */
  async watch(actor: Actor, slug: string, args: { since?: Date | null; q?: string | null }): Promise<AsyncIterableIterator<LogLine[]>> {
    const match = parseLogFilter(args.q, 'app');
    const since = args.since ?? null;
    const app = await this.deps.apps.getVisible(actor, slug);
    // Listening before storage is read: a line stored meanwhile is past the snapshot and among the events.
    const events = listenNow(this.deps.pubsub, 'APP_LOGS', app.id, undefined, (e: AppLogEvent) => (e.kind === 'lines' ? e.lines.length : 1), notStreamed);
    const onAccess = (e: Event) => {
      const access = (e as CustomEvent<AccessEvent>).detail;
      if ((access.kind === 'access-lost' && access.userId === actor.user.id && access.appId === app.id) || access.kind === 'resync')
        events.push({ kind: 'resync' });
    };
    this.deps.pubsub.target.addEventListener('ACCESS', onAccess);
    events.onClose(() => this.deps.pubsub.target.removeEventListener('ACCESS', onAccess));
    try {
      const upTo = await this.newestSeqs(app.id);
      const read = (after: AppKey | null) => this.read(app.id, { after, newestFirst: false, type: null, since, until: null, match, upTo }, REPLAY_BATCH);
      const stream = appLogBatchStream({
        events,
        upTo,
        replay: async function* () {
          let after: AppKey | null = null;
          for (;;) {
            const page = await read(after);
            if (page.length) yield page;
            if (page.length < REPLAY_BATCH) return;
            const last = page[page.length - 1];
            after = { at: last.timestamp, deploymentId: last.deploymentId, seq: last.seq };
          }
        },
        fill: (deploymentId, after, before) => this.readDeployment(deploymentId, after, before, { since, match }),
        pageSize: REPLAY_BATCH,
        check: async () => {
          await this.deps.apps.getVisibleById(actor, app.id);
          return this.newestSeqs(app.id);
        },
        wanted: (line) => (!since || line.timestamp > since) && (!match || matchesFilter(match, line)),
      });
      return endWithConsumer(stream, events);
    } catch (err) {
      await events.close();
      throw err;
    }
  }
}
