import { EntityManager } from 'typeorm';
import { ValidationFailed } from '../../errors';
import { Deployment } from './deployment.entity';
import { deploymentFromJson, deploymentToJson } from './deployments.topics';
import { IdempotencyKey } from './idempotency-key.entity';

/**
 * `Idempotency-Key` for deploys (Stripe's rules): per account, kept 24 hours; a retry with the
 * same key and the same request gets the first response instead of a second deployment; the same
 * key with another request is refused.
 */
const TTL_MS = 24 * 3600 * 1000;

export function checkIdempotencyKey(key: string | null | undefined): void {
  if (key !== undefined && key !== null && (key.length < 1 || key.length > 255)) {
    throw ValidationFailed.field('idempotencyKey', 'must be 1 to 255 characters');
  }
}

/**
 * Takes the key for this request, or returns the first response made under it. A concurrent
 * request with the same key waits on the row until the first one commits.
 */
export async function claimIdempotencyKey(tx: EntityManager, userId: string, key: string, digest: string, now: Date): Promise<Deployment | null> {
  await tx.query('DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND created_at < $3', [userId, key, new Date(now.getTime() - TTL_MS)]);
  const inserted = await tx.query<unknown[]>(
    `INSERT INTO idempotency_keys (user_id, key, request_digest, response, created_at)
     VALUES ($1, $2, $3, '{}', $4) ON CONFLICT DO NOTHING RETURNING key`,
    [userId, key, digest, now],
  );
  if (inserted.length > 0) return null;
  const existing = await tx.getRepository(IdempotencyKey).findOneByOrFail({ userId, key });
  if (existing.requestDigest !== digest) {
    throw ValidationFailed.field('idempotencyKey', 'was already used with a different request body');
  }
  return deploymentFromJson(existing.response);
}

/** What a retry under the key gets back, written in the transaction that made it. */
export async function recordIdempotentResponse(tx: EntityManager, userId: string, key: string, deployment: Deployment): Promise<void> {
  await tx.query('UPDATE idempotency_keys SET response = $1 WHERE user_id = $2 AND key = $3', [JSON.stringify(deploymentToJson(deployment)), userId, key]);
}
