import { ManualClock } from '../../src/clock';
import { ConfigError, loadConfig } from '../../src/config';
import { CreateApiTokenDocument, CreateAppDocument, CreateCronDocument, DeleteCronDocument, RevokeApiTokenDocument } from '../../src/client/generated';
import { gql, GqlResult, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeEggWithPeople, makeUser, TestUser, unique } from '../support/factories';
import { expectProblem } from '../rest/problem';

const DAY_MS = 86_400_000;

/** A GraphQL refusal by a count cap: LIMIT_EXCEEDED naming `field`, and no data. */
function expectCapped(r: GqlResult<unknown>, field: string): void {
  expect(r.data ?? null).toBeNull();
  expect(r.errors).toHaveLength(1);
  expect(r.errors![0].extensions?.code).toBe('LIMIT_EXCEEDED');
  expect(r.errors![0].extensions?.errors).toEqual([{ field, message: expect.stringMatching(/at most \d+/) }]);
}

const liveTokens = async (t: TestGateway, userId: string): Promise<number> =>
  (await t.gateway.ds.query('SELECT count(*)::int AS n FROM api_tokens WHERE user_id = $1 AND revoked_at IS NULL', [userId]))[0].n;
const allTokens = async (t: TestGateway, userId: string): Promise<number> =>
  (await t.gateway.ds.query('SELECT count(*)::int AS n FROM api_tokens WHERE user_id = $1', [userId]))[0].n;
const ownedEggs = async (t: TestGateway, userId: string): Promise<number> =>
  (await t.gateway.ds.query('SELECT count(*)::int AS n FROM apps WHERE owner_id = $1', [userId]))[0].n;
const cronsOf = async (t: TestGateway, slug: string): Promise<string[]> =>
  (await t.gateway.ds.query('SELECT c.id FROM crons c JOIN apps a ON a.id = c.app_id WHERE a.slug = $1 ORDER BY c.id', [slug])).map(
    (r: { id: string }) => r.id,
  );

const postCron = (t: TestGateway, token: string, slug: string, schedule = '0 3 * * *') =>
  rest(t.url, token, 'POST', `/v1/apps/${slug}/crons`, { schedule, command: 'echo hi' });

describe('count caps: configuration', () => {
  it('defaults: 50 tokens and 100 eggs per account, 20 crons per egg', () => {
    expect(loadConfig({}).limits).toEqual({ tokensPerAccount: 50, eggsPerAccount: 100, cronsPerEgg: 20, replicas: { free: 1, always_on: 3 } });
  });

  it('HATCHERY_MAX_TOKENS_PER_ACCOUNT, HATCHERY_MAX_EGGS_PER_ACCOUNT and HATCHERY_MAX_CRONS_PER_EGG set them', () => {
    const env = { HATCHERY_MAX_TOKENS_PER_ACCOUNT: '7', HATCHERY_MAX_EGGS_PER_ACCOUNT: '8', HATCHERY_MAX_CRONS_PER_EGG: '9' };
    expect(loadConfig(env).limits).toEqual({ tokensPerAccount: 7, eggsPerAccount: 8, cronsPerEgg: 9, replicas: { free: 1, always_on: 3 } });
  });

  it.each(['HATCHERY_MAX_TOKENS_PER_ACCOUNT', 'HATCHERY_MAX_EGGS_PER_ACCOUNT', 'HATCHERY_MAX_CRONS_PER_EGG'])(
    '%s must be a whole number of at least 1',
    (name) => {
      for (const bad of ['0', '-1', '2.5', 'many', '1e9']) {
        expect(() => loadConfig({ [name]: bad })).toThrow(ConfigError);
        expect(() => loadConfig({ [name]: bad })).toThrow(new RegExp(`^${name} must be an integer from 1 to`));
      }
    },
  );
});

