import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction } from '../../db/transaction';
import { LimitExceeded, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { Runtime } from '../../runtime/runtime.port';
import { TIERS } from '../apps/app.entity';
import { AppsService } from '../apps/apps.service';
import { Volume, VOLUME_GRACE_MS, VolumeStatus } from './volume.entity';

export interface VolumeChange {
  created: boolean;
  volume: Volume;
}

/**
 * The volume state machine of the service document: none → active (provision); active →
 * grace_deleting (DELETE) → erased after 7 days, or back to active (POST restores it);
 * active | grace_deleting → deleted at once (DELETE ?now=true).
 */
export class VolumesService {
  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly runtime: Runtime,
  ) {}

  /** Provisions (created) or resizes, restoring a volume in its grace period. */
  async provision(actor: Actor, slug: string, input: { sizeMb: number }): Promise<VolumeChange> {
    const app = await this.apps.getVisible(actor, slug);
    const { sizeMb } = input;
    if (!Number.isInteger(sizeMb) || sizeMb < 1) throw ValidationFailed.field('sizeMb', 'must be an integer of at least 1');
    const cap = TIERS[app.tier].volumeCapMb;
    if (sizeMb > cap) throw new LimitExceeded('sizeMb', `exceeds the ${app.tier} tier’s cap of ${cap} MB`);
    return inTransaction(this.ds, async (tx) => {
      await this.apps.lock(tx, app.id);
      const now = this.clock.now();
      const existing = await tx.findOneBy(Volume, { appId: app.id });
      if (existing) {
        Object.assign(existing, { sizeMb, status: VolumeStatus.ACTIVE, eraseAt: null, updatedAt: now });
        await tx.update(Volume, { appId: app.id }, { sizeMb, status: VolumeStatus.ACTIVE, eraseAt: null, updatedAt: now });
        return { created: false, volume: existing };
      }
      const volume = tx.create(Volume, { appId: app.id, sizeMb, status: VolumeStatus.ACTIVE, eraseAt: null, createdAt: now, updatedAt: now });
      await tx.insert(Volume, volume);
      return { created: true, volume };
    });
  }

  async get(actor: Actor, slug: string): Promise<Volume> {
    const app = await this.apps.getVisible(actor, slug);
    const volume = await this.ds.getRepository(Volume).findOneBy({ appId: app.id });
    if (!volume) throw new NotFound('Volume of egg', slug);
    return volume;
  }

  /** Without `now`: detaches it and erases it after the grace period. With: erases it at once (null). */
  async delete(actor: Actor, slug: string, now: boolean): Promise<Volume | null> {
    const app = await this.apps.getVisible(actor, slug);
    const erased = await inTransaction(this.ds, async (tx) => {
      const volume = await tx.findOne(Volume, { where: { appId: app.id }, lock: { mode: 'pessimistic_write' } });
      if (!volume) throw new NotFound('Volume of egg', slug);
      if (now) {
        // Erased before the row goes: if the runtime fails, the volume is still there to retry.
        await this.runtime.eraseVolume(app.slug);
        await tx.delete(Volume, { appId: app.id });
        return null;
      }
      if (volume.status === VolumeStatus.ACTIVE) {
        const at = this.clock.now();
        Object.assign(volume, { status: VolumeStatus.GRACE_DELETING, eraseAt: new Date(at.getTime() + VOLUME_GRACE_MS), updatedAt: at });
        await tx.update(Volume, { appId: app.id }, { status: volume.status, eraseAt: volume.eraseAt, updatedAt: at });
      }
      return volume;
    });
    return erased;
  }

  /**
   * Erases every volume whose grace period is over; returns how many. Run by a job, on any number
   * of gateways at once. Each volume is erased and its row deleted in one transaction, the row
   * locked meanwhile: the row goes only once the data is gone, so an erasure that fails (or a
   * gateway that dies mid-erasure) leaves the volume due for the next run, and two gateways never
   * erase the same volume. After a failure the others are still erased; then the run fails.
   */
  async eraseExpired(): Promise<number> {
    let erased = 0;
    const failed: string[] = [];
    let firstError: unknown = null;
    for (;;) {
      const outcome = await inTransaction(this.ds, async (tx) => {
        const [due]: Array<{ app_id: string; slug: string }> = await tx.query(
          `SELECT v.app_id, a.slug FROM volumes v JOIN apps a ON a.id = v.app_id
            WHERE v.status = $1 AND v.erase_at <= $2 AND NOT (v.app_id = ANY($3::text[]))
            ORDER BY v.erase_at, v.app_id LIMIT 1
            FOR UPDATE OF v SKIP LOCKED`,
          [VolumeStatus.GRACE_DELETING, this.clock.now(), failed],
        );
        if (!due) return null;
        try {
          await this.runtime.eraseVolume(due.slug);
        } catch (err) {
          return { failed: due.app_id, err };
        }
        await tx.query('DELETE FROM volumes WHERE app_id = $1', [due.app_id]);
        return { failed: null, err: null };
      });
      if (!outcome) break;
      if (outcome.failed === null) erased++;
      else {
        failed.push(outcome.failed);
        firstError ??= outcome.err;
      }
    }
    if (firstError) {
      throw new Error(`${failed.length} volume(s) could not be erased (${erased} were); they stay due for the next run`, { cause: firstError });
    }
    return erased;
  }

  usedMb(slug: string): Promise<number> {
    return this.runtime.volumeUsage(slug);
  }

  /**
   * Measures every volume that still holds data (a job, every minute), so a read finds a fresh
   * measurement (the Docker runtime measures all volumes at once and keeps it for
   * HATCHERY_VOLUME_USAGE_MAX_AGE_MS); returns the MB used per egg.
   */
  async measure(): Promise<Map<string, number>> {
    const rows = await this.ds.query<Array<{ slug: string }>>('SELECT a.slug FROM volumes v JOIN apps a ON a.id = v.app_id ORDER BY a.slug');
    const used = new Map<string, number>();
    for (const { slug } of rows) used.set(slug, await this.runtime.volumeUsage(slug));
    return used;
  }

  /** The size a deploy starting now mounts at /data: the active volume's, or none. */
  async mountedSizeMb(tx: EntityManager, appId: string): Promise<number | null> {
    const volume = await tx.findOneBy(Volume, { appId, status: VolumeStatus.ACTIVE });
    return volume?.sizeMb ?? null;
  }
}
