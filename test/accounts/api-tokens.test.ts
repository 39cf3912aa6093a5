import { ManualClock } from '../../src/clock';
import { ApiTokensDocument, CreateApiTokenDocument, DeploymentStatusDocument, RevokeApiTokenDocument, ViewerDocument } from '../../src/client/generated';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { ISO_MS, makeUser, TestUser } from '../support/factories';

const DAY_MS = 86_400_000;

describe('API tokens', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  /** The token is refused everywhere: REST 401 + WWW-Authenticate, GraphQL UNAUTHENTICATED. */
  async function expectRefused(token: string) {
    const r = await rest(t.url, token, 'GET', '/deployments');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({ status: 401, code: 'unauthorized' });

    const g = await gql(t.url, token, ViewerDocument, {});
    expect(g.status).toBe(401);
    expect(g.data ?? null).toBeNull();
    expect(g.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  }

  async function expectAccepted(token: string, user: TestUser) {
    expect((await gqlOk(t.url, token, ViewerDocument, {})).viewer.id).toBe(user.id);
    const r = await rest(t.url, token, 'GET', '/deployments');
    expect(r.status).toBe(200);
  }

  it('viewer returns the caller', async () => {
    const alice = await makeUser(t.gateway);
    const bob = await makeUser(t.gateway);
    const a = await gqlOk(t.url, alice.token, ViewerDocument, {});
    const b = await gqlOk(t.url, bob.token, ViewerDocument, {});
    expect(a.viewer).toEqual({ id: alice.id, email: alice.email, createdAt: expect.stringMatching(ISO_MS) });
    expect(a.viewer.id).toMatch(/^usr_/);
    expect(b.viewer.id).toBe(bob.id);
  });

  it('refuses requests without a token or with an unknown or malformed one', async () => {
    await expectRefused('hatch_' + 'x'.repeat(43));
    await expectRefused('not-a-hatch-token');
    const none = await gql(t.url, null, ViewerDocument, {});
    expect(none.status).toBe(401);
    expect(none.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('createApiToken returns a hatch_ token, shown once, that works as a bearer token', async () => {
    const user = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'ci' });
    expect(createApiToken.token).toMatch(/^hatch_[A-Za-z0-9_-]{20,}$/);
    expect(createApiToken.apiToken).toMatchObject({
      id: expect.stringMatching(/^tok_/),
      name: 'ci',
      lastFour: createApiToken.token.slice(-4),
      expiresAt: null,
      createdAt: clock.now().toISOString(),
    });
    await expectAccepted(createApiToken.token, user);

    // Listing never shows the secret again.
    const listed = await gql(t.url, user.token, ApiTokensDocument, { first: 100 });
    expect(JSON.stringify(listed)).not.toContain(createApiToken.token);
    expect(JSON.stringify(listed)).not.toContain(createApiToken.token.slice('hatch_'.length));
  });

  it('stores only a hash: the token text appears nowhere in api_tokens', async () => {
    const user = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'hash-check' });
    const secret = createApiToken.token;
    const rows: Array<Record<string, unknown>> = await t.gateway.ds.query('SELECT * FROM api_tokens WHERE user_id = $1', [user.id]);
    expect(rows).toHaveLength(2); // the factory's first token and this one
    const mine = rows.find((r) => r.id === createApiToken.apiToken.id);
    expect(mine).toBeDefined();
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(secret.slice('hatch_'.length));
    expect(dump).not.toContain(user.token);
    expect(dump).not.toContain(user.token.slice('hatch_'.length));
    // Nor anywhere else in the table, base64 or hex encoded.
    const all = JSON.stringify(await t.gateway.ds.query('SELECT * FROM api_tokens'));
    expect(all).not.toContain(secret.slice('hatch_'.length));
    expect(all).not.toContain(Buffer.from(secret).toString('hex'));
    expect(all).not.toContain(Buffer.from(secret).toString('base64'));
  });

  it('apiTokens lists the caller’s tokens newest first and never another user’s', async () => {
    const alice = await makeUser(t.gateway);
    const bob = await makeUser(t.gateway);
    const created: string[] = [];
    for (const name of ['one', 'two', 'three']) {
      clock.advance(1000);
      created.push((await gqlOk(t.url, alice.token, CreateApiTokenDocument, { name })).createApiToken.apiToken.id);
    }
    const bobs = (await gqlOk(t.url, bob.token, CreateApiTokenDocument, { name: 'bob-only' })).createApiToken.apiToken.id;

    const list = (await gqlOk(t.url, alice.token, ApiTokensDocument, {})).apiTokens;
    expect(list.nodes.map((n) => n.name)).toEqual(['three', 'two', 'one', 'admin']);
    expect(list.nodes.slice(0, 3).map((n) => n.id)).toEqual([...created].reverse());
    expect(list.nodes.map((n) => n.id)).not.toContain(bobs);
    expect(list.pageInfo.hasNextPage).toBe(false);
    const times = list.nodes.map((n) => Date.parse(n.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // Paging keeps the order and the boundary.
    const first = (await gqlOk(t.url, alice.token, ApiTokensDocument, { first: 2 })).apiTokens;
    expect(first.nodes.map((n) => n.name)).toEqual(['three', 'two']);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await gqlOk(t.url, alice.token, ApiTokensDocument, { first: 2, after: first.pageInfo.endCursor })).apiTokens;
    expect(second.nodes.map((n) => n.name)).toEqual(['one', 'admin']);
    expect(second.pageInfo.hasNextPage).toBe(false);

    const bobList = (await gqlOk(t.url, bob.token, ApiTokensDocument, {})).apiTokens;
    expect(bobList.nodes.map((n) => n.name)).toEqual(['bob-only', 'admin']);
    for (const id of created) expect(bobList.nodes.map((n) => n.id)).not.toContain(id);
  });

  it.each([0, -1, 3651])('expiresInDays %p is out of range → BAD_USER_INPUT on expiresInDays, nothing stored', async (days) => {
    const user = await makeUser(t.gateway);
    const res = await gql(t.url, user.token, CreateApiTokenDocument, { name: 'bad', expiresInDays: days });
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('expiresInDays');
    const [{ n }] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM api_tokens WHERE user_id = $1', [user.id]);
    expect(n).toBe(1);
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['101 characters long', 'n'.repeat(101)],
    ['101 characters long after trimming', ' ' + 'n'.repeat(101) + ' '],
  ])('a name that is %s → BAD_USER_INPUT on name, nothing stored', async (_what, name) => {
    const user = await makeUser(t.gateway);
    const res = await gql(t.url, user.token, CreateApiTokenDocument, { name });
    expect(res.data ?? null).toBeNull();
    expect(res.errors).toHaveLength(1);
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.extensions?.errors).toEqual([expect.objectContaining({ field: 'name' })]);
    // Only the factory's own token.
    const rows: Array<{ name: string }> = await t.gateway.ds.query('SELECT name FROM api_tokens WHERE user_id = $1', [user.id]);
    expect(rows.map((r) => r.name)).toEqual(['admin']);
  });

  it('accepts a name of 1 and of 100 characters, stored trimmed', async () => {
    const user = await makeUser(t.gateway);
    const one = (await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: ' x ' })).createApiToken;
    expect(one.apiToken.name).toBe('x');
    const long = 'n'.repeat(100);
    const max = (await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: `  ${long}  ` })).createApiToken;
    expect(max.apiToken.name).toBe(long);
    const rows: Array<{ name: string }> = await t.gateway.ds.query('SELECT name FROM api_tokens WHERE user_id = $1 ORDER BY name', [user.id]);
    expect(rows.map((r) => r.name)).toEqual(['admin', long, 'x']);
  });

  it('accepts expiresInDays at both ends of the range', async () => {
    const user = await makeUser(t.gateway);
    const one = (await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'short', expiresInDays: 1 })).createApiToken;
    expect(one.apiToken.expiresAt).toBe(new Date(clock.now().getTime() + DAY_MS).toISOString());
    const max = (await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'long', expiresInDays: 3650 })).createApiToken;
    expect(max.apiToken.expiresAt).toBe(new Date(clock.now().getTime() + 3650 * DAY_MS).toISOString());
  });

  it('an expired token stops working; the account’s other tokens keep working', async () => {
    const user = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'day', expiresInDays: 1 });
    const token = createApiToken.token;
    await expectAccepted(token, user);

    clock.advance(DAY_MS - 1);
    await expectAccepted(token, user);

    clock.advance(1);
    await expectRefused(token);
    clock.advance(60_000);
    await expectRefused(token);

    await expectAccepted(user.token, user);
  });

  it('revokeApiToken makes the token stop working at once (REST, GraphQL and graphql-ws)', async () => {
    const user = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'to-revoke' });
    const token = createApiToken.token;
    await expectAccepted(token, user);

    const revoked = await gqlOk(t.url, user.token, RevokeApiTokenDocument, { id: createApiToken.apiToken.id });
    expect(revoked.revokeApiToken).toEqual({ id: createApiToken.apiToken.id, revokedAt: clock.now().toISOString() });

    await expectRefused(token);

    let closed!: (code: number) => void;
    const closeCode = new Promise<number>((resolve) => (closed = resolve));
    const client = wsClient(t.url, token, (code) => closed(code));
    const sub = collect(client, DeploymentStatusDocument, { id: 'dep_00000000000000000000000000' });
    expect(await closeCode).toBe(4401);
    await expect(sub.done).rejects.toBeDefined();
    await client.dispose();

    const listed = (await gqlOk(t.url, user.token, ApiTokensDocument, {})).apiTokens.nodes.find((n) => n.id === createApiToken.apiToken.id);
    expect(listed?.revokedAt).toBe(revoked.revokeApiToken.revokedAt);

    // Revoking again is harmless and keeps the first revocation time.
    clock.advance(5000);
    const again = await gqlOk(t.url, user.token, RevokeApiTokenDocument, { id: createApiToken.apiToken.id });
    expect(again.revokeApiToken.revokedAt).toBe(revoked.revokeApiToken.revokedAt);
    await expectRefused(token);
    await expectAccepted(user.token, user);
  });

  it('a token can revoke itself', async () => {
    const user = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'self' });
    await gqlOk(t.url, createApiToken.token, RevokeApiTokenDocument, { id: createApiToken.apiToken.id });
    await expectRefused(createApiToken.token);
  });

  it('revoking another user’s token → NOT_FOUND, and it keeps working', async () => {
    const alice = await makeUser(t.gateway);
    const mallory = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, alice.token, CreateApiTokenDocument, { name: 'alice' });

    const res = await gql(t.url, mallory.token, RevokeApiTokenDocument, { id: createApiToken.apiToken.id });
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const unknown = await gql(t.url, alice.token, RevokeApiTokenDocument, { id: 'tok_00000000000000000000000000' });
    expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    await expectAccepted(createApiToken.token, alice);
    const [row] = await t.gateway.ds.query('SELECT revoked_at FROM api_tokens WHERE id = $1', [createApiToken.apiToken.id]);
    expect(row.revoked_at).toBeNull();
  });

  it('lastUsedAt is null until the token is used, then set to the time of use', async () => {
    const user = await makeUser(t.gateway);
    const { createApiToken } = await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'usage' });
    const find = async () => (await gqlOk(t.url, user.token, ApiTokensDocument, {})).apiTokens.nodes.find((n) => n.id === createApiToken.apiToken.id)!;

    expect((await find()).lastUsedAt).toBeNull();

    // Kept to the minute: within a minute before the moment of use, never after it.
    const expectUsedAround = (lastUsedAt: string | null | undefined, at: number) => {
      expect(lastUsedAt).toMatch(ISO_MS);
      expect(Date.parse(lastUsedAt!)).toBeLessThanOrEqual(at);
      expect(Date.parse(lastUsedAt!)).toBeGreaterThan(at - 60_000);
    };

    clock.advance(10_000);
    const usedAt = clock.now().getTime();
    await gqlOk(t.url, createApiToken.token, ViewerDocument, {});
    const first = (await find()).lastUsedAt;
    expectUsedAround(first, usedAt);

    // A later use (also over REST) moves it on.
    clock.advance(5 * 60_000);
    const laterAt = clock.now().getTime();
    expect((await rest(t.url, createApiToken.token, 'GET', '/deployments')).status).toBe(200);
    const later = (await find()).lastUsedAt;
    expectUsedAround(later, laterAt);
    expect(Date.parse(later!)).toBeGreaterThan(Date.parse(first!));
  });
});