describe('count caps at their defaults', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('tokens: the admin-issued first token and 49 more; the 51st → LIMIT_EXCEEDED on name, nothing stored', async () => {
    const user = await makeUser(t.gateway);
    for (let i = 2; i <= 50; i++) await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: `t${i}` });
    expect(await liveTokens(t, user.id)).toBe(50);

    expectCapped(await gql(t.url, user.token, CreateApiTokenDocument, { name: 't51' }), 'name');
    expect(await allTokens(t, user.id)).toBe(50);
  });

  it('eggs: 100 owned; the 101st → LIMIT_EXCEEDED on slug, nothing stored', async () => {
    const user = await makeUser(t.gateway);
    for (let i = 1; i <= 100; i++) await makeApp(t.url, user);
    const slug = unique('over');
    expectCapped(await gql(t.url, user.token, CreateAppDocument, { slug }), 'slug');
    expect(await ownedEggs(t, user.id)).toBe(100);
    expect(await t.gateway.ds.query('SELECT id FROM apps WHERE slug = $1', [slug])).toEqual([]);
  });

  it('crons: 20 per egg; the 21st → 422 limit_exceeded on schedule over REST, LIMIT_EXCEEDED over GraphQL, nothing stored', async () => {
    const { owner, slug } = await makeEggWithPeople(t);
    for (let i = 1; i <= 20; i++) expect((await postCron(t, owner.token, slug)).status).toBe(201);
    const before = await cronsOf(t, slug);
    expect(before).toHaveLength(20);

    const over = await postCron(t, owner.token, slug);
    expectProblem(over, 422, 'limit_exceeded');
    expect(over.body.errors).toEqual([{ field: 'schedule', message: 'an egg has at most 20 crons; delete one first' }]);
    expectCapped(await gql(t.url, owner.token, CreateCronDocument, { app: slug, schedule: '0 3 * * *', command: 'echo hi' }), 'schedule');
    expect(await cronsOf(t, slug)).toEqual(before);
  });
});

