import { ConstructorOptions, PgBoss } from 'pg-boss';
import { GuardedClient } from '../db/guarded-client';
import { Logger } from '../log';
import type { Metrics, QueueDepth } from '../metrics';

export interface JobDefinition {
  name: string;
  /** 5-field cron, UTC; the job runs once per tick across all gateway instances. */
  cron?: string;
  /** How often this gateway polls the queue; default pg-boss's 2 s. */
  pollSeconds?: number;
  handler(): Promise<unknown>;
}

/** pg-boss queues and workers, in the gateway's own database (schema `pgboss`). */
export class Jobs {
  private readonly boss: PgBoss;

  private queues: string[] = [];
  /** Set when start() begins: settles once pg-boss runs and every queue exists. */
  private created: Promise<void> | null = null;
  /** From the end of start() until stop() begins or pg-boss says it stopped. */
  private running = false;

  constructor(
    databaseUrl: string,
    private readonly log: Logger,
    private readonly metrics?: Metrics,
    opts: { statementTimeoutMs?: number; connectTimeoutMs?: number } = {},
  ) {
    // The same statement timeout as the gateway's own pool (HATCHERY_DB_STATEMENT_TIMEOUT_MS): a
    // job query stuck behind a lock fails and is retried instead of holding a connection forever.
    const statementTimeout = opts.statementTimeoutMs ?? 30_000;
    const options: ConstructorOptions & { Client: typeof GuardedClient } = {
      connectionString: databaseUrl,
      schema: 'pgboss',
      max: 4,
      // pg-boss hands its options on to its pg Pool, which makes its connections with this class.
      Client: GuardedClient,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      ...(statementTimeout > 0 ? { statement_timeout: statementTimeout } : {}),
    };
    this.boss = new PgBoss(options);
    this.boss.on('error', (err) => this.log.error({ err }, 'job system error'));
    this.boss.on('stopped', () => (this.running = false));
  }

  /**
   * Whether this gateway runs jobs now (for /readyz): pg-boss is started and not stopped, and every
   * queue has a worker whose last poll of the queue did not fail. Read from pg-boss's own worker
   * state, without a query.
   */
  get healthy(): boolean {
    if (!this.running) return false;
    const workers = this.boss.getWipData();
    return this.queues.every((queue) => {
      const mine = workers.filter((w) => w.name === queue);
      return (
        mine.length > 0 && mine.every((w) => w.state === 'active' && (w.lastErrorOn === null || (w.lastFetchedOn !== null && w.lastFetchedOn > w.lastErrorOn)))
      );
    });
  }

  async start(definitions: JobDefinition[]): Promise<void> {
    // Every queue first: a send() made while start() runs (a resumed deployment waking the
    // webhooks) waits for them instead of failing on a queue not created yet.
    this.created = (async () => {
      await this.boss.start();
      for (const def of definitions) await this.boss.createQueue(def.name);
    })();
    await this.created;
    for (const def of definitions) {
      this.metrics?.jobQueue(def.name);
      await this.boss.work(def.name, { pollingIntervalSeconds: def.pollSeconds ?? 2 }, async () => {
        try {
          await def.handler();
        } catch (err) {
          this.metrics?.jobFailed(def.name);
          this.log.warn({ err, queue: def.name }, 'job failed');
          throw err;
        }
      });
      if (def.cron) await this.boss.schedule(def.name, def.cron);
    }
    this.queues = definitions.map((d) => d.name);
    this.running = true;
    if (this.metrics) this.metrics.queueDepths = () => this.depths();
  }

  /** Jobs waiting or running per queue and state, counted now (pg-boss's own counts lag). */
  async depths(): Promise<QueueDepth[]> {
    const { rows } = await this.boss.getDb().executeSql(
      `SELECT name, state::text AS state, count(*)::int AS count FROM pgboss.job
        WHERE name = ANY($1::text[]) AND state IN ('created', 'retry', 'active') GROUP BY name, state`,
      [this.queues],
    );
    const counted = new Map((rows as Array<{ name: string; state: string; count: number }>).map((r) => [`${r.name} ${r.state}`, r.count]));
    return this.queues.flatMap((queue) => ['created', 'retry', 'active'].map((state) => ({ queue, state, count: counted.get(`${queue} ${state}`) ?? 0 })));
  }

  /** Queues a run of a job, now or after `delayMs`; one pending run per job is enough. */
  async send(name: string, delayMs = 0): Promise<void> {
    if (this.created) await this.created;
    const startAfter = Math.ceil(delayMs / 1000);
    await this.boss.send(name, {}, startAfter > 0 ? { startAfter } : { singletonKey: `${name}-now` });
  }

  /** Lets running jobs finish, then stops polling. */
  async stop(timeoutMs: number): Promise<void> {
    this.running = false;
    if (this.metrics?.queueDepths) this.metrics.queueDepths = null;
    await this.boss.stop({ graceful: true, timeout: timeoutMs });
  }
}
