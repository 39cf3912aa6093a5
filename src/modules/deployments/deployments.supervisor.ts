import { performance } from 'node:perf_hooks';
import { DataSource, In } from 'typeorm';
import { Clock } from '../../clock';
import type { GatewayPubSub } from '../topics';
import { EggSpec, Runtime, RunningEgg, BuildResult, OutputStream } from '../../runtime/runtime.port';
import { Deployment, DeploymentStatus } from './deployment.entity';
import { LogType } from './log-line.entity';
import { RunnerEvent } from './deployments.topics';
import { LogWriter } from './log-writer';
import { InFlight } from '../../in-flight';
import { RowLease } from '../../db/lease';
import { newGatewayId } from '../../ids';

/** A build's claim: the gateway building it renews it; a lapsed one is resumed by another. */
const BUILD_LEASE = new RowLease({ table: 'deployments', until: 'lease_until', scope: "status = 'building'" });
/** A live egg's runner: the one gateway that runs its current deployment. */
const RUNNER_LEASE = new RowLease({ table: 'apps', until: 'runner_lease_until', holder: 'runner_id', scope: 'current_deployment_id IS NOT NULL' });

export interface SupervisorHooks {
  /** Loads what a build or run needs: the egg's slug and the decrypted env. */
  spec(deployment: Deployment): Promise<EggSpec>;
  /** Records the build's outcome; returns the deployment if it went live and became current. */
  finish(deploymentId: string, result: BuildResult): Promise<Deployment | null>;
  /** The runtime woke the deployment's egg: record it, and say with how much memory. */
  wake(deploymentId: string): Promise<number | null>;
  /** The runtime put the egg to sleep, idle since `idleSince`: record it; false if a request came after. */
  asleep(deploymentId: string, idleSince: Date): Promise<boolean>;
  /** When the egg last served a request through a router. */
  lastActive(deploymentId: string): Promise<Date | null>;
  /** When the newest stored line of the egg's own output was written: of replica `replica` (from 1), or of any replica. */
  lastLineAt(deploymentId: string, replica?: number): Promise<Date | null>;
  onError(err: unknown): void;
}

/**
 * Drives the runtime: runs builds, keeps the current deployment of each egg running, and holds
 * a lease on every build in progress. A build whose lease lapses (its gateway crashed) is
 * claimed and resumed by `reclaimOrphans`, at start and then periodically.
 *
 * Each egg runs on one gateway: the one holding the egg's runner lease (`apps.runner_id`,
 * `runner_lease_until`), renewed every third of `leaseMs` and claimed with an UPDATE that only
 * matches a lapsed or released lease. So only that gateway writes the running deployment's log
 * lines, which keeps the log writer's per-deployment sequence valid. A gateway that cannot renew
 * stops its eggs before its leases can lapse; one that stops releases them, and the others
 * claim them at once.
 */
/**
 * The eggs a gateway runs, by egg id, each with the deployment it runs; also indexed by
 * deployment, since every request line the router writes asks whether its deployment runs here
 * (a scan of all eggs per line, with a hundred eggs live).
 */
export class RunningEggs extends Map<string, { deploymentId: string; egg: RunningEgg }> {
  private readonly deployments = new Map<string, number>();

  override set(appId: string, r: { deploymentId: string; egg: RunningEgg }): this {
    const had = this.get(appId);
    if (had) this.drop(had.deploymentId);
    this.deployments.set(r.deploymentId, (this.deployments.get(r.deploymentId) ?? 0) + 1);
    return super.set(appId, r);
  }

  override delete(appId: string): boolean {
    const had = this.get(appId);
    if (had) this.drop(had.deploymentId);
    return super.delete(appId);
  }

  override clear(): void {
    this.deployments.clear();
    super.clear();
  }

  /** Whether one of the eggs runs this deployment. */
  runs(deploymentId: string): boolean {
    return this.deployments.has(deploymentId);
  }

  private drop(deploymentId: string): void {
    const left = (this.deployments.get(deploymentId) ?? 1) - 1;
    if (left > 0) this.deployments.set(deploymentId, left);
    else this.deployments.delete(deploymentId);
  }
}

