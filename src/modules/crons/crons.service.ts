import { DataSource, EntityManager, In } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction } from '../../db/transaction';
import { LimitExceeded, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { Page, pageByIdDesc } from '../../db/paging';
import { newId } from '../../ids';
import { OutputStream, Runtime } from '../../runtime/runtime.port';
import type { DeploymentsService } from '../deployments/deployments.service';
import { App } from '../apps/app.entity';
import { AppsService } from '../apps/apps.service';
import { EnergyReason } from '../energy/energy.entity';
import { EnergyService } from '../energy/energy.service';
import { CronExpression, CronSyntaxError } from './cron-expression';
import { Cron, CronRun, CronRunStatus } from './cron.entity';
import { InFlight } from '../../in-flight';

const MAX_COMMAND = 4096;
const MINUTE = 60_000;
/** Crons claimed per transaction by the scheduler, and batches per tick at most. */
const TICK_BATCH = 500;
const TICK_MAX_BATCHES = 1000;
/** Runs kept per cron, newest first; older ones are deleted as new ones are recorded. */
export const RUNS_KEPT_PER_CRON = 100;

export interface CronsOptions {
  /** A due time older than this when first seen was missed while the gateways were down: not replayed. */
  missedAfterMs: number;
  /** A run still RUNNING after this long is stopped, or (its gateway died) marked FAILED. */
  runTimeoutMs: number;
  /** Crons one egg may have. */
  maxPerEgg: number;
  onError: (err: unknown) => void;
}

/**
 * Crons and their runs. The scheduler (`tick`) claims due crons with FOR UPDATE SKIP LOCKED and
 * records a run per due time under a unique (cron, due time) key, so each due time runs once
 * however many gateways tick. A run is skipped when the owner's energy is depleted, and not
 * started while the previous one still runs.
 */
export class CronsService {
  /** The runs this gateway executes now, by run id. */
  private readonly executions = new Map<string, { cronId: string; abort: AbortController }>();
  private readonly tasks = new InFlight();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly energy: EnergyService,
    private readonly runtime: Runtime,
    private readonly deployments: Pick<DeploymentsService, 'liveSpec' | 'supervisor'>,
    private readonly opts: CronsOptions,
  ) {}

  private parse(schedule: unknown): CronExpression {
    if (typeof schedule !== 'string') throw ValidationFailed.field('schedule', 'must be a string');
    try {
      return CronExpression.parse(schedule);
    } catch (err) {
      if (err instanceof CronSyntaxError) throw ValidationFailed.field('schedule', err.message);
      throw err;
    }
  }

  async create(actor: Actor, slug: string, input: { schedule: string; command: string }): Promise<Cron> {
    const app = await this.apps.getVisible(actor, slug);
    const expr = this.parse(input.schedule);
    const command = input.command;
    if (command.trim() === '' || command.length > MAX_COMMAND) throw ValidationFailed.field('command', `must be 1 to ${MAX_COMMAND} characters`);
    return inTransaction(this.ds, async (tx) => {
      await this.apps.lock(tx, app.id);
      const cap = this.opts.maxPerEgg;
      if ((await tx.countBy(Cron, { appId: app.id })) >= cap) throw new LimitExceeded('schedule', `an egg has at most ${cap} crons; delete one first`);
      const now = this.clock.now();
      const cron = tx.create(Cron, {
        id: newId('cron', now),
        appId: app.id,
        schedule: input.schedule.trim().split(/\s+/).join(' '),
        command,
        enabled: true,
        nextRunAt: expr.next(now),
        createdAt: now,
        updatedAt: now,
      });
      await tx.insert(Cron, cron);
      return cron;
    });
  }

  async get(actor: Actor, slug: string, id: string): Promise<Cron> {
    return (await this.getWithApp(actor, slug, id)).cron;
  }

  private async getWithApp(actor: Actor, slug: string, id: string): Promise<{ app: App; cron: Cron }> {
    const app = await this.apps.getVisible(actor, slug);
    const cron = await this.ds.getRepository(Cron).findOneBy({ id, appId: app.id });
    if (!cron) throw new NotFound('Cron', id);
    return { app, cron };
  }

  async list(actor: Actor, slug: string, page: { first?: number | null; after?: string | null }): Promise<Page<Cron>> {
    const app = await this.apps.getVisible(actor, slug);
    return pageByIdDesc(this.ds.getRepository(Cron).createQueryBuilder('c').where('c.app_id = :appId', { appId: app.id }), 'cron', page);
  }

  async runs(actor: Actor, slug: string, id: string, page: { first?: number | null; after?: string | null }): Promise<Page<CronRun>> {
    const cron = await this.get(actor, slug, id);
    return pageByIdDesc(this.ds.getRepository(CronRun).createQueryBuilder('r').where('r.cron_id = :id', { id: cron.id }), 'run', page);
  }

  /** Deletes the cron and its runs; no further runs are scheduled. A run in progress is stopped. */
  async delete(actor: Actor, slug: string, id: string): Promise<string> {
    const cron = await this.get(actor, slug, id);
    await this.ds.getRepository(Cron).delete({ id: cron.id });
    for (const execution of this.executions.values()) if (execution.cronId === cron.id) execution.abort.abort(new Error('its cron was deleted'));
    return cron.id;
  }

  /** Pauses (no due times) or resumes (the next due time after now). */
  async setEnabled(actor: Actor, slug: string, id: string, enabled: boolean): Promise<Cron> {
    const cron = await this.get(actor, slug, id);
    if (cron.enabled === enabled) return cron;
    const now = this.clock.now();
    cron.enabled = enabled;
    cron.nextRunAt = enabled ? this.parse(cron.schedule).next(now) : null;
    cron.updatedAt = now;
    await this.ds.getRepository(Cron).update({ id: cron.id }, { enabled, nextRunAt: cron.nextRunAt, updatedAt: now });
    return cron;
  }

  /** Runs the command now, outside the schedule (also while paused). */
  async runNow(actor: Actor, slug: string, id: string): Promise<CronRun> {
    const { app, cron } = await this.getWithApp(actor, slug, id);
    const run = await inTransaction(this.ds, async (tx) => {
      await tx.findOneOrFail(Cron, { where: { id: cron.id }, lock: { mode: 'pessimistic_write' } });
      if (await this.isRunning(tx, cron.id)) throw ValidationFailed.field('id', 'has a run in progress');
      return this.startRun(tx, cron, app, this.clock.now(), true);
    });
    this.execute(run, cron, app);
    return run;
  }

  private async isRunning(tx: EntityManager, cronId: string): Promise<boolean> {
    return (await tx.countBy(CronRun, { cronId, status: CronRunStatus.RUNNING })) > 0;
  }

  /** Records the run for a due time: RUNNING, or SKIPPED_DEPLETED when the owner has no energy. */
  private async startRun(tx: EntityManager, cron: Cron, app: App, scheduledAt: Date, manual: boolean): Promise<CronRun> {
    const run = this.newRun(cron, scheduledAt, manual, (await this.energy.balanceIn(tx, app.ownerId)).depleted);
    await tx.insert(CronRun, run);
    await this.pruneRuns(tx, [cron.id]);
    return run;
  }

  /**
   * Deletes the runs of these crons beyond their newest RUNS_KEPT_PER_CRON (by id, the order GET
   * …/runs lists), never one still running: one statement for a whole batch, each cron's cut-off
   * found on the (cron_id, id) index. Without it a `* * * * *` cron would grow the table forever.
   */
  private async pruneRuns(tx: EntityManager, cronIds: string[]): Promise<void> {
    await tx.query(
      `DELETE FROM cron_runs r
         USING (SELECT c.id AS cron_id,
                       (SELECT k.id FROM cron_runs k WHERE k.cron_id = c.id ORDER BY k.id DESC OFFSET $2 LIMIT 1) AS oldest_kept
                  FROM unnest($1::text[]) AS c(id)) cut
        WHERE r.cron_id = cut.cron_id AND r.id < cut.oldest_kept AND r.status <> 'running'`,
      [cronIds, RUNS_KEPT_PER_CRON - 1],
    );
  }

  private newRun(cron: Cron, scheduledAt: Date, manual: boolean, depleted: boolean): CronRun {
    const now = this.clock.now();
    return Object.assign(new CronRun(), {
      id: newId('run', now),
      cronId: cron.id,
      status: depleted ? CronRunStatus.SKIPPED_DEPLETED : CronRunStatus.RUNNING,
      exitCode: null,
      scheduledAt,
      startedAt: depleted ? null : now,
      finishedAt: depleted ? now : null,
      manual,
    });
  }

  /** One pass of the scheduler: fires every cron whose due time has come. Returns runs recorded. */
  tick(): Promise<number> {
    // One pass at a time per gateway; other gateways are kept apart by row locks.
    this.ticking ??= this.tickOnce().finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async tickOnce(): Promise<number> {
    if (this.stopped) return 0;
    const now = this.clock.now();
    // One connection for the whole tick: the runs it starts must not keep it waiting for the pool.
    const runner = this.ds.createQueryRunner();
    await runner.connect();
    try {
      // Runs whose gateway died mid-run would block their cron forever: give them up. Not the
      // ones this gateway still runs: a run whose outcome waits to be recorded (hundreds ending at
      // once on a busy machine) is not a dead gateway's, and its own timeout stops it.
      await runner.query(
        `UPDATE cron_runs SET status = $1, finished_at = $2, failure_reason = 'its gateway stopped before it ended'
          WHERE status = 'running' AND started_at < $3 AND id <> ALL($4::text[])`,
        [
          CronRunStatus.FAILED,
          now,
          // The margin lets a live gateway record its own timed-out run (exit 137) first.
          new Date(now.getTime() - this.opts.runTimeoutMs - Math.min(MINUTE, this.opts.runTimeoutMs)),
          [...this.executions.keys()],
        ],
      );
      await this.reap();
      // Batch after batch until nothing due is left: thousands of crons due in the same minute
      // must all start now, not a batch per tick. Each batch commits on its own, so other
      // gateways claim the rows this one has not locked.
      let recorded = 0;
      for (let batch = 0; batch < TICK_MAX_BATCHES && !this.stopped; batch++) {
        const { claimed, runs } = await runner.manager.transaction((tx) => this.claimDue(tx, now));
        recorded += runs.length;
        for (const { run, cron, app } of runs) this.execute(run, cron, app);
        if (claimed < TICK_BATCH) break;
      }
      return recorded;
    } finally {
      await runner.release();
    }
  }

  /** Claims up to a batch of due crons, moves them to their next due time and records their runs. */
  private async claimDue(tx: EntityManager, now: Date): Promise<{ claimed: number; runs: Array<{ run: CronRun; cron: Cron; app: App }> }> {
    const due = await tx
      .getRepository(Cron)
      .createQueryBuilder('c')
      .where('c.enabled AND c.next_run_at <= :now', { now })
      .orderBy('c.next_run_at')
      .limit(TICK_BATCH)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getMany();
    if (due.length === 0) return { claimed: 0, runs: [] };
    await tx.query(`UPDATE crons c SET next_run_at = v.next FROM unnest($1::text[], $2::timestamptz[]) AS v(id, next) WHERE c.id = v.id`, [
      due.map((c) => c.id),
      due.map((c) => this.parse(c.schedule).next(now)),
    ]);
    const fresh = due.filter((c) => now.getTime() - c.nextRunAt!.getTime() <= this.opts.missedAfterMs); // else missed while down
    if (fresh.length === 0) return { claimed: due.length, runs: [] };
    const ids = fresh.map((c) => c.id);
    const busy = new Set<string>(
      (await tx.query<Array<{ cron_id: string }>>(`SELECT DISTINCT cron_id FROM cron_runs WHERE status = 'running' AND cron_id = ANY($1)`, [ids])).map(
        (r) => r.cron_id,
      ),
    ); // the previous run still runs
    const done = new Set<string>(
      (
        await tx.query<Array<{ cron_id: string }>>(
          `SELECT r.cron_id FROM cron_runs r JOIN unnest($1::text[], $2::timestamptz[]) AS v(id, at) ON r.cron_id = v.id AND r.scheduled_at = v.at
            WHERE NOT r.manual`,
          [ids, fresh.map((c) => c.nextRunAt)],
        )
      ).map((r) => r.cron_id),
    );
    const toRun = fresh.filter((c) => !busy.has(c.id) && !done.has(c.id));
    if (toRun.length === 0) return { claimed: due.length, runs: [] };
    const apps = new Map((await tx.findBy(App, { id: In([...new Set(toRun.map((c) => c.appId))]) })).map((a) => [a.id, a]));
    const balances = await this.energy.balancesIn(
      tx,
      [...apps.values()].map((a) => a.ownerId),
    );
    const runs = toRun.map((cron) => {
      const app = apps.get(cron.appId)!;
      return { run: this.newRun(cron, cron.nextRunAt!, false, balances.get(app.ownerId)!.depleted), cron, app };
    });
    await tx.insert(
      CronRun,
      runs.map((r) => r.run),
    );
    await this.pruneRuns(
      tx,
      toRun.map((c) => c.id),
    );
    return { claimed: due.length, runs };
  }

  /**
   * Runs the command through the runtime in the egg's live deployment (its output to that
   * deployment's runtime log, prefixed `[cron <id>]`), records the outcome, and charges the
   * minutes it really ran. Stopped (timeout, cancel, cron deleted, gateway stopping), it is a
   * FAILED run with exit code 137 and the reason.
   */
  private execute(run: CronRun, cron: Cron, app: App): void {
    if (run.status !== CronRunStatus.RUNNING) return;
    const abort = new AbortController();
    const timeout = setTimeout(() => abort.abort(new Error(`timed out after ${this.opts.runTimeoutMs} ms`)), this.opts.runTimeoutMs);
    this.executions.set(run.id, { cronId: cron.id, abort });
    const task = (async () => {
      try {
        let exitCode: number | null;
        let reason: string | null = null;
        try {
          const egg = await this.deployments.liveSpec(app.id);
          const prefix = `[cron ${cron.id}] `;
          const log = egg
            ? (line: string, at?: Date, stream?: OutputStream) =>
                this.deployments.supervisor.runtimeLine(egg.deploymentId, prefix + line, at ?? this.clock.now(), stream)
            : undefined;
          const result = await this.runtime.runCommand({ slug: app.slug, command: cron.command, runId: run.id, egg }, abort.signal, log);
          exitCode = result.exitCode;
          reason = result.reason ?? null;
        } catch (err) {
          if (!abort.signal.aborted) throw err;
          exitCode = 137; // stopped
          reason = abort.signal.reason instanceof Error ? abort.signal.reason.message : 'stopped';
        }
        await this.finishRun(run, app, exitCode, reason);
      } catch (err) {
        this.opts.onError(err);
      } finally {
        clearTimeout(timeout);
        this.executions.delete(run.id);
      }
    })();
    void this.tasks.track(task);
  }

  /** Records how a run ended (unless something else did first, a cancel) and charges the minutes it ran, at least one. */
  private async finishRun(run: CronRun, app: App, exitCode: number | null, reason: string | null): Promise<CronRun | null> {
    const finishedAt = this.clock.now();
    const minutes = Math.max(1, Math.ceil((finishedAt.getTime() - run.startedAt!.getTime()) / MINUTE));
    return inTransaction(this.ds, async (tx) => {
      const [rows] = await tx.query<[CronRun[], number]>(
        `UPDATE cron_runs SET status = $2, exit_code = $3, finished_at = $4, failure_reason = $5 WHERE id = $1 AND status = 'running' RETURNING id`,
        [run.id, exitCode === 0 ? CronRunStatus.SUCCESS : CronRunStatus.FAILED, exitCode, finishedAt, exitCode === 0 ? null : reason],
      );
      if (rows.length === 0) return null;
      await this.energy.consume(tx, app.ownerId, minutes, EnergyReason.CRON_RUN, run.id);
      return tx.findOneByOrFail(CronRun, { id: run.id });
    });
  }

  /**
   * Stops a running run wherever it runs: FAILED with the reason `cancelled`, its minutes so far
   * charged. A run that is not running is a 422 on `run`.
   */
  async cancelRun(actor: Actor, slug: string, cronId: string, runId: string): Promise<CronRun> {
    const { app, cron } = await this.getWithApp(actor, slug, cronId);
    const run = await this.ds.getRepository(CronRun).findOneBy({ id: runId, cronId: cron.id });
    if (!run) throw new NotFound('CronRun', runId);
    if (run.status !== CronRunStatus.RUNNING) throw ValidationFailed.field('run', `is ${run.status}: only a running run can be cancelled`);
    const done = await this.finishRun(run, app, null, 'cancelled');
    this.executions.get(run.id)?.abort.abort(new Error('cancelled'));
    await this.runtime.stopCommand(run.id);
    if (done) return done;
    // It ended on its own meanwhile.
    return this.ds.getRepository(CronRun).findOneByOrFail({ id: run.id });
  }

  /**
   * Stops commands still running on the host for runs that are over (cancelled, given up after
   * their gateway died, or deleted with their cron): a dead gateway leaves no run behind.
   */
  async reap(): Promise<number> {
    const ids = await this.runtime.runningCommands();
    if (ids.length === 0) return 0;
    const live = new Set(
      (await this.ds.query<Array<{ id: string }>>(`SELECT id FROM cron_runs WHERE id = ANY($1) AND status = 'running'`, [ids])).map((r) => r.id),
    );
    let stopped = 0;
    for (const id of ids) {
      if (live.has(id)) continue;
      await this.runtime.stopCommand(id);
      stopped++;
    }
    return stopped;
  }

  start(tickMs: number): void {
    if (tickMs <= 0) return;
    this.timer = setInterval(() => void this.tick().catch(this.opts.onError), tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking?.catch(() => undefined);
    for (const { abort } of this.executions.values()) abort.abort(new Error('its gateway stopped before it ended'));
    await this.tasks.settled();
  }
}
