import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../clock';
import { AfterCommit, inTransaction } from '../../db/transaction';
import { NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { decodeCursor, isIntKey, Page, pageByIdDescSql, pageSize, toPage } from '../../db/paging';
import { entityRows } from '../../db/rows';
import { DIRECT, DirectDelivery, DirectSink, endWithConsumer, listenNow } from '../../bus/pubsub';
import { GatewayPubSub } from '../topics';
import { newId } from '../../ids';
import { BuildResult, EggSpec, Runtime } from '../../runtime/runtime.port';
import { SecretBox } from '../../secrets';
import type { Metrics } from '../../metrics';
import { App, effectiveMemoryMb, TIERS } from '../apps/app.entity';
import { AppsService, VISIBLE_APP_IDS, visibleAppIds } from '../apps/apps.service';
import { VolumesService } from '../volumes/volumes.service';
import { WebhooksService } from '../webhooks/webhooks.service';
import { Deployment, DeploymentStatus } from './deployment.entity';
import { DeploymentEvent } from './deployments.topics';
import { BuildSupervisor } from './deployments.supervisor';
import { LogLine, LogType } from './log-line.entity';
import { LogWriter } from './log-writer';
import { LogRetention } from './log-retention';
import { validateEnv } from './deploy-env';
import { validateImage } from './deploy-image';
import { SourcesService } from '../sources/sources.service';
import { LogFilter, matchesFilter, parseLogFilter } from './log-filter';
import { AppLogs, checkTail, LOG_PAGE_DEFAULT, LOG_PAGE_MAX, LogQuery, REPLAY_BATCH, whereLines } from './app-logs';
import { checkIdempotencyKey, claimIdempotencyKey, recordIdempotentResponse } from './idempotency';
import { logBatchStream, notStreamed, oneByOne, statusStream } from './log-stream';
import { deploymentSuffix, HostTarget, hostUrl } from '../apps/hosts';
import { AccessEvent } from '../accounts/access.topics';

/** Filters and page of a deployment list. */
type DeploymentListArgs = { status?: DeploymentStatus | null; first?: number | null; after?: string | null };
export { LOG_PAGE_DEFAULT, LOG_PAGE_MAX } from './app-logs';

export interface DeployInput {
  project: string;
  env?: Record<string, unknown> | null;
  /** A source of the egg to build; with neither this nor `image`, the egg's newest source. */
  source?: string | null;
  /** An image to run instead of building. */
  image?: string | null;
}

/** What the router serves for a host under the apps domain (null from `route`: nothing has that host). */
export type EggRoute =
  /** The egg's main host or a deployment's: `deploymentId` is what runs for it, null when nothing is live. */
  | { kind: 'egg'; slug: string; deploymentId: string | null; asleep: boolean; detail: string | null }
  /** A preview's host: what runs for it, once it is `ready`. */
  | { kind: 'preview'; slug: string; previewId: string; status: string; failureReason: string | null };

/** What a deployment builds or runs: an uploaded source, an image, or (an egg with no source yet) neither. */
interface Artefact {
  sourceId: string | null;
  image: string | null;
}

export interface DeploymentsDeps {
  ds: DataSource;
  clock: Clock;
  pubsub: GatewayPubSub;
  apps: AppsService;
  volumes: VolumesService;
  webhooks: WebhooksService;
  sources: SourcesService;
  box: SecretBox;
  runtime: Runtime;
  appsDomain: string;
  /** Log lines older than this many days are removed by `retention` (0: kept); default 30. */
  logRetentionDays?: number;
  leaseMs?: number;
  /** This gateway's identity (the event bus's origin); a new one when absent. */
  gatewayId?: string;
  onError: (err: unknown) => void;
  metrics?: Metrics;
}

export class DeploymentsService {
  readonly writer: LogWriter;
  readonly supervisor: BuildSupervisor;
  private readonly appLogReader: AppLogs;
  /** Removes log lines past HATCHERY_LOG_RETENTION_DAYS (the `logs-retention` job). */
  readonly retention: LogRetention;
  private readonly ds: DataSource;
  private readonly clock: Clock;

  constructor(private readonly deps: DeploymentsDeps) {
    this.ds = deps.ds;
    this.clock = deps.clock;
    this.retention = new LogRetention(deps.ds, deps.clock, deps.logRetentionDays ?? 30);
    this.writer = new LogWriter(deps.ds, deps.pubsub, deps.clock, {
      onError: deps.onError,
      metrics: deps.metrics,
      ensurePartitions: () => this.retention.ensurePartitions(),
    });
    this.appLogReader = new AppLogs({ ds: deps.ds, pubsub: deps.pubsub, apps: deps.apps });
    this.supervisor = new BuildSupervisor(
      deps.ds,
      deps.runtime,
      this.writer,
      deps.clock,
      {
        spec: (d) => this.spec(d),
        finish: (id, r) => this.finishBuild(id, r),
        wake: async (id) => (await this.applyEffectiveMemory(id))?.memoryMb ?? null,
        asleep: (id, idleSince) => this.markAsleep(id, idleSince),
        lastActive: async (id) => {
          const [row] = await this.ds.query<Array<{ last_request_at: Date | null }>>('SELECT last_request_at FROM deployments WHERE id = $1', [id]);
          return row?.last_request_at ?? null;
        },
        lastLineAt: (id, replica) => newestEggLineAt(this.ds, id, replica),
        onError: deps.onError,
      },
      deps.leaseMs ?? 30_000,
      deps.pubsub,
      deps.gatewayId,
    );
  }

  async start(): Promise<void> {
    // Lines need today's partition; the logs-retention job makes them ahead from then on.
    await this.retention.ensurePartitions();
    this.supervisor.start();
    await this.supervisor.reclaimOrphans();
    await this.supervisor.resumeRunning();
  }

  async stop(): Promise<void> {
    await this.supervisor.stop();
    await this.writer.close();
  }

  async deploy(actor: Actor, input: DeployInput, idempotencyKey?: string | null): Promise<Deployment> {
    const hasSource = input.source !== null && input.source !== undefined;
    if (hasSource && input.image !== null && input.image !== undefined) {
      const message = 'give either source or image, not both';
      throw new ValidationFailed([
        { field: 'source', message },
        { field: 'image', message },
      ]);
    }
    const env = validateEnv(input.env);
    const image = validateImage(input.image);
    checkIdempotencyKey(idempotencyKey);
    const app = await this.deps.apps.getVisible(actor, input.project);
    const request: unknown[] = [app.id, Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))];
    // Only when given, so keys recorded before deploys had them still match their retries.
    if (hasSource || image !== null) request.push(input.source ?? null, image);
    const digest = this.deps.box.digest(JSON.stringify(request));

    const { deployment, created } = await inTransaction(this.ds, async (tx, afterCommit) => {
      const now = this.clock.now();
      if (idempotencyKey) {
        const replay = await claimIdempotencyKey(tx, actor.user.id, idempotencyKey, digest, now);
        if (replay) return { deployment: replay, created: false };
      }
      const artefact = await this.artefact(tx, app.id, hasSource ? input.source! : null, image);
      const deployment = await this.insertDeployment(
        tx,
        app,
        actor.user.id,
        Object.keys(env).length ? this.deps.box.seal(JSON.stringify(env)) : null,
        Object.keys(env),
        artefact,
        now,
      );
      if (idempotencyKey) await recordIdempotentResponse(tx, actor.user.id, idempotencyKey, deployment);
      await this.announce(tx, afterCommit, deployment, app.slug);
      return { deployment, created: true };
    });
    if (created) this.supervisor.build(deployment);
    return deployment;
  }

  /**
   * What a deploy builds: the source asked for (it must be the egg's), the image, or else the
   * egg's newest source if it has one. The source is held until the deployment that references
   * it commits, so the prune job cannot take it meanwhile.
   */
  private async artefact(tx: EntityManager, appId: string, sourceId: string | null, image: string | null): Promise<Artefact> {
    if (image !== null) return { sourceId: null, image };
    if (sourceId !== null) return { sourceId: (await this.deps.sources.claimForDeploy(tx, appId, sourceId)).id, image: null };
    const latest = (await this.deps.sources.claimLatest(tx, appId))?.id ?? null;
    // The simulated runtime builds nothing, so it needs nothing; Docker needs something to build or run.
    if (latest === null && this.deps.runtime.kind === 'docker')
      throw ValidationFailed.field('source', 'the egg has no source yet: upload one (POST /v1/apps/{slug}/sources, or `hatch deploy`) or give an image');
    return { sourceId: latest, image: null };
  }

  /** A new BUILDING deployment of `app` with the egg's effective memory and volume, leased to this gateway. */
  private async insertDeployment(
    tx: EntityManager,
    app: App,
    userId: string,
    envSealed: string | null,
    envKeys: string[],
    artefact: Artefact,
    now: Date,
  ): Promise<Deployment> {
    const id = newId('dep', now);
    const deployment = tx.create(Deployment, {
      id,
      appId: app.id,
      status: DeploymentStatus.BUILDING,
      revision: 1,
      url: hostUrl({ kind: 'deployment', slug: app.slug, suffix: deploymentSuffix(id) }, this.deps.appsDomain),
      envSealed,
      envKeys: [...envKeys].sort(),
      sourceId: artefact.sourceId,
      image: artefact.image,
      memoryMb: effectiveMemoryMb(app),
      replicas: this.deps.apps.effectiveReplicas(app),
      volumeMb: await this.deps.volumes.mountedSizeMb(tx, app.id),
      failureReason: null,
      createdById: userId,
      leaseUntil: this.supervisor.leaseFrom(now),
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    });
    await tx.insert(Deployment, deployment);
    return deployment;
  }

  /** A new deployment with the same env, source or image as `id`, and the egg's memory and volume as they are now. */
  async redeploy(actor: Actor, id: string): Promise<Deployment> {
    const previous = await this.get(actor, id);
    const deployment = await inTransaction(this.ds, async (tx, afterCommit) => {
      const app = await tx.findOneByOrFail(App, { id: previous.appId });
      const artefact = previous.sourceId
        ? { sourceId: (await this.deps.sources.claimForDeploy(tx, app.id, previous.sourceId)).id, image: null }
        : { sourceId: null, image: previous.image };
      const d = await this.insertDeployment(tx, app, actor.user.id, previous.envSealed, previous.envKeys, artefact, this.clock.now());
      await this.announce(tx, afterCommit, d, app.slug);
      return d;
    });
    this.supervisor.build(deployment);
    return deployment;
  }

  /** Points the egg's main URL at an earlier live deployment again, without a rebuild. */
  async rollback(actor: Actor, slug: string, to: string): Promise<App> {
    const app = await this.deps.apps.getVisible(actor, slug);
    const target = await this.ds.getRepository(Deployment).findOneBy({ id: to, appId: app.id });
    if (!target) throw new NotFound('Deployment', to);
    if (target.status !== DeploymentStatus.LIVE) throw ValidationFailed.field('to', `is ${target.status}: only a live deployment can be rolled back to`);
    const updated = await inTransaction(this.ds, async (tx) => {
      const locked = await this.deps.apps.lock(tx, app.id);
      if (locked.currentDeploymentId === to) throw ValidationFailed.field('to', 'is already the current deployment');
      await this.makeCurrent(tx, app.id, to);
      locked.currentDeploymentId = to;
      return locked;
    });
    await this.supervisor.run(target);
    return updated;
  }

  /**
   * Points the egg at another deployment. Its energy metering starts now: the time it spent
   * not current was not running for this egg (and the deployment that was current paid for it).
   */
  private async makeCurrent(tx: EntityManager, appId: string, deploymentId: string | null): Promise<void> {
    await tx.update(App, { id: appId }, { currentDeploymentId: deploymentId });
    if (deploymentId) await tx.update(Deployment, { id: deploymentId }, { meteredUntil: this.clock.now() });
  }

  /** Restarts the egg's current deployment with the memory the egg should have now. */
  async restartApp(actor: Actor, slug: string): Promise<App> {
    const app = await this.deps.apps.getVisible(actor, slug);
    if (!app.currentDeploymentId) throw ValidationFailed.field('slug', 'has no live deployment to restart');
    const deployment = await this.applyEffectiveMemory(app.currentDeploymentId, { replicas: true });
    if (deployment) await this.supervisor.restart(deployment);
    return app;
  }

  /**
   * Records that a deployment now runs with its egg's effective memory (restart or wake) and, on a
   * restart (`replicas`), its effective replicas; returns it, null if it is gone.
   */
  async applyEffectiveMemory(deploymentId: string, opts: { replicas?: boolean } = {}): Promise<Deployment | null> {
    return inTransaction(this.ds, async (tx, afterCommit) => {
      const d = await tx.findOne(Deployment, { where: { id: deploymentId }, lock: { mode: 'pessimistic_write' } });
      if (!d) return null;
      const app = await tx.findOneByOrFail(App, { id: d.appId });
      const now = this.clock.now();
      d.memoryMb = effectiveMemoryMb(app);
      if (opts.replicas) d.replicas = this.deps.apps.effectiveReplicas(app);
      d.updatedAt = now;
      d.revision += 1;
      // It runs again from now: the time it slept is not metered, and counts as idle no longer.
      if (d.sleptAt) d.meteredUntil = new Date((d.meteredUntil ?? d.finishedAt ?? d.sleptAt).getTime() + Math.max(0, now.getTime() - d.sleptAt.getTime()));
      d.sleptAt = null;
      d.lastRequestAt = now;
      await tx.update(
        Deployment,
        { id: d.id },
        { memoryMb: d.memoryMb, replicas: d.replicas, updatedAt: now, revision: d.revision, meteredUntil: d.meteredUntil, sleptAt: null, lastRequestAt: now },
      );
      afterCommit(() => this.publish(d.id, { kind: 'status', deployment: d }));
      return d;
    });
  }

  /**
   * The runtime stopped the egg for being idle since `idleSince`: its energy is not metered from
   * now until it wakes. False (nothing recorded) if a request reached it after `idleSince`.
   */
  async markAsleep(id: string, idleSince: Date): Promise<boolean> {
    const [rows] = await this.ds.query<[unknown[], number]>(
      `UPDATE deployments SET slept_at = $2
        WHERE id = $1 AND slept_at IS NULL AND (last_request_at IS NULL OR last_request_at <= $3)
        RETURNING id`,
      [id, this.clock.now(), idleSince],
    );
    return rows.length > 0;
  }

  /** Wakes a sleeping deployment for a request: records it (with the memory the egg has now) and says what to start. */
  async wakeForRequest(id: string): Promise<EggSpec | null> {
    const d = await this.applyEffectiveMemory(id);
    return d ? this.spec(d) : null;
  }

  /**
   * What a host's first label reaches: `<slug>` the egg's current live deployment,
   * `<slug>--<suffix>` that deployment (served while it is the current one: only that one runs),
   * `<slug>--pr-<n>` that preview. Null when no egg, deployment or preview has the host.
   */
  async route(target: HostTarget): Promise<EggRoute | null> {
    if (target.kind === 'preview') {
      const [preview] = await this.ds.query<Array<{ id: string; slug: string; status: string; failure_reason: string | null }>>(
        'SELECT p.id, p.slug, p.status, p.failure_reason FROM previews p JOIN apps a ON a.id = p.app_id WHERE a.slug = $1 AND p.pr_number = $2',
        [target.slug, target.pr],
      );
      return preview ? { kind: 'preview', slug: preview.slug, previewId: preview.id, status: preview.status, failureReason: preview.failure_reason } : null;
    }
    type Row = { id: string | null; status: string | null; slept_at: Date | null; current: boolean };
    const [row] =
      target.kind === 'app'
        ? await this.ds.query<Row[]>(
            `SELECT d.id, d.status, d.slept_at, true AS current
               FROM apps a LEFT JOIN deployments d ON d.id = a.current_deployment_id WHERE a.slug = $1`,
            [target.slug],
          )
        : await this.ds.query<Row[]>(
            `SELECT d.id, d.status, d.slept_at, a.current_deployment_id IS NOT DISTINCT FROM d.id AS current
               FROM apps a JOIN deployments d ON d.app_id = a.id WHERE a.slug = $1 AND right(d.id, 8) = $2`,
            [target.slug, target.suffix],
          );
    if (!row) return null;
    const none = (detail: string): EggRoute => ({ kind: 'egg', slug: target.slug, deploymentId: null, asleep: false, detail });
    if (row.id === null) return none(`${target.slug} has no live deployment yet`);
    if (row.status !== DeploymentStatus.LIVE) return none(`deployment ${row.id} is ${row.status}`);
    if (!row.current) return none(`deployment ${row.id} is not ${target.slug}'s current one: only that one runs (roll back to serve this one)`);
    return { kind: 'egg', slug: target.slug, deploymentId: row.id, asleep: row.slept_at !== null, detail: null };
  }

  /** What the egg's current live deployment runs with (a cron run's image, env, memory, volume); null when none is live. */
  async liveSpec(appId: string): Promise<EggSpec | null> {
    const d = await this.ds
      .getRepository(Deployment)
      .createQueryBuilder('d')
      .innerJoin(App, 'a', 'a.current_deployment_id = d.id')
      .where('a.id = :appId AND d.status = :live', { appId, live: DeploymentStatus.LIVE })
      .getOne();
    return d ? this.spec(d) : null;
  }

  /**
   * Of these deployments, those the router may keep serving as it resolved them: each still its
   * egg's current one, LIVE and awake (one statement for all, however many hosts are promoted).
   */
  async stillRouted(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.ds.query<Array<{ id: string }>>(
      `SELECT d.id FROM deployments d JOIN apps a ON a.current_deployment_id = d.id
        WHERE d.id = ANY($1) AND d.status = $2 AND d.slept_at IS NULL`,
      [ids, DeploymentStatus.LIVE],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** The router passed requests to these deployments: they are not idle. */
  async touch(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.ds.query('UPDATE deployments SET last_request_at = $2 WHERE id = ANY($1) AND slept_at IS NULL', [ids, this.clock.now()]);
  }

  async get(actor: Actor, id: string): Promise<Deployment> {
    const d = await this.ds
      .getRepository(Deployment)
      .createQueryBuilder('d')
      .where('d.id = :id', { id })
      .andWhere(`d.app_id IN ${VISIBLE_APP_IDS}`, { viewerId: actor.user.id })
      .getOne();
    if (!d) throw new NotFound('Deployment', id);
    return d;
  }

  /** `withApp`, when given, is handed each listed deployment's egg with it, read in the same statement (the resolvers keep them for its fields). */
  async list(
    actor: Actor,
    args: DeploymentListArgs & { project?: string | null },
    withApp?: (app: App, deployment: Deployment) => void,
  ): Promise<Page<Deployment>> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (args.project !== null && args.project !== undefined) {
      where.push(`d.app_id = $${params.push((await this.deps.apps.getVisible(actor, args.project)).id)}`);
    } else {
      where.push(`d.app_id IN ${visibleAppIds(`$${params.push(actor.user.id)}`)}`);
    }
    if (args.status) where.push(`d.status = $${params.push(args.status)}`);
    const joined = withApp ? { rows: entityRows(this.ds, App, 'ja'), join: 'JOIN apps ja ON ja.id = d.app_id', each: withApp } : null;
    return pageByIdDescSql(this.ds, entityRows(this.ds, Deployment, 'd'), 'dep', { from: 'deployments d', where, params, joined }, args);
  }

  /** Deletes a deployment with its logs; the egg's main URL falls back to the newest live one left. */
  async delete(actor: Actor, id: string): Promise<string> {
    const deployment = await this.get(actor, id);
    let slug = '';
    const wasCurrent = await inTransaction(this.ds, async (tx, afterCommit) => {
      const app = await this.deps.apps.lock(tx, deployment.appId);
      slug = app.slug;
      const wasCurrent = app.currentDeploymentId === id;
      await tx.delete(Deployment, { id });
      if (wasCurrent) {
        const next = await tx.findOne(Deployment, {
          where: { appId: deployment.appId, status: DeploymentStatus.LIVE },
          order: { id: 'DESC' },
        });
        await this.makeCurrent(tx, deployment.appId, next?.id ?? null);
      }
      afterCommit(() => {
        this.supervisor.cancelEverywhere(id);
        this.publish(id, { kind: 'deleted', id });
      });
      return wasCurrent;
    });
    // Its container and image go now, whichever gateway ran it (they share the Docker host).
    await this.deps.runtime.discard({ slug, deploymentId: id }).catch(this.deps.onError);
    // The gateway running the egg, whichever it is, switches to the successor or stops.
    if (wasCurrent) await this.supervisor.changed(deployment.appId);
    return id;
  }

  /** An egg's logs, across its deployments (see AppLogs). */
  appLogs(app: App, q: LogQuery): Promise<Page<LogLine>> {
    return this.appLogReader.page(app, q);
  }

  /** An egg's stored lines after `since`, then its live ones across redeploys, in batches (see AppLogs.watch). */
  watchAppLogBatches(actor: Actor, slug: string, args: { since?: Date | null; q?: string | null }): Promise<AsyncIterableIterator<LogLine[]>> {
    return this.appLogReader.watch(actor, slug, args);
  }

  async logs(actor: Actor, deployment: Deployment, q: LogQuery): Promise<Page<LogLine>> {
    const filter = { type: q.type ?? null, since: q.since ?? null, until: q.until ?? null, match: parseLogFilter(q.q) };
    const tail = checkTail(q);
    if (tail !== null) {
      // The newest N, then in their order: the page ends at the newest line.
      const newest = await this.readLogs(deployment.id, { ...filter, afterSeq: 0, newestFirst: true }, tail);
      return toPage(newest.reverse(), tail, (l) => `seq:${l.seq}`);
    }
    const limit = pageSize(q.first, LOG_PAGE_MAX, LOG_PAGE_DEFAULT);
    const after = decodeCursor(q.after, (k) => isIntKey(k, 'seq'));
    const rows = await this.readLogs(deployment.id, { ...filter, afterSeq: after ? Number(after.slice(4)) : 0, newestFirst: false }, limit + 1);
    return toPage(rows, limit, (l) => `seq:${l.seq}`);
  }

  private readLogs(
    deploymentId: string,
    q: { afterSeq: number; type: LogType | null; since: Date | null; until: Date | null; newestFirst: boolean; match?: LogFilter | null },
    limit: number,
  ): Promise<LogLine[]> {
    const qb = this.ds
      .getRepository(LogLine)
      .createQueryBuilder('l')
      .where('l.deployment_id = :deploymentId AND l.seq > :afterSeq', { deploymentId, afterSeq: q.afterSeq })
      .orderBy('l.seq', q.newestFirst ? 'DESC' : 'ASC')
      .limit(limit);
    return whereLines(qb, q).getMany();
  }

  /**
   * Listens to the deployment's events, then reads it (as the caller may see it): a change
   * committed meanwhile is in the row or among the events, never in neither.
   */
  private async listenThenGet(actor: Actor, id: string, weigh?: (e: DeploymentEvent) => number) {
    const events = listenNow(this.deps.pubsub, 'DEPLOYMENT', id, undefined, weigh, notStreamed);
    // The subscriber losing sight of the egg (on any gateway) is an event of the stream too,
    // listened to before the first check so no removal falls between the two.
    const viewerId = actor.user.id;
    let appId: string | null = null;
    const onAccess = (e: Event) => {
      const access = (e as CustomEvent<AccessEvent>).detail;
      const lost = access.kind === 'access-lost' && access.userId === viewerId && (appId === null || access.appId === appId);
      if (lost || access.kind === 'resync') events.push({ kind: 'access' });
    };
    this.deps.pubsub.target.addEventListener('ACCESS', onAccess);
    events.onClose(() => this.deps.pubsub.target.removeEventListener('ACCESS', onAccess));
    try {
      const deployment = await this.get(actor, id);
      appId = deployment.appId;
      return { events, deployment };
    } catch (err) {
      await events.close();
      throw err;
    }
  }

  /**
   * The deployment as it is now, if it still exists; null once deleted. Throws NotFound when the
   * subscriber can no longer see its egg (a stream then ends with NOT_FOUND).
   */
  private async stillVisible(actor: Actor, id: string): Promise<Deployment | null> {
    const row = await this.ds.getRepository(Deployment).findOneBy({ id });
    if (!row) return null;
    await this.deps.apps.getVisibleById(actor, row.appId).catch((err: unknown) => {
      throw err instanceof NotFound ? new NotFound('Deployment', id) : err;
    });
    return row;
  }

  /** The current state at once, then every change; ends when the deployment is deleted. */
  async watchStatus(actor: Actor, id: string): Promise<AsyncIterable<Deployment>> {
    const { events, deployment } = await this.listenThenGet(actor, id);
    return endWithConsumer(statusStream(deployment, { events, check: () => this.stillVisible(actor, id) }), events);
  }

  /** Stored lines after `since`, then live ones, one line at a time (see `watchLogBatches`). */
  async watchLogs(actor: Actor, id: string, type: LogType | null, since: Date | null, q: string | null = null): Promise<AsyncIterable<LogLine>> {
    return oneByOne(await this.watchLogBatches(actor, id, type, since, q));
  }

  /** Stored lines after `since`, then live ones, in batches (see `logBatchStream`). */
  async watchLogBatches(
    actor: Actor,
    id: string,
    type: LogType | null,
    since: Date | null,
    q: string | null = null,
  ): Promise<AsyncIterableIterator<LogLine[]>> {
    // A bad filter is refused before anything is listened to.
    const match = parseLogFilter(q);
    // A subscriber may fall behind by so many lines, however they are batched.
    const { events, deployment } = await this.listenThenGet(actor, id, (e) => (e.kind === 'lines' ? e.lines.length : 1));
    const direct: { sink: DirectSink<LogLine[]> | null } = { sink: null };
    const stream = logBatchStream({
      events,
      direct,
      check: () => this.stillVisible(actor, id),
      read: (afterSeq) => this.readLogs(id, { afterSeq, type, since, until: null, newestFirst: false, match }, REPLAY_BATCH),
      pageSize: REPLAY_BATCH,
      type,
      since,
      match: match ? (line) => matchesFilter(match, line) : null,
      buildOver: deployment.status !== DeploymentStatus.BUILDING,
    });
    const directly: DirectDelivery<LogLine[]> = { [DIRECT]: (sink) => void (direct.sink = sink) };
    return Object.assign(endWithConsumer(stream, events), directly);
  }

  /** building → live | failed. A live deployment newer than the egg's current one becomes current. */
  async finishBuild(id: string, result: BuildResult): Promise<Deployment | null> {
    return inTransaction(this.ds, async (tx, afterCommit) => {
      // The egg's row before the deployment's, the order delete and rollback take them in: the
      // other way round, deleting a deployment as its build ended deadlocked (a 500).
      const [target]: Array<{ app_id: string }> = await tx.query('SELECT app_id FROM deployments WHERE id = $1', [id]);
      if (!target) return null;
      await tx.query('SELECT 1 FROM apps WHERE id = $1 FOR NO KEY UPDATE', [target.app_id]);
      const d = await tx.findOne(Deployment, { where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!d || d.status !== DeploymentStatus.BUILDING) return null;
      const now = this.clock.now();
      d.status = result.ok ? DeploymentStatus.LIVE : DeploymentStatus.FAILED;
      d.failureReason = result.ok ? null : result.reason;
      d.updatedAt = now;
      d.finishedAt = now;
      d.leaseUntil = null;
      const [[row]] = await tx.query<[Array<{ revision: number }>, number]>(
        `UPDATE deployments SET status = $2, failure_reason = $3, updated_at = $4, finished_at = $4, lease_until = NULL,
                revision = revision + 1
          WHERE id = $1 RETURNING revision`,
        [id, d.status, d.failureReason, now],
      );
      d.revision = row.revision;
      const app = await tx.findOneByOrFail(App, { id: d.appId });
      await this.announce(tx, afterCommit, d, app.slug);
      if (!result.ok) return null;
      const promoted = await tx.query<[unknown[], number]>(
        `UPDATE apps SET current_deployment_id = $1
          WHERE id = $2 AND (current_deployment_id IS NULL OR current_deployment_id < $1)
          RETURNING id`,
        [id, d.appId],
      );
      return promoted[0].length > 0 ? d : null;
    });
  }

  /** What the runtime needs to build or run a deployment. */
  private async spec(d: Deployment): Promise<EggSpec> {
    const app = await this.ds.getRepository(App).findOneByOrFail({ id: d.appId });
    const env = d.envSealed ? (JSON.parse(this.deps.box.open(d.envSealed)) as Record<string, string>) : {};
    const sourceId = d.sourceId;
    return {
      deploymentId: d.id,
      slug: app.slug,
      env,
      memoryMb: d.memoryMb,
      replicas: d.replicas,
      sleeps: TIERS[app.tier].sleeps,
      image: d.image,
      volume: d.volumeMb !== null ? { sizeMb: d.volumeMb } : null,
      source: sourceId ? async () => (await this.deps.sources.open(sourceId)).stream : null,
      asleep: d.sleptAt !== null,
    };
  }

  /**
   * A status change goes to subscribers after commit, and to the egg's webhooks as a `deploy`
   * event written in this same transaction (the outbox), so a crash cannot lose it.
   */
  private async announce(tx: EntityManager, afterCommit: AfterCommit, d: Deployment, slug: string): Promise<void> {
    const queued = await this.deps.webhooks.enqueue(tx, d.appId, 'deploy', {
      deployment: { id: d.id, status: d.status, url: d.url, created_at: d.createdAt.toISOString() },
      project: slug,
    });
    afterCommit(() => {
      this.publish(d.id, { kind: 'status', deployment: d });
      if (queued) this.deps.webhooks.wake();
    });
  }

  private publish(id: string, event: DeploymentEvent): void {
    this.deps.pubsub.publish('DEPLOYMENT', id, event);
  }
}

/**
 * When the newest stored runtime line the egg itself wrote was written: of replica `replica` (from
 * 1), or of any replica. The platform's lines (request lines, notes, cron runs) are left out: they
 * carry the gateway's time and may be stored ahead of container lines written before them. Lines
 * stored before lines named their replica count where none does (then the egg's had a stream).
 */
export async function newestEggLineAt(ds: DataSource, deploymentId: string, replica?: number): Promise<Date | null> {
  const [row] = await ds.query<Array<{ at: Date | null }>>(
    // (Without a replica, `replica = replica`: any line that names one.)
    `SELECT coalesce(max(timestamp) FILTER (WHERE replica = coalesce($2::smallint, replica)),
                     max(timestamp) FILTER (WHERE replica IS NULL AND stream IS NOT NULL)) AS at
       FROM log_lines WHERE deployment_id = $1 AND type = 'runtime'`,
    [deploymentId, replica ?? null],
  );
  return row?.at ?? null;
}
