import { DataSource } from 'typeorm';
import { Clock } from '../clock';
import { Unauthenticated } from '../errors';
import { Services } from '../services';
import { Context } from './context';
import { createLoaders } from './loaders';

export interface ContextFactory {
  /**
   * A context for the bearer credentials of a request or connection; throws Unauthenticated.
   * `fresh`: the token is read from storage, never from the token cache.
   */
  authenticate(authorization: unknown, requestId: string, opts?: { fresh?: boolean }): Promise<Context>;
  /** The same caller with fresh loaders, for each operation on a long-lived connection. */
  renew(ctx: Context): Context;
}

const BEARER_RE = /^Bearer\s+(\S+)\s*$/i;

/** The token a request presents, without checking it; null when there is none. */
export function credentialOf(authorization: unknown): string | null {
  return typeof authorization === 'string' ? (BEARER_RE.exec(authorization)?.[1] ?? null) : null;
}

/** The Authorization value of a graphql-ws `connection_init` payload (either capitalisation). */
export function connectionAuthorization(params: Record<string, unknown> | undefined | null): unknown {
  return params?.authorization ?? params?.Authorization;
}

/** One way to turn credentials into a Context, for HTTP GraphQL, graphql-ws and REST alike. */
export function contextFactory(deps: { services: Services; ds: DataSource; clock: Clock }): ContextFactory {
  return {
    renew: (ctx) => ({ ...ctx, loaders: createLoaders(deps.ds) }),
    authenticate: async (authorization, requestId, opts) => {
      const token = credentialOf(authorization);
      if (token === null) throw new Unauthenticated(authorization ? 'The Authorization header must be "Bearer <token>"' : 'Missing bearer token');
      const auth = await deps.services.accounts.authenticate(token, opts);
      if (!auth) throw new Unauthenticated('The token is unknown, expired or revoked');
      return {
        services: deps.services,
        actor: { user: auth.user, tokenId: auth.tokenId },
        tokenExpiresAt: auth.tokenExpiresAt,
        loaders: createLoaders(deps.ds),
        clock: deps.clock,
        requestId,
      };
    },
  };
}
