import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../clock';
import { LimitExceeded, NotFound, ValidationFailed } from '../../errors';
import type { Actor } from './actor';
import { Page, pageByIdDesc } from '../../db/paging';
import { newId } from '../../ids';
import { hashToken, newToken } from '../../secrets';
import { pgCode } from '../../db/transaction';
import { ApiToken } from './api-token.entity';
import { User } from './user.entity';
import { entityRows, readArrays } from '../../db/rows';
import { prepared } from '../../db/guarded-client';
import { AccessEvent } from './access.topics';

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_TOKEN_DAYS = 3650;
/** last_used_at is written at most this often per token, so reads stay reads. */
const LAST_USED_GRANULARITY_MS = 60_000;

/** A token's lookup, kept for a moment (see TokenCacheOptions). */
interface CachedAuth {
  user: User;
  tokenId: string;
  tokenExpiresAt: Date | null;
  lastUsedAt: Date | null;
  /** performance.now() when it was read from the database. */
  readAt: number;
}

/**
 * Authenticated tokens, kept `ms` (0: not kept) so that a burst of requests on one token reads it
 * once. A revocation drops it at once on the gateway that revoked it and, through the bus, on the
 * others; when the bus is down (`usable` false) nothing is kept, and what was kept meanwhile is
 * forgotten when it is back (`resync`). So a token revoked elsewhere while events are cut still
 * stops working within `ms`, as open graphql-ws connections do (their sweep).
 */
export interface TokenCacheOptions {
  ms: number;
  usable: () => boolean;
  /** Tokens kept at most; the oldest go first. */
  max?: number;
}

export interface CreatedToken {
  token: string;
  apiToken: ApiToken;
}

/** How an email is stored and looked up: trimmed, lower case (no validation). */
export const canonicalEmail = (email: string): string => email.trim().toLowerCase();

export interface AccountLimits {
  /** Live API tokens (neither revoked nor expired) per account. */
  tokensPerAccount: number;
}

/** Where a lost door is announced to every gateway (the event bus); nowhere for the admin command. */
export type AccessPublisher = (event: AccessEvent) => void;

