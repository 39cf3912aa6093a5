import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse, print } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ManualClock } from '../../src/clock';
import { CreateApiTokenDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';

const DAY_MS = 86_400_000;

const ViewerIdDocument = parse('query ViewerOverWs { viewer { id } }') as TypedDocumentNode<{ viewer: { id: string } }, Record<string, never>>;

interface Outcome {
  /** The close code, or null if the operation completed on an open connection. */
  closeCode: number | null;
  data: unknown[];
}

/**
 * Connects with `connectionParams` as the whole connection_init payload and runs one operation
 * over it; resolves with how the connection ended.
 */
function connect(url: string, connectionParams: Record<string, unknown>): Promise<Outcome> {
  return new Promise((resolve) => {
    const data: unknown[] = [];
    let closeCode: number | null = null;
    const client = createClient({
      url: url.replace(/^http/, 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams,
      retryAttempts: 0,
      lazy: true,
      on: { closed: (e) => (closeCode = (e as { code: number }).code) },
    });
    const finish = () => {
      void client.dispose();
      resolve({ closeCode, data });
    };
    client.subscribe({ query: print(ViewerIdDocument) }, { next: (v) => data.push(v.data), error: finish, complete: finish });
  });
}

/**
 * graphql-ws authenticates from connection_init like HTTP does from the Authorization header:
 * an expired token or an authorization that is not exactly "Bearer <token>" closes with 4401.
 */
describe('graphql-ws connection_init auth', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;
  let user: TestUser;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
    user = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  it('a good "Bearer <token>" connects and runs operations (the control case)', async () => {
    const res = await connect(t.url, { authorization: `Bearer ${user.token}` });
    expect(res.closeCode).toBeNull();
    expect(res.data).toEqual([{ viewer: { id: user.id } }]);
  });

  it('an expired token closes with 4401; one millisecond earlier it connects', async () => {
    const { token } = (await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'ws-day', expiresInDays: 1 })).createApiToken;

    clock.advance(DAY_MS - 1);
    const before = await connect(t.url, { authorization: `Bearer ${token}` });
    expect(before.closeCode).toBeNull();
    expect(before.data).toEqual([{ viewer: { id: user.id } }]);

    clock.advance(1);
    const after = await connect(t.url, { authorization: `Bearer ${token}` });
    expect(after.closeCode).toBe(4401);
    expect(after.data).toEqual([]);

    // The account's token without expiry still connects.
    expect((await connect(t.url, { authorization: `Bearer ${user.token}` })).closeCode).toBeNull();
  });

  it.each<[string, (token: string) => unknown]>([
    ['a non-Bearer scheme ("Token x")', () => 'Token x'],
    ['a non-Bearer scheme with a valid token', (token) => `Token ${token}`],
    ['a valid token without "Bearer"', (token) => token],
    ['"Bearer" without a token', () => 'Bearer'],
    ['two words after Bearer', (token) => `Bearer ${token} extra`],
    ['a number', () => 42],
    ['an array', (token) => [`Bearer ${token}`]],
  ])('an authorization that is %s closes with 4401', async (_what, authorization) => {
    const res = await connect(t.url, { authorization: authorization(user.token) });
    expect(res.closeCode).toBe(4401);
    expect(res.data).toEqual([]);
  });
});
