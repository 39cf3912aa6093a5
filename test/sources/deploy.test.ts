import { randomBytes } from 'node:crypto';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { EggWithPeople, makeApp, makeEggWithPeople, settle } from '../support/factories';
import { expectInvalid, writesNothing } from '../rest/problem';
import { helloEgg, upload } from './helpers';

/** What a deployment builds: `source` (an upload of this egg) or `image`, not both; with neither, the egg's newest source. */
describe('deploying a source or an image', () => {
  let t: TestGateway;
  let egg: EggWithPeople;

  beforeAll(async () => {
    t = await startGateway();
    egg = await makeEggWithPeople(t);
  });
  afterAll(() => t.stop());

  const newSource = async (slug = egg.slug) => (await upload(t, egg.owner.token, slug, helloEgg(randomBytes(4).toString('hex')))).body.id as string;

  const gql = async (token: string, query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as { data?: any; errors?: Array<{ message: string; extensions: { code: string; errors?: Array<{ field: string }> } }> };
  };
  const DEPLOY = 'mutation($input: DeployInput!) { deploy(input: $input) { id source image status } }';

  it('POST /deploy with `source` builds that source: the record says so over REST and GraphQL, and it goes live', async () => {
    const source = await newSource();
    await newSource(); // a newer one: `source` wins over "the newest"
    const res = await rest(t.url, egg.collaborator.token, 'POST', '/deploy', { project: egg.slug, source });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ source, image: null, status: 'building' });
    const got = await rest(t.url, egg.owner.token, 'GET', `/deployments/${res.body.id}`);
    expect(got.body).toMatchObject({ source, image: null });
    const list = await rest(t.url, egg.owner.token, 'GET', `/deployments?project=${egg.slug}`);
    expect(list.body.data.find((d: { id: string }) => d.id === res.body.id)).toMatchObject({ source, image: null });
    const viaGql = await gql(egg.owner.token, 'query($id: ID!) { deployment(id: $id) { source image } }', { id: res.body.id });
    expect(viaGql.data.deployment).toEqual({ source, image: null });
    expect(await settle(t.url, egg.owner, res.body.id)).toBe('LIVE');
    const [row] = await t.gateway.ds.query('SELECT source_id, image FROM deployments WHERE id = $1', [res.body.id]);
    expect(row).toEqual({ source_id: source, image: null });
  });

  it('with neither, the deployment records the egg’s newest source; an egg without sources records none', async () => {
    await newSource();
    const newest = await newSource();
    const res = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ source: newest, image: null });

    const bare = (await makeApp(t.url, egg.owner)).slug;
    const none = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: bare });
    expect(none.status).toBe(201);
    expect(none.body).toMatchObject({ source: null, image: null });
  });

  it.each([
    'node:20-slim',
    'nginx',
    'localhost:5000/team/app:v1.2',
    'ghcr.io/org/app@sha256:' + 'a'.repeat(64),
    'registry.example.com:443/a/b_c__d-e.f:latest',
    '[::1]:5000/x',
  ])('POST /deploy with `image` %s runs that image and records no source', async (image) => {
    await newSource();
    const res = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, image });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ image, source: null });
  });

  it.each([
    ['upper case', 'Node:20'],
    ['a space', 'node 20'],
    ['an empty string', ''],
    ['only a tag', ':latest'],
    ['a path with ..', 'team/../app'],
    ['a name over 255 characters', `${'a'.repeat(256)}:1`],
    ['a tag over 128 characters', `node:${'1'.repeat(129)}`],
    ['a short digest', 'node@sha256:abc'],
    ['a shell command', 'node; rm -rf /'],
  ])('refuses an image with %s: 422 on `image`, nothing stored', async (_what, image) => {
    const res = await writesNothing(t, () => rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, image }));
    expectInvalid(res, 'image');
  });

  it('refuses `source` and `image` together, naming both; nothing stored', async () => {
    const source = await newSource();
    const res = await writesNothing(t, () => rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, source, image: 'node:20' }));
    expectInvalid(res, 'source');
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['image', 'source']);
    expect(res.body.errors[0].message).toMatch(/either source or image, not both/);
  });

  it('refuses another egg’s source, an unknown one and a malformed one with 422 on `source`; nothing stored', async () => {
    const otherEgg = (await makeApp(t.url, egg.owner)).slug;
    const foreign = await newSource(otherEgg);
    for (const source of [foreign, 'src_01kzzzzzzzzzzzzzzzzzzzzzzz', 'not-an-id']) {
      const res = await writesNothing(t, () => rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, source }));
      expectInvalid(res, 'source');
      expect(res.body.errors).toEqual([{ field: 'source', message: expect.stringMatching(/is not a source of this egg/) }]);
    }
    // A stranger's egg is still a 404 before its sources are looked at.
    const stranger = await rest(t.url, egg.stranger.token, 'POST', '/deploy', { project: egg.slug, source: await newSource() });
    expect(stranger.status).toBe(404);
  });

  it('GraphQL `deploy(input: {source, image})` has the same rules, with BAD_USER_INPUT naming the fields', async () => {
    const source = await newSource();
    const ok = await gql(egg.owner.token, DEPLOY, { input: { project: egg.slug, source } });
    expect(ok.data.deploy).toMatchObject({ source, image: null, status: 'BUILDING' });
    const image = await gql(egg.owner.token, DEPLOY, { input: { project: egg.slug, image: 'node:20' } });
    expect(image.data.deploy).toMatchObject({ source: null, image: 'node:20' });

    const both = await gql(egg.owner.token, DEPLOY, { input: { project: egg.slug, source, image: 'node:20' } });
    expect(both.errors![0].extensions.code).toBe('BAD_USER_INPUT');
    expect(both.errors![0].extensions.errors!.map((e) => e.field).sort()).toEqual(['image', 'source']);
    const foreign = await gql(egg.owner.token, DEPLOY, { input: { project: egg.slug, source: await newSource((await makeApp(t.url, egg.owner)).slug) } });
    expect(foreign.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [{ field: 'source' }] });
    const bad = await gql(egg.owner.token, DEPLOY, { input: { project: egg.slug, image: 'Bad Image' } });
    expect(bad.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [{ field: 'image' }] });
  });

  it('redeploy builds the same source (or runs the same image) again', async () => {
    const source = await newSource();
    const first = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, source });
    await newSource(); // newer, but a redeploy keeps what it redeploys
    const again = await gql(egg.owner.token, 'mutation($id: ID!) { redeploy(id: $id) { id source image } }', { id: first.body.id });
    expect(again.data.redeploy).toMatchObject({ source, image: null });
    const byImage = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, image: 'nginx:1' });
    const imageAgain = await gql(egg.owner.token, 'mutation($id: ID!) { redeploy(id: $id) { source image } }', { id: byImage.body.id });
    expect(imageAgain.data.redeploy).toEqual({ source: null, image: 'nginx:1' });
  });

  it('an Idempotency-Key covers `source` and `image`: the same body replays, another source or an image is a 422', async () => {
    const source = await newSource();
    const key = { 'idempotency-key': `k-${randomBytes(4).toString('hex')}` };
    const first = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, source }, key);
    const replay = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: egg.slug, source }, key);
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    for (const body of [{ project: egg.slug, source: await newSource() }, { project: egg.slug, image: 'node:20' }, { project: egg.slug }]) {
      expectInvalid(await rest(t.url, egg.owner.token, 'POST', '/deploy', body, key), 'Idempotency-Key');
    }
  });
});
