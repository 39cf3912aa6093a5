import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../clock';
import { inTransaction } from '../../db/transaction';
import { NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { Page, pageByIdDesc } from '../../db/paging';
import { newId } from '../../ids';
import { canonicalEmail } from '../accounts/accounts.service';
import { Tier } from '../apps/app.entity';
import { CONSUMPTION_ORDER, EnergyAccount, EnergyBucket, EnergyLedgerEntry, EnergyReason } from './energy.entity';

export interface Allowance {
  daily: number;
  weekly: number;
}

export interface EnergyBalance {
  daily: number;
  weekly: number;
  bonus: number;
  pack: number;
  total: number;
  depleted: boolean;
  dailyResetsAt: Date;
  weeklyResetsAt: Date;
}

export const PACK_MINUTES = 1000;
const MINUTE = 60_000;

export function nextDailyReset(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function nextWeeklyReset(now: Date): Date {
  const daysToMonday = (8 - now.getUTCDay()) % 7 || 7;
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + daysToMonday));
}

/**
 * Energy budget per account: four buckets, consumed daily → weekly → bonus → pack, none below
 * zero. Every change is a ledger row written in the same transaction as the balance, under the
 * account row's lock, so balances always equal the ledger's sums and concurrent use cannot
 * overdraw. Resets are applied at the first touch after their boundary.
 */