export class BuildSupervisor {
  private readonly builds = new Map<string, AbortController>();
  private readonly running = new RunningEggs();
  private readonly tasks = new InFlight();
  /** Runner work on one egg runs one piece at a time, in order. */
  private readonly eggQueues = new Map<string, Promise<void>>();
  private leaseTimer: NodeJS.Timeout | null = null;
  private fenceTimer: NodeJS.Timeout | null = null;
  private ticking = false;
  private tickAgain = false;
  private runnerEvents: { return(value?: unknown): Promise<unknown> } | null = null;
  private stopped = false;

  constructor(
    private readonly ds: DataSource,
    private readonly runtime: Runtime,
    private readonly writer: LogWriter,
    private readonly clock: Clock,
    private readonly hooks: SupervisorHooks,
    readonly leaseMs: number,
    private readonly pubsub: GatewayPubSub,
    /** This gateway, as the holder of runner leases (the same id as on the event bus). */
    readonly runnerId = newGatewayId(),
  ) {}

  leaseFrom(now: Date): Date {
    return new Date(now.getTime() + this.leaseMs);
  }

  start(): void {
    this.leaseTimer = setInterval(() => this.tick(), Math.max(100, this.leaseMs / 3));
    this.leaseTimer.unref();
    this.armFence();
    const events = this.pubsub.subscribe('RUNNERS');
    this.runnerEvents = events;
    this.track(async () => {
      for await (const e of events) this.onRunnerEvent(e);
    });
  }

  /** Starts the build of a deployment this process holds the lease on. */
  build(deployment: Deployment, resumed = false): void {
    if (this.stopped || this.builds.has(deployment.id)) return;
    const abort = new AbortController();
    this.builds.set(deployment.id, abort);
    this.track(async () => {
      try {
        const spec = await this.hooks.spec(deployment);
        await this.writer.open(deployment.id);
        if (resumed) this.writer.append(deployment.id, LogType.BUILD, '==> Build resumed: the gateway building it stopped');
        const result = await this.runtime.build(spec, (type, msg, at, from) => this.writer.append(deployment.id, type as LogType, msg, at, from), abort.signal);
        // Every build line is stored and published before the status changes.
        await this.writer.flush();
        if (abort.signal.aborted) return;
        const current = await this.hooks.finish(deployment.id, result);
        // The build is over: stopping now has no lease of it to release.
        this.builds.delete(deployment.id);
        if (current) await this.run(current);
        // Nothing more to write for it here unless it runs here.
        if (!this.running.runs(deployment.id)) this.writer.forget(deployment.id);
      } catch (err) {
        if (!abort.signal.aborted) this.hooks.onError(err);
      } finally {
        this.builds.delete(deployment.id);
      }
    });
  }

  /** `deployment` became its egg's current one: whichever gateway runs the egg switches to it. */
  async run(deployment: Deployment): Promise<void> {
    await this.changed(deployment.appId);
  }

  /** Stops the egg's running instance and starts `deployment` again, with its current spec. */
  async restart(deployment: Deployment): Promise<void> {
    await this.changed(deployment.appId, deployment.id);
  }

