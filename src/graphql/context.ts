import type { Actor } from '../modules/accounts/actor';
import { Clock } from '../clock';
import type { Services } from '../services';
import { Loaders } from './loaders';

/**
 * What every resolver gets: the caller (an authenticated actor: there is no anonymous GraphQL),
 * per-operation loaders, the clock, and the services resolvers call into (one set per gateway).
 */
export interface Context {
  services: Services;
  actor: Actor;
  /** When the caller's token stops working; null: never (unless revoked). */
  tokenExpiresAt: Date | null;
  loaders: Loaders;
  clock: Clock;
  requestId: string;
}
