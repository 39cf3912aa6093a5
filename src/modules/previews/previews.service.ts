import { DataSource, In } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction, pgCode } from '../../db/transaction';
import { LimitExceeded, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { newId } from '../../ids';
import { ProvisionedResource, Runtime } from '../../runtime/runtime.port';
import { effectiveMemoryMb } from '../apps/app.entity';
import { AppsService } from '../apps/apps.service';
import { Preview, PreviewResource, PreviewResourceKind, PreviewStatus } from './preview.entity';
import { InFlight } from '../../in-flight';
import { hostLabel } from '../apps/hosts';
import { RowLease } from '../../db/lease';
import { App } from '../apps/app.entity';
import { SourcesService } from '../sources/sources.service';

/** A preview build's claim, as a deployment build's (see BuildSupervisor). */
const PREVIEW_BUILD_LEASE = new RowLease({ table: 'previews', until: 'lease_until', scope: "status = 'building'" });

export const MAX_PREVIEWS_PER_EGG = 3;

export interface PreviewChange {
  created: boolean;
  preview: Preview;
}

export interface PreviewsOptions {
  appsDomain: string;
  ttlMs: number;
  leaseMs?: number;
  onError: (err: unknown) => void;
}

/**
 * Preview environments: at most three per egg (held under the egg's row lock), each owning the
 * routes, database and addons the runtime made for it, all removed together on delete or expiry.
 */
export class PreviewsService {
  private readonly builds = new Map<string, AbortController>();
  private readonly tasks = new InFlight();
  private stopped = false;
  private readonly leaseMs: number;
  /** Renews the build leases of this gateway's builds while it has any. */
  private renewer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly runtime: Runtime,
    private readonly sources: SourcesService,
    private readonly opts: PreviewsOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 30_000;
  }

  /** Creates the preview of a pull request, or redeploys it and extends its expiry. */
  async upsert(actor: Actor, slug: string, input: { prNumber: number; source?: string | null }): Promise<PreviewChange> {
    const app = await this.apps.getVisible(actor, slug);
    const { prNumber } = input;
    if (!Number.isInteger(prNumber) || prNumber < 1) throw ValidationFailed.field('prNumber', 'must be an integer of at least 1');
    const sourceGiven = input.source ?? null;
    let provisioned: ProvisionedResource[] = [];
    try {
      const change = await inTransaction(this.ds, async (tx) => {
        await this.apps.lock(tx, app.id);
        const now = this.clock.now();
        const expiresAt = new Date(now.getTime() + this.opts.ttlMs);
        const leaseUntil = new Date(now.getTime() + this.leaseMs);
        // Held until commit, so the prune cannot remove it under the preview.
        const sourceId = sourceGiven === null ? null : (await this.sources.claimForDeploy(tx, app.id, sourceGiven)).id;
        const existing = await tx.findOneBy(Preview, { appId: app.id, prNumber });
        if (existing) {
          const change = {
            status: PreviewStatus.BUILDING,
            generation: existing.generation + 1,
            expiresAt,
            leaseUntil,
            updatedAt: now,
            sourceId,
            failureReason: null,
          };
          Object.assign(existing, change);
          await tx.update(Preview, { id: existing.id }, change);
          return { created: false, preview: existing };
        }
        const count = await tx.countBy(Preview, { appId: app.id });
        if (count >= MAX_PREVIEWS_PER_EGG) {
          throw new LimitExceeded('prNumber', `an egg has at most ${MAX_PREVIEWS_PER_EGG} previews; delete one first`);
        }
        // Its name stays `<egg>-pr-<n>`; its host has the `--` no egg's slug can hold.
        const previewSlug = `${app.slug}-pr-${prNumber}`;
        const host = `${hostLabel({ kind: 'preview', slug: app.slug, pr: prNumber })}.${this.opts.appsDomain}`;
        const preview = tx.create(Preview, {
          id: newId('prv', now),
          appId: app.id,
          prNumber,
          slug: previewSlug,
          url: `https://${host}`,
          status: PreviewStatus.BUILDING,
          failureReason: null,
          sourceId,
          generation: 1,
          leaseUntil,
          expiresAt,
          createdAt: now,
          updatedAt: now,
        });
        await tx.insert(Preview, preview);
        provisioned = await this.runtime.provisionPreview({ previewId: preview.id, slug: previewSlug, host });
        await tx.insert(
          PreviewResource,
          provisioned.map((r) => ({ id: `${preview.id}:${r.kind}:${r.name}`, previewId: preview.id, ...r, kind: r.kind as PreviewResourceKind })),
        );
        return { created: true, preview };
      });
      this.build(change.preview, app);
      return change;
    } catch (err) {
      // The preview was not recorded: what the runtime made for it must not outlive it.
      if (provisioned.length) await this.runtime.teardownPreview(provisioned);
      if (pgCode(err) === '23505') return this.upsert(actor, slug, input);
      throw err;
    }
  }

  async list(actor: Actor, slug: string): Promise<Preview[]> {
    const app = await this.apps.getVisible(actor, slug);
    return this.ds.getRepository(Preview).find({ where: { appId: app.id }, order: { id: 'DESC' } });
  }

  /** Tears the preview down: routes, database and addons first, then its record. */
  async delete(actor: Actor, slug: string, prNumber: number): Promise<boolean> {
    const app = await this.apps.getVisible(actor, slug);
    const preview = await this.ds.getRepository(Preview).findOneBy({ appId: app.id, prNumber });
    if (!preview || !(await this.teardown(preview))) throw new NotFound('Preview of pull request', `${slug}#${prNumber}`);
    return true;
  }

  /** Tears down every preview past its expiry; returns how many. Run by a job. */
  async expire(): Promise<number> {
    const now = this.clock.now();
    const due = await this.ds.getRepository(Preview).createQueryBuilder('p').where('p.expires_at <= :now', { now }).getMany();
    let torn = 0;
    for (const preview of due) if (await this.teardown(preview, now)) torn++;
    return torn;
  }

  /**
   * Under the egg's row lock, like upsert: an update that extended the preview meanwhile
   * (`expiredBy` given) keeps it alive, and an upsert waiting on the lock finds it gone.
   */
  private async teardown(preview: Preview, expiredBy?: Date): Promise<boolean> {
    return inTransaction(this.ds, async (tx) => {
      await this.apps.lock(tx, preview.appId);
      const current = await tx.findOneBy(Preview, { id: preview.id });
      if (!current || (expiredBy && current.expiresAt > expiredBy)) return false;
      this.builds.get(preview.id)?.abort();
      await this.runtime.teardownPreview(await tx.findBy(PreviewResource, { previewId: preview.id }));
      await tx.delete(Preview, { id: preview.id }); // its resource rows cascade
      return true;
    });
  }

  /**
   * Builds and starts the preview: the source it was given, else the egg's live deployment's image
   * (read when the build starts, so a redeploy of the preview picks up the egg's newest).
   */
  private build(preview: Preview, app: App): void {
    if (this.stopped) return;
    this.builds.get(preview.id)?.abort();
    const abort = new AbortController();
    this.builds.set(preview.id, abort);
    this.renewer ??= setInterval(() => void this.renewLeases().catch(this.opts.onError), Math.max(100, Math.floor(this.leaseMs / 3))).unref();
    const { id, generation, slug, sourceId, prNumber } = preview;
    const task = (async () => {
      try {
        const [egg] = await this.ds.query<Array<{ current_deployment_id: string | null }>>('SELECT current_deployment_id FROM apps WHERE id = $1', [app.id]);
        const result = await this.runtime.build(
          {
            deploymentId: id,
            slug,
            env: {},
            memoryMb: effectiveMemoryMb(app),
            sleeps: false,
            source: sourceId ? async () => (await this.sources.open(sourceId)).stream : null,
            fromDeployment: egg?.current_deployment_id ?? null,
            preview: { app: app.slug, prNumber },
          },
          () => undefined,
          abort.signal,
        );
        await this.ds.query(
          `UPDATE previews SET status = $3, failure_reason = $4, lease_until = NULL, updated_at = $5
            WHERE id = $1 AND generation = $2 AND status = 'building'`,
          [id, generation, result.ok ? PreviewStatus.READY : PreviewStatus.FAILED, result.ok ? null : result.reason, this.clock.now()],
        );
      } catch (err) {
        if (abort.signal.aborted) return;
        this.opts.onError(err);
        // Not left building for the next gateway to try again and again: failed, and a new POST retries.
        await this.ds
          .query(
            `UPDATE previews SET status = 'failed', failure_reason = $3, lease_until = NULL, updated_at = $4
              WHERE id = $1 AND generation = $2 AND status = 'building'`,
            [id, generation, 'the preview could not be built or started (the gateway logged why); update it to try again', this.clock.now()],
          )
          .catch(this.opts.onError);
      } finally {
        if (this.builds.get(id) === abort) this.builds.delete(id);
        if (this.builds.size === 0) this.stopRenewing();
      }
    })();
    void this.tasks.track(task);
  }

  /**
   * Makes sure what ready previews reach from their containers (their database and Redis relays)
   * is served on this host: after a gateway restart, by the next one. Run by the reclaim job.
   */
  async serveRunning(): Promise<void> {
    if (this.stopped) return;
    const rows = await this.ds.query<Array<{ id: string }>>(`SELECT id FROM previews WHERE status = 'ready'`);
    await this.runtime.servePreviews(rows.map((r) => r.id));
  }

  /** Resumes builds whose gateway stopped before they finished. */
  async reclaimOrphans(): Promise<number> {
    if (this.stopped) return 0;
    const now = this.clock.now();
    const rows = await PREVIEW_BUILD_LEASE.claim(this.ds, { until: new Date(now.getTime() + this.leaseMs), now });
    if (rows.length === 0) return 0;
    const previews = await this.ds.getRepository(Preview).find({ where: { id: In(rows.map((r) => r.id)) }, relations: { app: true } });
    for (const p of previews) this.build(p, p.app!);
    return previews.length;
  }

  /** A build longer than the lease keeps it: no other gateway's reclaim builds it again. */
  private async renewLeases(): Promise<void> {
    const ids = [...this.builds.keys()];
    if (ids.length === 0) return this.stopRenewing();
    await PREVIEW_BUILD_LEASE.renew(this.ds, ids, new Date(this.clock.now().getTime() + this.leaseMs));
  }

  private stopRenewing(): void {
    if (this.renewer) clearInterval(this.renewer);
    this.renewer = null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopRenewing();
    const interrupted = [...this.builds.keys()];
    for (const abort of this.builds.values()) abort.abort();
    await this.tasks.settled();
    await PREVIEW_BUILD_LEASE.release(this.ds, { ids: interrupted });
  }
}