  /**
   * The egg's current deployment changed (or `restart` is to be restarted). If no live gateway
   * runs the egg, this one claims it; the gateway running it, this one or another, looks again.
   */
  async changed(appId: string, restart: string | null = null): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    const claimed = await RUNNER_LEASE.claim(this.ds, { until: this.leaseFrom(now), now, holder: this.runnerId, ids: [appId] });
    if (claimed.length > 0 || this.running.has(appId)) await this.reconcile(appId, restart);
    else this.pubsub.publish('RUNNERS', { kind: 'changed', from: this.runnerId, appId, restart });
  }

  private onRunnerEvent(e: RunnerEvent): void {
    if (this.stopped || e.from === this.runnerId) return;
    // Every gateway looks: only the one whose lease it is finds anything to do.
    if (e.kind === 'changed') this.track(() => this.reconcile(e.appId, e.restart));
    else if (e.kind === 'cancel') this.cancel(e.deploymentId);
    else if (e.kind === 'line') {
      if (this.runsHere(e.deploymentId))
        this.writer.append(e.deploymentId, LogType.RUNTIME, e.line, new Date(e.at), e.stream === 'stdout' || e.stream === 'stderr' ? e.stream : undefined);
    } else this.tick();
  }

  /**
   * Makes what runs here for the egg match the database: its current deployment if this
   * gateway holds the egg's runner lease, else nothing.
   */
  private reconcile(appId: string, restart: string | null = null): Promise<void> {
    return this.serially(appId, async () => {
      if (this.stopped) return;
      const [row]: Array<{ id: string }> = await this.ds.query(
        `SELECT d.id FROM apps a JOIN deployments d ON d.id = a.current_deployment_id AND d.status = $3
          WHERE a.id = $1 AND a.runner_id = $2`,
        [appId, this.runnerId, DeploymentStatus.LIVE],
      );
      const want = row?.id ?? null;
      const have = this.running.get(appId);
      if (have?.deploymentId === want && restart !== want) return;
      // Superseded (not restarted): requests already on their way to it may finish.
      if (have) await this.stopEgg(appId, have, have.deploymentId === want ? 'restart' : 'drain');
      if (!want || this.stopped) return;
      const deployment = await this.ds.getRepository(Deployment).findOneBy({ id: want });
      if (!deployment || this.stopped) return;
      const spec = { ...(await this.hooks.spec(deployment)), restarting: have?.deploymentId === want };
      // Whoever wrote its lines before (its builder, an earlier runner elsewhere) is done.
      await this.writer.resume(deployment.id);
      if (this.stopped) return;
      const egg = this.runtime.run(spec, (type, msg, at, from, replica) => this.writer.append(deployment.id, type as LogType, msg, at, from, replica), {
        wake: () => this.hooks.wake(deployment.id),
        asleep: (idleSince) => this.hooks.asleep(deployment.id, idleSince),
        lastActive: () => this.hooks.lastActive(deployment.id),
        lastLineAt: (replica) => this.hooks.lastLineAt(deployment.id, replica),
      });
      this.running.set(appId, { deploymentId: deployment.id, egg });
    });
  }

  private async stopEgg(appId: string, r: { deploymentId: string; egg: RunningEgg }, how: 'stop' | 'drain' | 'restart' | 'detach' = 'stop'): Promise<void> {
    if (how === 'detach') r.egg.detach();
    else await r.egg.stop({ drain: how === 'drain', restarting: how === 'restart' });
    if (this.running.get(appId) === r) this.running.delete(appId);
    await this.writer.flush();
    this.writer.forget(r.deploymentId);
  }

  private serially(appId: string, work: () => Promise<void>): Promise<void> {
    const run = (this.eggQueues.get(appId) ?? Promise.resolve()).then(work);
    const tail = run.catch(() => undefined);
    this.eggQueues.set(appId, tail);
    void tail.then(() => {
      if (this.eggQueues.get(appId) === tail) this.eggQueues.delete(appId);
    });
    return run;
  }

  /** Stops whatever any gateway does for a deployment (it was deleted): here at once, elsewhere through the bus. */
  cancelEverywhere(deploymentId: string): void {
    this.cancel(deploymentId);
    this.pubsub.publish('RUNNERS', { kind: 'cancel', from: this.runnerId, deploymentId });
  }

  /** Stops whatever this process does for a deployment (it was deleted). */
  cancel(deploymentId: string): void {
    this.builds.get(deploymentId)?.abort();
    for (const [appId, r] of this.running) {
      if (r.deploymentId === deploymentId) {
        this.track(async () => {
          await r.egg.stop();
        });
        this.running.delete(appId);
      }
    }
    this.writer.forget(deploymentId);
  }

  /**
   * A runtime log line from outside the egg's container (a request the router passed, a cron run's output): written here if this gateway
   * runs the deployment (it owns the log's sequence), else handed to the gateway that does.
   */
  runtimeLine(deploymentId: string, line: string, at: Date, stream?: OutputStream): void {
    if (this.stopped) return;
    if (this.runsHere(deploymentId)) this.writer.append(deploymentId, LogType.RUNTIME, line, at, stream);
    else this.pubsub.publish('RUNNERS', { kind: 'line', from: this.runnerId, deploymentId, line, at: at.toISOString(), stream: stream ?? null });
  }

  private runsHere(deploymentId: string): boolean {
    return this.running.runs(deploymentId);
  }

  /** Claims builds whose builder's lease lapsed and resumes them here. */
  async reclaimOrphans(): Promise<number> {
    if (this.stopped) return 0;
    const now = this.clock.now();
    const rows = await BUILD_LEASE.claim(this.ds, { until: this.leaseFrom(now), now });
    if (rows.length === 0) return 0;
    const claimed = await this.ds.getRepository(Deployment).findBy({ id: In(rows.map((r) => r.id)) });
    for (const d of claimed) this.build(d, true);
    return claimed.length;
  }

  /**
   * Renews this gateway's runner leases and claims eggs that no live gateway runs (never
   * claimed, released, or lapsed with a gateway that died); then runs what it holds.
   */
  async resumeRunning(): Promise<void> {
    if (this.stopped) return;
    const sentAt = performance.now();
    const now = this.clock.now();
    const held = await RUNNER_LEASE.claim<{ id: string; current_deployment_id: string }>(this.ds, {
      until: this.leaseFrom(now),
      now,
      holder: this.runnerId,
      returning: 'id, current_deployment_id',
    });
    this.armFence(sentAt);
    const want = new Map(held.map((r) => [r.id, r.current_deployment_id]));
    const stale = [...this.running].filter(([appId, r]) => want.get(appId) !== r.deploymentId).map(([appId]) => appId);
    const missing = [...want.keys()].filter((appId) => !this.running.has(appId));
    for (const appId of [...stale, ...missing]) await this.reconcile(appId);
  }

  /** Renews leases and claims eggs; asked again while it runs, it runs once more after. */
  private tick(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = true;
    this.track(async () => {
      try {
        do {
          this.tickAgain = false;
          await this.renewLeases().catch((err) => this.hooks.onError(err));
          await this.resumeRunning().catch((err) => this.hooks.onError(err));
        } while (this.tickAgain && !this.stopped);
      } finally {
        this.ticking = false;
      }
    });
  }

  /**
   * Stops every egg here unless the runner leases are renewed in time: a gateway cut off from the
   * database must stop writing before another may claim its eggs. Counted from when the last
   * successful renewal was sent, in real time, whatever the clock says.
   */
  private armFence(renewedAt = performance.now()): void {
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    if (this.stopped) return;
    const left = this.leaseMs * 0.8 - (performance.now() - renewedAt);
    this.fenceTimer = setTimeout(
      () => {
        if (this.running.size === 0 || this.stopped) return;
        this.hooks.onError(new Error(`runner leases not renewed for ${this.leaseMs * 0.8} ms: stopping ${this.running.size} egg(s) here`));
        for (const [appId, r] of [...this.running]) this.track(() => this.serially(appId, () => this.stopEgg(appId, r, 'detach')));
      },
      Math.max(0, left),
    );
    this.fenceTimer.unref();
  }

  private async renewLeases(): Promise<void> {
    await BUILD_LEASE.renew(this.ds, [...this.builds.keys()], this.leaseFrom(this.clock.now()));
  }

  private track(task: () => Promise<void>): void {
    void this.tasks.track(task().catch((err) => this.hooks.onError(err)));
  }

  /**
   * Stops running eggs and aborts builds, and releases their leases so that another gateway
   * resumes the builds and runs the eggs.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    await this.runnerEvents?.return(undefined);
    const interrupted = [...this.builds.keys()];
    for (const abort of this.builds.values()) abort.abort();
    // The eggs go on running for the next runner to adopt; only watching them stops here.
    for (const r of this.running.values()) r.egg.detach();
    const ran = this.running.size;
    this.running.clear();
    await this.tasks.settled();
    await this.writer.flush();
    // Every line of the eggs it ran is stored: the next runner continues their sequences. If the
    // database is unreachable now, the leases lapse instead.
    try {
      const released = await RUNNER_LEASE.release(this.ds, { holder: this.runnerId });
      if (ran > 0 || released.length > 0) this.pubsub.publish('RUNNERS', { kind: 'released', from: this.runnerId });
    } catch (err) {
      this.hooks.onError(err);
    }
    // Release the leases at once, so the next gateway to start resumes these builds.
    await BUILD_LEASE.release(this.ds, { ids: interrupted });
  }
}
