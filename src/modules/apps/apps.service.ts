import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../clock';
import { Forbidden, LimitExceeded, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from '../accounts/actor';
import { Page, pageByIdDesc } from '../../db/paging';
import { newId } from '../../ids';
import { pgCode } from '../../db/transaction';
import { AccessPublisher, AccountsService } from '../accounts/accounts.service';
import { App, DEFAULT_REPLICA_CAPS, effectiveReplicas, Tier, TIERS } from './app.entity';
import { Collaborator } from './collaborator.entity';
import { hostUrl, SLUG_RE, SLUG_RULE } from './hosts';

/** SQL: ids of the eggs the user in parameter `viewer` (`:viewerId`, `$1`) may see (owner or collaborator). */
export const visibleAppIds = (viewer: string) => `(SELECT a.id FROM apps a WHERE a.owner_id = ${viewer}
  UNION SELECT c.app_id FROM collaborators c WHERE c.user_id = ${viewer})`;

/** `visibleAppIds` for the query builder's `:viewerId`. */
export const VISIBLE_APP_IDS = visibleAppIds(':viewerId');

export class AppsService {
  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
    private readonly appsDomain: string,
    private readonly limits: { eggsPerAccount: number; replicas?: Record<Tier, number> },
    private readonly announce: AccessPublisher = () => undefined,
  ) {}

  async createApp(actor: Actor, input: { slug: string }): Promise<App> {
    if (!SLUG_RE.test(input.slug)) {
      throw ValidationFailed.field('slug', SLUG_RULE);
    }
    try {
      return await this.ds.transaction(async (tx) => {
        await this.accounts.lockAccount(tx, actor.user.id);
        const cap = this.limits.eggsPerAccount;
        if ((await tx.countBy(App, { ownerId: actor.user.id })) >= cap) {
          throw new LimitExceeded('slug', `an account may own at most ${cap} eggs`);
        }
        const now = this.clock.now();
        const app = tx.create(App, {
          id: newId('app', now),
          slug: input.slug,
          ownerId: actor.user.id,
          tier: Tier.FREE,
          memoryMb: null,
          currentDeploymentId: null,
          createdAt: now,
        });
        await tx.insert(App, app);
        return app;
      });
    } catch (err) {
      if (pgCode(err) === '23505') throw ValidationFailed.field('slug', `the slug "${input.slug}" is taken`);
      throw err;
    }
  }

  /** The egg if the caller owns it or collaborates on it; otherwise it does not exist for them. */
  async getVisible(actor: Actor, slug: string, tx: EntityManager = this.ds.manager): Promise<App> {
    const app = await tx
      .getRepository(App)
      .createQueryBuilder('a')
      .where('a.slug = :slug', { slug })
      .andWhere(`a.id IN ${VISIBLE_APP_IDS}`, { viewerId: actor.user.id })
      .getOne();
    if (!app) throw new NotFound('Egg', slug);
    return app;
  }

  /** `getVisible` by the egg's id. */
  async getVisibleById(actor: Actor, appId: string): Promise<App> {
    const app = await this.ds
      .getRepository(App)
      .createQueryBuilder('a')
      .where('a.id = :appId', { appId })
      .andWhere(`a.id IN ${VISIBLE_APP_IDS}`, { viewerId: actor.user.id })
      .getOne();
    if (!app) throw new NotFound('Egg', appId);
    return app;
  }

  /**
   * Locks the egg's row until the transaction ends: the one place per-egg limits (3 previews,
   * 3 webhooks, the crons cap, one volume) are serialised, so concurrent requests cannot count past them.
   */
  lock(tx: EntityManager, appId: string): Promise<App> {
    return tx.findOneOrFail(App, { where: { id: appId }, lock: { mode: 'pessimistic_write' } });
  }

  async list(actor: Actor, args: { first?: number | null; after?: string | null }): Promise<Page<App>> {
    const qb = this.ds.getRepository(App).createQueryBuilder('a').where(`a.id IN ${VISIBLE_APP_IDS}`, { viewerId: actor.user.id });
    return pageByIdDesc(qb, 'app', args);
  }

  /** The most replicas an egg of this tier may run. */
  replicasCap(tier: Tier): number {
    return (this.limits.replicas ?? DEFAULT_REPLICA_CAPS)[tier];
  }

  /** How many replicas the egg runs from its next deploy or restart. */
  effectiveReplicas(app: Pick<App, 'tier' | 'replicas'>): number {
    return effectiveReplicas(app, this.limits.replicas ?? DEFAULT_REPLICA_CAPS);
  }

  /**
   * The owner's overrides of the egg's memory and replicas; `null` clears one, an absent field
   * leaves it as it is (at least one must be given). Collaborators may not.
   */
  async updateResources(actor: Actor, slug: string, input: { memoryMb?: number | null; replicas?: number | null }): Promise<App> {
    const app = await this.getOwned(actor, slug, 'change its resources');
    const { memoryMb, replicas } = input;
    if (memoryMb === undefined && replicas === undefined) {
      throw ValidationFailed.field('memoryMb', 'give memoryMb (an integer of at least 64, or null to clear the override), replicas, or both');
    }
    if (memoryMb !== undefined && memoryMb !== null) {
      if (!Number.isInteger(memoryMb) || memoryMb < 64) throw ValidationFailed.field('memoryMb', 'must be an integer of at least 64');
      const cap = TIERS[app.tier].memoryCapMb;
      if (memoryMb > cap) throw new LimitExceeded('memoryMb', `exceeds the ${app.tier} tier’s cap of ${cap} MB`);
    }
    if (replicas !== undefined && replicas !== null) {
      if (!Number.isInteger(replicas) || replicas < 1) throw ValidationFailed.field('replicas', 'must be an integer of at least 1');
      const cap = this.replicasCap(app.tier);
      if (replicas > cap) throw new LimitExceeded('replicas', `exceeds the ${app.tier} tier’s cap of ${cap} ${cap === 1 ? 'replica' : 'replicas'}`);
    }
    const change: Partial<Pick<App, 'memoryMb' | 'replicas'>> = {};
    if (memoryMb !== undefined) change.memoryMb = memoryMb;
    if (replicas !== undefined) change.replicas = replicas;
    await this.ds.getRepository(App).update({ id: app.id }, change);
    Object.assign(app, change);
    return app;
  }

  /** The egg, for a change only its owner may make: a collaborator gets 403, anyone else 404. */
  private async getOwned(actor: Actor, slug: string, action: string): Promise<App> {
    const app = await this.getVisible(actor, slug);
    if (app.ownerId !== actor.user.id) throw new Forbidden(`Only the egg’s owner can ${action}`);
    return app;
  }

  async addCollaborator(actor: Actor, slug: string, email: string): Promise<App> {
    const app = await this.getOwned(actor, slug, 'add collaborators');
    const user = await this.accounts.findUserByEmail(email);
    if (!user) throw new NotFound('Account', email);
    if (user.id === app.ownerId) throw ValidationFailed.field('email', 'is the owner of this egg');
    await this.ds.createQueryBuilder().insert().into(Collaborator).values({ appId: app.id, userId: user.id, createdAt: this.clock.now() }).orIgnore().execute();
    return app;
  }

  async removeCollaborator(actor: Actor, slug: string, email: string): Promise<App> {
    const app = await this.getOwned(actor, slug, 'remove collaborators');
    const user = await this.accounts.findUserByEmail(email);
    const removed = user ? await this.ds.getRepository(Collaborator).delete({ appId: app.id, userId: user.id }) : null;
    if (!removed?.affected) throw new NotFound('Collaborator', email);
    // Their open streams on the egg, on every gateway, end now.
    this.announce({ kind: 'access-lost', userId: user!.id, appId: app.id });
    return app;
  }

  /** Operator path. */
  async setTier(slug: string, tier: string): Promise<App> {
    if (!Object.values(Tier).includes(tier as Tier)) {
      throw ValidationFailed.field('tier', `must be one of ${Object.values(Tier).join(', ')}`);
    }
    const repo = this.ds.getRepository(App);
    const app = await repo.findOneBy({ slug });
    if (!app) throw new NotFound('Egg', slug);
    app.tier = tier as Tier;
    await repo.update({ id: app.id }, { tier: app.tier });
    return app;
  }

  mainUrl(app: App): string {
    return hostUrl({ kind: 'app', slug: app.slug }, this.appsDomain);
  }
}
