import { LOCAL_ONLY, TopicCodec } from '../../bus/event-bus';

/**
 * Someone lost a door, on every gateway: a token stopped working, or an account can no longer
 * see an egg. Open graphql-ws connections and streams look at these to close or end at once.
 */
export type AccessEvent =
  /** The token was revoked: its connections close with 4401. */
  | { kind: 'token-revoked'; tokenId: string }
  /** The account can no longer see the egg (removed as a collaborator): its streams on it end. */
  | { kind: 'access-lost'; userId: string; appId: string }
  /** Events may have been missed (the bus was cut and is back): look at storage. */
  | { kind: 'resync' };

export type AccessTopics = {
  ACCESS: [event: AccessEvent];
};

const text = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 100;

export const accessCodecs = {
  ACCESS: {
    // A resync is this gateway's own news (its bus was cut off); it never travels.
    encode: (e) => (e.kind === 'resync' ? LOCAL_ONLY : e),
    decode(data) {
      const e = data as Record<string, unknown>;
      if (e?.kind === 'token-revoked' && text(e.tokenId)) return { kind: 'token-revoked', tokenId: e.tokenId };
      if (e?.kind === 'access-lost' && text(e.userId) && text(e.appId)) return { kind: 'access-lost', userId: e.userId, appId: e.appId };
      throw new Error(`access event of unknown kind: ${String(e?.kind)}`);
    },
    resync: () => ({ kind: 'resync' }),
  } satisfies TopicCodec<AccessEvent>,
};