describe('count caps, configured small', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_MAX_TOKENS_PER_ACCOUNT: '3', HATCHERY_MAX_EGGS_PER_ACCOUNT: '2', HATCHERY_MAX_CRONS_PER_EGG: '2' }, { clock });
  });
  afterAll(() => t.stop());

  const newToken = (user: TestUser, name: string, expiresInDays?: number) => gql(t.url, user.token, CreateApiTokenDocument, { name, expiresInDays });

  describe('tokens per account', () => {
    it('the first token counts: 2 more, then refused; revoking one makes room again', async () => {
      const user = await makeUser(t.gateway);
      const second = (await newToken(user, 'second')).data!.createApiToken;
      expect((await newToken(user, 'third')).data?.createApiToken.token).toMatch(/^hatch_/);
      const refused = await newToken(user, 'fourth');
      expectCapped(refused, 'name');
      expect(refused.errors![0].extensions?.errors[0].message).toBe('an account has at most 3 live API tokens; revoke one first');
      expect(await allTokens(t, user.id)).toBe(3);

      await gqlOk(t.url, user.token, RevokeApiTokenDocument, { id: second.apiToken.id });
      expect((await newToken(user, 'fourth')).data?.createApiToken.token).toMatch(/^hatch_/);
      expect(await liveTokens(t, user.id)).toBe(3);
      expectCapped(await newToken(user, 'fifth'), 'name');
    });

    it('expired tokens do not count', async () => {
      const user = await makeUser(t.gateway);
      await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'short', expiresInDays: 1 });
      await gqlOk(t.url, user.token, CreateApiTokenDocument, { name: 'long', expiresInDays: 30 });
      expectCapped(await newToken(user, 'more'), 'name');

      clock.advance(DAY_MS);
      expect((await newToken(user, 'more')).data?.createApiToken.token).toMatch(/^hatch_/);
      expectCapped(await newToken(user, 'again'), 'name');
    });

    it('is per account', async () => {
      const a = await makeUser(t.gateway);
      const b = await makeUser(t.gateway);
      await gqlOk(t.url, a.token, CreateApiTokenDocument, { name: 'x' });
      await gqlOk(t.url, a.token, CreateApiTokenDocument, { name: 'y' });
      expectCapped(await newToken(a, 'z'), 'name');
      await gqlOk(t.url, b.token, CreateApiTokenDocument, { name: 'x' });
      await gqlOk(t.url, b.token, CreateApiTokenDocument, { name: 'y' });
    });

    it('race: 10 concurrent createApiToken on a fresh account → exactly 2 created (3 with the first), 8 LIMIT_EXCEEDED', async () => {
      const user = await makeUser(t.gateway);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => newToken(user, `race-${i}`)));
      const created = results.filter((r) => r.data?.createApiToken);
      expect(created).toHaveLength(2);
      for (const r of results.filter((x) => !x.data?.createApiToken)) expectCapped(r, 'name');
      expect(await allTokens(t, user.id)).toBe(3);
    });
  });

  describe('eggs per account', () => {
    it('owned eggs count, collaborations do not; the 3rd → LIMIT_EXCEEDED on slug', async () => {
      const { collaborator } = await makeEggWithPeople(t);
      await makeApp(t.url, collaborator);
      await makeApp(t.url, collaborator);
      const slug = unique('third');
      expectCapped(await gql(t.url, collaborator.token, CreateAppDocument, { slug }), 'slug');
      expect(await ownedEggs(t, collaborator.id)).toBe(2);
      // The slug stays free for anyone else.
      const other = await makeUser(t.gateway);
      expect((await makeApp(t.url, other, slug)).slug).toBe(slug);
    });

    it('a taken slug is still reported as taken below the cap', async () => {
      const user = await makeUser(t.gateway);
      const { slug } = await makeApp(t.url, user);
      const again = await gql(t.url, user.token, CreateAppDocument, { slug });
      expect(again.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(again.errors?.[0].extensions?.errors).toEqual([{ field: 'slug', message: expect.stringMatching(/taken/) }]);
    });

    it('race: 10 concurrent createApp with distinct slugs → exactly 2 eggs, 8 LIMIT_EXCEEDED', async () => {
      const user = await makeUser(t.gateway);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => gql(t.url, user.token, CreateAppDocument, { slug: unique(`race${i}`) })));
      const created = results.filter((r) => r.data?.createApp);
      expect(created).toHaveLength(2);
      for (const r of results.filter((x) => !x.data?.createApp)) expectCapped(r, 'slug');
      const stored: Array<{ slug: string }> = await t.gateway.ds.query('SELECT slug FROM apps WHERE owner_id = $1 ORDER BY slug', [user.id]);
      expect(stored.map((a) => a.slug)).toEqual(created.map((r) => r.data!.createApp.slug).sort());
    });
  });

  describe('crons per egg', () => {
    it('owner and collaborator share the egg’s cap; another egg has its own; deleting one makes room', async () => {
      const { owner, collaborator, slug } = await makeEggWithPeople(t);
      expect((await postCron(t, owner.token, slug)).status).toBe(201);
      const second = await postCron(t, collaborator.token, slug);
      expect(second.status).toBe(201);
      const over = await postCron(t, owner.token, slug, '*/5 * * * *');
      expectProblem(over, 422, 'limit_exceeded');
      expect(over.body.errors).toEqual([{ field: 'schedule', message: 'an egg has at most 2 crons; delete one first' }]);
      expectProblem(await postCron(t, collaborator.token, slug), 422, 'limit_exceeded');
      expect(await cronsOf(t, slug)).toHaveLength(2);

      const { slug: other } = await makeApp(t.url, owner);
      expect((await postCron(t, owner.token, other)).status).toBe(201);

      await gqlOk(t.url, owner.token, DeleteCronDocument, { app: slug, id: second.body.id });
      expect((await postCron(t, owner.token, slug)).status).toBe(201);
      expect(await cronsOf(t, slug)).toHaveLength(2);
    });

    it('a bad schedule on a full egg is still a validation error on schedule', async () => {
      const { owner, slug } = await makeEggWithPeople(t);
      await postCron(t, owner.token, slug);
      await postCron(t, owner.token, slug);
      const bad = await postCron(t, owner.token, slug, '61 * * * *');
      expectProblem(bad, 422, 'validation_failed');
      expect(bad.body.errors[0].field).toBe('schedule');
    });

    it('race: 10 concurrent POSTs on a fresh egg → exactly 2 × 201 and 8 × 422 limit_exceeded; 2 crons stored', async () => {
      const { owner, slug } = await makeEggWithPeople(t);
      const results = await Promise.all(Array.from({ length: 10 }, () => postCron(t, owner.token, slug)));
      const created = results.filter((r) => r.status === 201);
      expect(created).toHaveLength(2);
      for (const r of results.filter((x) => x.status !== 201)) {
        expectProblem(r, 422, 'limit_exceeded');
        expect(r.body.errors[0].field).toBe('schedule');
      }
      expect(await cronsOf(t, slug)).toEqual(created.map((r) => r.body.id).sort());
    });
  });
});