export class EnergyService {
  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly allowances: Record<Tier, Allowance>,
  ) {}

  /** The account's allowance: the best tier among the eggs it owns. */
  private async allowance(tx: EntityManager, userId: string): Promise<Allowance> {
    const rows = await tx.query<unknown[]>(`SELECT 1 FROM apps WHERE owner_id = $1 AND tier = $2 LIMIT 1`, [userId, Tier.ALWAYS_ON]);
    return this.allowances[rows.length ? Tier.ALWAYS_ON : Tier.FREE];
  }

  /** Locks the account row for this transaction, creating it and applying resets that are due. */
  async lockAccount(tx: EntityManager, userId: string): Promise<EnergyAccount> {
    const now = this.clock.now();
    let account = await tx.findOne(EnergyAccount, { where: { userId }, lock: { mode: 'pessimistic_write' } });
    if (!account) {
      const a = await this.allowance(tx, userId);
      const inserted = await tx.query<unknown[]>(
        `INSERT INTO energy_accounts (user_id, daily, weekly, bonus, pack, daily_reset_at, weekly_reset_at)
         VALUES ($1, $2, $3, 0, 0, $4, $5) ON CONFLICT DO NOTHING RETURNING user_id`,
        [userId, a.daily, a.weekly, nextDailyReset(now), nextWeeklyReset(now)],
      );
      if (inserted.length) {
        await this.record(tx, userId, EnergyBucket.DAILY, a.daily, a.daily, EnergyReason.GRANT, null);
        await this.record(tx, userId, EnergyBucket.WEEKLY, a.weekly, a.weekly, EnergyReason.GRANT, null);
      }
      account = await tx.findOneOrFail(EnergyAccount, { where: { userId }, lock: { mode: 'pessimistic_write' } });
    }
    const resetDaily = now >= account.dailyResetAt;
    const resetWeekly = now >= account.weeklyResetAt;
    if (resetDaily || resetWeekly) {
      const a = await this.allowance(tx, userId);
      if (resetDaily) {
        if (a.daily !== account.daily) await this.record(tx, userId, EnergyBucket.DAILY, a.daily - account.daily, a.daily, EnergyReason.DAILY_RESET, null);
        account.daily = a.daily;
        account.dailyResetAt = nextDailyReset(now);
      }
      if (resetWeekly) {
        if (a.weekly !== account.weekly)
          await this.record(tx, userId, EnergyBucket.WEEKLY, a.weekly - account.weekly, a.weekly, EnergyReason.WEEKLY_RESET, null);
        account.weekly = a.weekly;
        account.weeklyResetAt = nextWeeklyReset(now);
      }
      await tx.save(EnergyAccount, account);
    }
    return account;
  }

  private async record(tx: EntityManager, userId: string, bucket: EnergyBucket, delta: number, balanceAfter: number, reason: EnergyReason, ref: string | null) {
    const now = this.clock.now();
    await tx.insert(EnergyLedgerEntry, { id: newId('led', now), userId, bucket, delta, balanceAfter, reason, ref, createdAt: now });
  }

  private static view(a: EnergyAccount): EnergyBalance {
    const total = a.daily + a.weekly + a.bonus + a.pack;
    return {
      daily: a.daily,
      weekly: a.weekly,
      bonus: a.bonus,
      pack: a.pack,
      total,
      depleted: total === 0,
      dailyResetsAt: a.dailyResetAt,
      weeklyResetsAt: a.weeklyResetAt,
    };
  }

  async balance(actor: Actor): Promise<EnergyBalance> {
    return this.balanceOf(actor.user.id);
  }

  async balanceOf(userId: string): Promise<EnergyBalance> {
    return this.ds.transaction(async (tx) => EnergyService.view(await this.lockAccount(tx, userId)));
  }

  /** The balance inside the caller's transaction (the account row stays locked until it ends). */
  async balanceIn(tx: EntityManager, userId: string): Promise<EnergyBalance> {
    return EnergyService.view(await this.lockAccount(tx, userId));
  }

  /**
   * balanceIn for several accounts: one statement locks those that exist (in id order, so two
   * callers cannot deadlock); an account still to be created or reset goes through lockAccount.
   */
  async balancesIn(tx: EntityManager, userIds: string[]): Promise<Map<string, EnergyBalance>> {
    const ids = [...new Set(userIds)].sort();
    const balances = new Map<string, EnergyBalance>();
    if (ids.length === 0) return balances;
    const now = this.clock.now();
    const rows = await tx
      .getRepository(EnergyAccount)
      .createQueryBuilder('a')
      .where('a.user_id IN (:...ids)', { ids })
      .orderBy('a.user_id')
      .setLock('pessimistic_write')
      .getMany();
    for (const a of rows) if (now < a.dailyResetAt && now < a.weeklyResetAt) balances.set(a.userId, EnergyService.view(a));
    for (const id of ids) if (!balances.has(id)) balances.set(id, EnergyService.view(await this.lockAccount(tx, id)));
    return balances;
  }

  async ledger(actor: Actor, args: { first?: number | null; after?: string | null }): Promise<Page<EnergyLedgerEntry>> {
    const qb = this.ds.getRepository(EnergyLedgerEntry).createQueryBuilder('l').where('l.user_id = :uid', { uid: actor.user.id });
    return pageByIdDesc(qb, 'led', args);
  }

  /** Takes up to `minutes` in consumption order; returns what was taken and whether it ran out. */
  async consume(tx: EntityManager, userId: string, minutes: number, reason: EnergyReason, ref: string | null): Promise<{ taken: number; depleted: boolean }> {
    const account = await this.lockAccount(tx, userId);
    let left = minutes;
    for (const bucket of CONSUMPTION_ORDER) {
      const take = Math.min(left, account[bucket]);
      if (take <= 0) continue;
      account[bucket] -= take;
      left -= take;
      await this.record(tx, userId, bucket, -take, account[bucket], reason, ref);
    }
    if (left < minutes) await tx.save(EnergyAccount, account);
    return { taken: minutes - left, depleted: EnergyService.view(account).depleted };
  }

  /** Adds minutes to a bucket (a purchase, a bonus). */
  async credit(tx: EntityManager, userId: string, bucket: EnergyBucket, minutes: number, reason: EnergyReason, ref: string | null): Promise<void> {
    const account = await this.lockAccount(tx, userId);
    account[bucket] += minutes;
    await this.record(tx, userId, bucket, minutes, account[bucket], reason, ref);
    await tx.save(EnergyAccount, account);
  }

  /** Operator path: sets the given buckets to exact values. */
  async setBuckets(email: string, values: Partial<Record<EnergyBucket, number>>): Promise<EnergyBalance> {
    for (const [bucket, v] of Object.entries(values)) {
      if (!Number.isSafeInteger(v) || v < 0) throw ValidationFailed.field(bucket, 'must be a whole number of minutes, 0 or more');
    }
    return inTransaction(this.ds, async (tx) => {
      const [user] = await tx.query<Array<{ id: string }>>('SELECT id FROM users WHERE email = $1', [canonicalEmail(email)]);
      if (!user) throw new NotFound('Account', email);
      const account = await this.lockAccount(tx, user.id);
      for (const bucket of CONSUMPTION_ORDER) {
        const v = values[bucket];
        if (v === undefined || v === account[bucket]) continue;
        await this.record(tx, user.id, bucket, v - account[bucket], v, EnergyReason.OPERATOR, null);
        account[bucket] = v;
      }
      await tx.save(EnergyAccount, account);
      return EnergyService.view(account);
    });
  }

  /**
   * Charges each egg's current live deployment one minute per whole minute it has run since it
   * was last metered; not while it sleeps (a wake moves `metered_until` past the sleep). Run by a job every minute; catching up after a pause charges the gap.
   */
  async meter(): Promise<number> {
    const now = this.clock.now();
    const due: Array<{ id: string }> = await this.ds.query(
      `SELECT d.id FROM apps a JOIN deployments d ON d.id = a.current_deployment_id
        WHERE d.status = 'live' AND d.slept_at IS NULL AND COALESCE(d.metered_until, d.finished_at) <= $1`,
      [new Date(now.getTime() - MINUTE)],
    );
    let charged = 0;
    for (const { id } of due) {
      charged += await inTransaction(this.ds, async (tx) => {
        const [d] = await tx.query<Array<{ id: string; owner_id: string; since: Date; replicas: number }>>(
          `SELECT d.id, a.owner_id, COALESCE(d.metered_until, d.finished_at) AS since, d.replicas
             FROM deployments d JOIN apps a ON a.id = d.app_id
            WHERE d.id = $1 AND d.status = 'live' AND d.slept_at IS NULL FOR UPDATE OF d`,
          [id],
        );
        if (!d) return 0;
        const minutes = Math.floor((now.getTime() - new Date(d.since).getTime()) / MINUTE);
        if (minutes < 1) return 0;
        // Each replica runs, and is metered, for the whole time.
        await this.consume(tx, d.owner_id, minutes * d.replicas, EnergyReason.DEPLOYMENT, id);
        await tx.query('UPDATE deployments SET metered_until = $2 WHERE id = $1', [id, new Date(new Date(d.since).getTime() + minutes * MINUTE)]);
        return minutes * d.replicas;
      });
    }
    return charged;
  }
}
