import { AppDocument, AppsDocument, CreateAppDocument } from '../../src/client/generated';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { ISO_MS, makeApp, makeUser, TestUser, unique } from '../support/factories';

describe('eggs (apps)', () => {
  let t: TestGateway;
  let owner: TestUser;
  let stranger: TestUser;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const countSlug = async (slug: string): Promise<number> => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM apps WHERE slug = $1', [slug]))[0].n;

  it('createApp with a valid slug creates an egg owned by the caller', async () => {
    const slug = unique('egg');
    const res = await gql(t.url, owner.token, CreateAppDocument, { slug });
    expect(res.errors).toBeUndefined();
    expect(res.data?.createApp).toEqual({
      id: expect.stringMatching(/^app_/),
      slug,
      tier: 'FREE',
      url: expect.stringMatching(new RegExp(`^https://${slug}\\.`)),
      createdAt: expect.stringMatching(ISO_MS),
      owner: { id: owner.id, email: owner.email },
      collaborators: [],
    });
    expect((await gqlOk(t.url, owner.token, AppDocument, { slug })).app).toEqual(res.data!.createApp);
  });

  it.each(['abc', 'a1-2', 'x'.repeat(40), 'ab-c', 'a0z'])('accepts the valid slug %p', async (base) => {
    // Keep it unique within the file while keeping its shape: same length, same edges.
    const slug = base.length > 4 ? base.slice(0, -8) + unique('x').slice(-8) : base;
    const app = (await gqlOk(t.url, owner.token, CreateAppDocument, { slug })).createApp;
    expect(app.slug).toBe(slug);
  });

  it.each([
    ['one character', 'A'],
    ['too short', 'ab'],
    ['leading dash', '-abc'],
    ['trailing dash', 'abc-'],
    ['underscore', 'has_underscore'],
    ['41 characters', 'a'.repeat(41)],
    ['upper case', 'Upper'],
    ['leading digit', '1abc'],
    ['two dashes in a row (they separate a slug from the rest of a host)', 'a--b'],
    ['three dashes in a row', 'ab---c'],
    ['space', 'has space'],
    ['empty', ''],
  ])('rejects a slug with %s → BAD_USER_INPUT on slug, nothing stored', async (_why, slug) => {
    const res = await gql(t.url, owner.token, CreateAppDocument, { slug });
    expect(res.data ?? null).toBeNull();
    expect(res.errors).toHaveLength(1);
    expect(res.errors![0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors![0].extensions?.errors?.[0]?.field).toBe('slug');
    expect(await countSlug(slug)).toBe(0);
  });

  it('a taken slug → BAD_USER_INPUT on slug, for the owner and for another user alike', async () => {
    const slug = (await makeApp(t.url, owner)).slug;
    for (const caller of [owner, stranger]) {
      const res = await gql(t.url, caller.token, CreateAppDocument, { slug });
      expect(res.data ?? null).toBeNull();
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('slug');
    }
    expect(await countSlug(slug)).toBe(1);
    // The first owner keeps it.
    expect((await gqlOk(t.url, owner.token, AppDocument, { slug })).app.owner.id).toBe(owner.id);
    expect((await gql(t.url, stranger.token, AppDocument, { slug })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('createApp without a token → UNAUTHENTICATED, nothing stored', async () => {
    const slug = unique('anon');
    const res = await gql(t.url, null, CreateAppDocument, { slug });
    expect(res.status).toBe(401);
    expect(res.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(await countSlug(slug)).toBe(0);
  });

  it('apps pages newest first with first/after', async () => {
    const user = await makeUser(t.gateway);
    const a = await makeApp(t.url, user);
    const b = await makeApp(t.url, user);
    const c = await makeApp(t.url, user);

    const page1 = (await gqlOk(t.url, user.token, AppsDocument, { first: 2 })).apps;
    expect(page1.nodes.map((n) => n.slug)).toEqual([c.slug, b.slug]);
    expect(page1.pageInfo.hasNextPage).toBe(true);
    expect(typeof page1.pageInfo.endCursor).toBe('string');

    const page2 = (await gqlOk(t.url, user.token, AppsDocument, { first: 2, after: page1.pageInfo.endCursor })).apps;
    expect(page2.nodes.map((n) => n.slug)).toEqual([a.slug]);
    expect(page2.pageInfo.hasNextPage).toBe(false);

    const all = (await gqlOk(t.url, user.token, AppsDocument, {})).apps;
    expect(all.nodes.map((n) => n.slug)).toEqual([c.slug, b.slug, a.slug]);
    expect(all.pageInfo.hasNextPage).toBe(false);
    expect(all.nodes[0]).toEqual(c);
  });

  it('apps rejects a page size out of range and a foreign cursor → BAD_USER_INPUT', async () => {
    for (const first of [0, 101]) {
      const res = await gql(t.url, owner.token, AppsDocument, { first });
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('first');
    }
    const bad = await gql(t.url, owner.token, AppsDocument, { after: 'not-a-cursor' });
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(bad.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('after');
  });

  it('another user’s egg is NOT_FOUND via app(slug), absent from apps, and 404 over REST', async () => {
    const theirs = await makeApp(t.url, owner);
    const mine = await makeApp(t.url, stranger);

    const res = await gql(t.url, stranger.token, AppDocument, { slug: theirs.slug });
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    // Same answer as for a slug that does not exist at all: existence is not revealed.
    const missing = await gql(t.url, stranger.token, AppDocument, { slug: unique('nope') });
    expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const listed = (await gqlOk(t.url, stranger.token, AppsDocument, { first: 100 })).apps.nodes.map((n) => n.slug);
    expect(listed).toContain(mine.slug);
    expect(listed).not.toContain(theirs.slug);
    const ownerListed = (await gqlOk(t.url, owner.token, AppsDocument, { first: 100 })).apps.nodes.map((n) => n.slug);
    expect(ownerListed).toContain(theirs.slug);
    expect(ownerListed).not.toContain(mine.slug);

    const list = await rest(t.url, stranger.token, 'GET', `/deployments?project=${theirs.slug}`);
    expect(list.status).toBe(404);
    expect(list.body).toMatchObject({ status: 404, code: 'not_found' });
    const dep = await rest(t.url, stranger.token, 'POST', '/deploy', { project: theirs.slug });
    expect(dep.status).toBe(404);
    expect(dep.body).toMatchObject({ code: 'not_found' });
    const [{ n }] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [theirs.slug]);
    expect(n).toBe(0);
  });
});
