import type { User } from './user.entity';

/**
 * Who is acting: an authenticated account and the API token it presented. Services take this,
 * never a transport's context (Directus's `accountability`, immich's `AuthDto`): REST, GraphQL
 * over HTTP and graphql-ws all authenticate first, then call services with the same actor.
 */
export interface Actor {
  readonly user: User;
  readonly tokenId: string;
}
