import { CreateAppDocument } from '../../src/client/generated';
import { gql, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser, unique } from '../support/factories';

/**
 * Concurrent createApp calls for one slug race on the unique index, not on a prior lookup: exactly
 * one wins, every other caller gets the same BAD_USER_INPUT on `slug` as a sequential duplicate
 * (never a 500), and one row exists. createApp has no REST route, so this is GraphQL only.
 */
describe('createApp: concurrent calls with the same slug', () => {
  let t: TestGateway;
  let users: TestUser[];

  beforeAll(async () => {
    t = await startGateway();
    users = [];
    for (let i = 0; i < 5; i++) users.push(await makeUser(t.gateway));
  });
  afterAll(() => t.stop());

  const rows = async (slug: string): Promise<Array<{ id: string; owner_id: string }>> =>
    t.gateway.ds.query('SELECT id, owner_id FROM apps WHERE slug = $1', [slug]);

  async function race(slug: string, callers: TestUser[]) {
    const results = await Promise.all(callers.map((u) => gql(t.url, u.token, CreateAppDocument, { slug })));
    const winners = results.map((r, i) => ({ r, user: callers[i] })).filter(({ r }) => r.data?.createApp);
    const losers = results.filter((r) => !r.data?.createApp);
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(callers.length - 1);
    for (const r of losers) {
      expect(r.status).toBe(200);
      expect(r.data ?? null).toBeNull();
      expect(r.errors).toHaveLength(1);
      expect(r.errors![0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(r.errors![0].extensions?.errors).toEqual([{ field: 'slug', message: expect.stringMatching(/taken/) }]);
    }
    const winner = winners[0];
    expect(winner.r.errors).toBeUndefined();
    const stored = await rows(slug);
    expect(stored).toEqual([{ id: winner.r.data!.createApp.id, owner_id: winner.user.id }]);
    expect(winner.r.data!.createApp.owner.id).toBe(winner.user.id);
  }

  it('5 parallel calls by 5 accounts: exactly one succeeds, the others get BAD_USER_INPUT on slug, one row', async () => {
    await race(unique('race'), users);
  });

  it('5 parallel calls by the same account: exactly one succeeds, the others get BAD_USER_INPUT on slug, one row', async () => {
    await race(
      unique('race'),
      Array.from({ length: 5 }, () => users[0]),
    );
  });

  it('holds over repeated races', async () => {
    for (let i = 0; i < 5; i++) await race(unique('again'), users);
  });
});
