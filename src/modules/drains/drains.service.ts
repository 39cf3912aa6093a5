import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction } from '../../db/transaction';
import { LimitExceeded, NotFound } from '../../errors';
import { newId } from '../../ids';
import { SecretBox } from '../../secrets';
import type { Actor } from '../accounts/actor';
import { AppsService } from '../apps/apps.service';
import { AddressGuard } from '../webhooks/address-guard';
import { DrainShipper, ShipperOptions } from './drain-shipper';
import { formatOf, validateDrainUrl } from './drain-url';
import { LogDrain, LogDrainFormat, LogDrainStatus } from './log-drain.entity';

export const MAX_DRAINS_PER_EGG = 3;

export type DrainsOptions = Omit<ShipperOptions, 'onError' | 'gatewayId'> & { gatewayId: string; onError: (err: unknown) => void };

/**
 * Log drains: receivers of every log line of an egg. Registration lives here; shipping is the
 * `DrainShipper`'s, started with the gateway.
 */
export class DrainsService {
  readonly shipper: DrainShipper;

  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly box: SecretBox,
    private readonly guard: AddressGuard,
    opts: DrainsOptions,
  ) {
    this.shipper = new DrainShipper(ds, clock, box, guard, opts);
  }

  /**
   * Registers a drain (at most 3 per egg, counted under a lock on the egg's row). It ships the
   * lines stored after this moment: its cursors start at each deployment's last line now.
   * NDJSON drains get a signing secret, returned only here; syslog drains have none.
   */
  async create(actor: Actor, slug: string, input: { url: string; format?: LogDrainFormat | null }): Promise<{ logDrain: LogDrain; secret: string | null }> {
    const app = await this.apps.getVisible(actor, slug);
    const format = formatOf(typeof input.url === 'string' ? input.url : '', input.format);
    const url = await validateDrainUrl(input.url, format, this.guard);
    const secret = format === LogDrainFormat.NDJSON ? `whsec_${randomBytes(32).toString('base64')}` : null;
    const logDrain = await inTransaction(this.ds, async (tx) => {
      await this.apps.lock(tx, app.id);
      if ((await tx.countBy(LogDrain, { appId: app.id })) >= MAX_DRAINS_PER_EGG) {
        throw new LimitExceeded('url', `an egg has at most ${MAX_DRAINS_PER_EGG} log drains; delete one first`);
      }
      const now = this.clock.now();
      const drain = tx.create(LogDrain, {
        id: newId('drn', now),
        appId: app.id,
        url,
        format,
        status: LogDrainStatus.ACTIVE,
        disabledReason: null,
        lastError: null,
        lastDeliveredAt: null,
        secretSealed: secret ? this.box.seal(secret) : null,
        consecutiveFailures: 0,
        retryAt: null,
        leaseHolder: null,
        leaseUntil: null,
        createdAt: now,
      });
      await tx.insert(LogDrain, drain);
      // The starting point: every line stored so far counts as shipped.
      await tx.query(
        `INSERT INTO log_drain_cursors (drain_id, deployment_id, acked_seq)
         SELECT $1, d.id, m.seq FROM deployments d
          CROSS JOIN LATERAL (SELECT max(l.seq) AS seq FROM log_lines l WHERE l.deployment_id = d.id) m
          WHERE d.app_id = $2 AND m.seq IS NOT NULL`,
        [drain.id, app.id],
      );
      return drain;
    });
    this.shipper.wake();
    return { logDrain, secret };
  }

  async list(actor: Actor, slug: string): Promise<LogDrain[]> {
    const app = await this.apps.getVisible(actor, slug);
    return this.ds.getRepository(LogDrain).find({ where: { appId: app.id }, order: { id: 'DESC' } });
  }

  async delete(actor: Actor, slug: string, id: string): Promise<string> {
    const app = await this.apps.getVisible(actor, slug);
    const removed = await this.ds.getRepository(LogDrain).delete({ id, appId: app.id });
    if (!removed.affected) throw new NotFound('Log drain', id);
    return id;
  }

  start(): void {
    this.shipper.start();
  }

  stop(): Promise<void> {
    return this.shipper.stop();
  }
}
