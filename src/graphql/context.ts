import { Clock } from '../clock';
import { Unauthenticated } from '../errors';
import { User } from '../modules/accounts/user.entity';
import type { Services } from '../services';
import { Loaders } from './loaders';

/**
 * What every resolver and service call gets: the caller, per-operation loaders, the clock, and
 * the services resolvers call into (one set per gateway instance).
 */
export interface Context {
  services: Services;
  viewer: User | null;
  tokenId: string | null;
  /** When the caller's token stops working; null: never (unless revoked). */
  tokenExpiresAt: Date | null;
  loaders: Loaders;
  clock: Clock;
  requestId: string;
}

export function requireViewer(ctx: Context): User {
  if (!ctx.viewer) throw new Unauthenticated();
  return ctx.viewer;
}