export class AccountsService {
  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly limits: AccountLimits,
    private readonly announce: AccessPublisher = () => undefined,
    private readonly tokenCache: TokenCacheOptions = { ms: 0, usable: () => false },
  ) {}

  /** By token hash, oldest read first. */
  private readonly cached = new Map<string, CachedAuth>();
  /** Counts forget() calls: a lookup read before one is not kept (what it read may be revoked by now). */
  private forgets = 0;

  /** What the bus says of access (token-revoked, resync), for the token cache. */
  forget(event: AccessEvent): void {
    this.forgets++;
    if (event.kind === 'resync') this.cached.clear();
    if (event.kind !== 'token-revoked') return;
    for (const [hash, auth] of this.cached) if (auth.tokenId === event.tokenId) this.cached.delete(hash);
  }

  /**
   * Locks the account's row until the transaction ends: per-account caps (tokens, eggs) are
   * counted under it, so concurrent requests cannot count past them. NO KEY UPDATE, so rows that
   * merely reference the account (their foreign key checks) are not held up meanwhile.
   */
  async lockAccount(tx: EntityManager, userId: string): Promise<void> {
    const rows: unknown[] = await tx.query('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', [userId]);
    if (rows.length === 0) throw new NotFound('Account', userId);
  }

  normaliseEmail(email: string): string {
    const e = canonicalEmail(email);
    if (!EMAIL_RE.test(e) || e.length > 254) throw ValidationFailed.field('email', 'must be an email address');
    return e;
  }

  /** Operator path: a new account with a first token. */
  async createUser(email: string): Promise<{ user: User; token: string }> {
    const normalised = this.normaliseEmail(email);
    return this.ds.transaction(async (tx) => {
      const now = this.clock.now();
      const user = tx.create(User, { id: newId('usr', now), email: normalised, createdAt: now });
      try {
        await tx.insert(User, user);
      } catch (err) {
        if (pgCode(err) === '23505') throw ValidationFailed.field('email', `an account with email ${normalised} already exists`);
        throw err;
      }
      const { token } = await this.issueToken(tx, user.id, 'admin', null);
      return { user, token };
    });
  }

  async findUserByEmail(email: string): Promise<User | null> {
    return this.ds.getRepository(User).findOneBy({ email: this.normaliseEmail(email) });
  }

  /**
   * Resolves a bearer token to its user, or null for a missing, unknown, expired or revoked one.
   * `fresh`: read from storage even when the token is kept (see TokenCacheOptions).
   */
  async authenticate(token: string | null, opts: { fresh?: boolean } = {}): Promise<{ user: User; tokenId: string; tokenExpiresAt: Date | null } | null> {
    if (!token || !token.startsWith('hatch_') || token.length > 200) return null;
    const hash = hashToken(token);
    const auth = (opts.fresh ? null : this.keptAuth(hash)) ?? (await this.readAuth(hash));
    const now = this.clock.now();
    if (!auth || (auth.tokenExpiresAt && auth.tokenExpiresAt <= now)) return null;
    if (!auth.lastUsedAt || now.getTime() - auth.lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) {
      await this.ds.query('UPDATE api_tokens SET last_used_at = $2 WHERE id = $1', [auth.tokenId, now]);
      auth.lastUsedAt = now;
    }
    return { user: auth.user, tokenId: auth.tokenId, tokenExpiresAt: auth.tokenExpiresAt };
  }

  private keptAuth(hash: string): CachedAuth | null {
    const auth = this.cached.get(hash);
    if (!auth) return null;
    if (this.tokenCache.usable() && performance.now() - auth.readAt < this.tokenCache.ms) return auth;
    this.cached.delete(hash);
    return null;
  }

  private async readAuth(hash: string): Promise<CachedAuth | null> {
    // Every request without a kept lookup runs this: one plain statement, without TypeORM's query
    // building and mapping (a third of a list request's ORM time in the bench profile).
    const users = entityRows(this.ds, User, 'u');
    const readAt = performance.now();
    const forgets = this.forgets;
    // The token's three columns, then the user's.
    const [row] = await readArrays(
      this.ds,
      prepared(`SELECT t.id, t.expires_at, t.last_used_at, ${users.select}
         FROM api_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.token_hash = $1 AND t.revoked_at IS NULL`),
      [hash],
    );
    if (!row) {
      this.cached.delete(hash);
      return null;
    }
    const [tokenId, tokenExpiresAt, lastUsedAt] = row as [string, Date | null, Date | null];
    const auth = { user: users.map(row, 3), tokenId, tokenExpiresAt, lastUsedAt, readAt };
    // Kept only if the bus is up now: then a revocation made after the read reaches forget().
    if (this.tokenCache.ms > 0 && this.tokenCache.usable() && forgets === this.forgets) {
      if (this.cached.size >= (this.tokenCache.max ?? 10_000)) this.cached.delete(this.cached.keys().next().value!);
      this.cached.set(hash, auth);
    }
    return auth;
  }

  /** Which of these tokens still work (neither revoked nor expired). */
  async liveTokenIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows: Array<{ id: string }> = await this.ds.query(
      'SELECT id FROM api_tokens WHERE id = ANY($1) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)',
      [ids, this.clock.now()],
    );
    return new Set(rows.map((r) => r.id));
  }

  async createApiToken(actor: Actor, args: { name: string; expiresInDays?: number | null }): Promise<CreatedToken> {
    const name = args.name.trim();
    if (name.length < 1 || name.length > 100) throw ValidationFailed.field('name', 'must be 1 to 100 characters');
    const days = args.expiresInDays;
    if (days !== null && days !== undefined && (!Number.isInteger(days) || days < 1 || days > MAX_TOKEN_DAYS)) {
      throw ValidationFailed.field('expiresInDays', `must be an integer from 1 to ${MAX_TOKEN_DAYS}`);
    }
    return this.ds.transaction((tx) => this.issueToken(tx, actor.user.id, name, days ?? null));
  }

  /** Every token is made here, the admin's first one too, so each counts toward the cap. */
  private async issueToken(tx: EntityManager, userId: string, name: string, days: number | null): Promise<CreatedToken> {
    await this.lockAccount(tx, userId);
    const now = this.clock.now();
    const cap = this.limits.tokensPerAccount;
    // Only live tokens count: revoking or letting tokens expire always makes room again.
    const [{ live }]: Array<{ live: number }> = await tx.query(
      'SELECT count(*)::int AS live FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)',
      [userId, now],
    );
    if (live >= cap) throw new LimitExceeded('name', `an account has at most ${cap} live API tokens; revoke one first`);
    const token = newToken();
    const apiToken = tx.getRepository(ApiToken).create({
      id: newId('tok', now),
      userId,
      name,
      tokenHash: hashToken(token),
      lastFour: token.slice(-4),
      expiresAt: days ? new Date(now.getTime() + days * 86_400_000) : null,
      revokedAt: null,
      lastUsedAt: null,
      createdAt: now,
    });
    await tx.insert(ApiToken, apiToken);
    return { token, apiToken };
  }

  async listApiTokens(actor: Actor, args: { first?: number | null; after?: string | null }): Promise<Page<ApiToken>> {
    const qb = this.ds.getRepository(ApiToken).createQueryBuilder('t').where('t.user_id = :uid', { uid: actor.user.id });
    return pageByIdDesc(qb, 'tok', args);
  }

  async revokeApiToken(actor: Actor, id: string): Promise<ApiToken> {
    const repo = this.ds.getRepository(ApiToken);
    const token = await repo.findOneBy({ id, userId: actor.user.id });
    if (!token) throw new NotFound('API token', id);
    if (!token.revokedAt) {
      token.revokedAt = this.clock.now();
      await repo.update({ id }, { revokedAt: token.revokedAt });
    }
    // Open graphql-ws connections on this token, on every gateway, close now (again if already revoked).
    this.announce({ kind: 'token-revoked', tokenId: id });
    return token;
  }
}
