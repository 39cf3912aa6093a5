import { AddCollaboratorDocument, DeployDocument } from '../../src/client/generated';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser, unique } from '../support/factories';

describe('Idempotency-Key on POST /deploy and deploy(idempotencyKey:)', () => {
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const rowsOf = async (slug: string): Promise<string[]> =>
    (await t.gateway.ds.query('SELECT d.id FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1 ORDER BY d.id', [slug])).map(
      (r: { id: string }) => r.id,
    );
  const keyCount = async (): Promise<number> => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM idempotency_keys'))[0].n;
  const post = (user: TestUser, body: unknown, key?: string) =>
    rest(t.url, user.token, 'POST', '/deploy', body, key === undefined ? {} : { 'Idempotency-Key': key });

  it('without a key, two identical requests make two deployments', async () => {
    const { slug } = await makeApp(t.url, owner);
    const a = await post(owner, { project: slug });
    const b = await post(owner, { project: slug });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(await rowsOf(slug)).toHaveLength(2);
  });

  it('the same key and body twice answer 201 with the first response, deploying once', async () => {
    const { slug } = await makeApp(t.url, owner);
    const key = unique('key');
    const body = { project: slug, env: { A: '1', B: '2' } };
    const first = await post(owner, body, key);
    expect(first.status).toBe(201);
    expect(first.body.status).toBe('building');
    expect(await settle(t.url, owner, first.body.id)).toBe('LIVE');

    const second = await post(owner, body, key);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);

    // The same JSON object with its members in another order is the same body.
    const reordered = await post(owner, { env: { B: '2', A: '1' }, project: slug }, key);
    expect(reordered.status).toBe(201);
    expect(reordered.body.id).toBe(first.body.id);

    expect(await rowsOf(slug)).toEqual([first.body.id]);
  });

  it('the same key with another body is a 422 on Idempotency-Key and writes nothing', async () => {
    const { slug } = await makeApp(t.url, owner);
    const other = (await makeApp(t.url, owner)).slug;
    const key = unique('key');
    const first = await post(owner, { project: slug, env: { A: '1' } }, key);
    expect(first.status).toBe(201);
    const keysBefore = await keyCount();

    for (const body of [{ project: slug, env: { A: '2' } }, { project: slug }, { project: other, env: { A: '1' } }]) {
      const res = await post(owner, body, key);
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['Idempotency-Key']);
    }

    expect(await rowsOf(slug)).toEqual([first.body.id]);
    expect(await rowsOf(other)).toEqual([]);
    expect(await keyCount()).toBe(keysBefore);

    // The key still answers its own body with the first response.
    const again = await post(owner, { project: slug, env: { A: '1' } }, key);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
  });

  it('10 concurrent requests with the same key and body make exactly one deployment', async () => {
    const { slug } = await makeApp(t.url, owner);
    const key = unique('key');
    const body = { project: slug, env: { RACE: 'yes' } };
    const results = await Promise.all(Array.from({ length: 10 }, () => post(owner, body, key)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
    const ids = new Set(results.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    expect(id).toMatch(/^dep_/);
    for (const r of results) expect(r.body).toEqual(results[0].body);
    expect(await rowsOf(slug)).toEqual([id]);
    expect(await settle(t.url, owner, id)).toBe('LIVE');
  });

  it('keys are per account: another user with the same key and body gets a deployment of its own', async () => {
    const { slug } = await makeApp(t.url, owner);
    const collaborator = await makeUser(t.gateway);
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
    const key = unique('key');
    const body = { project: slug };

    const mine = await post(owner, body, key);
    const theirs = await post(collaborator, body, key);
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.id).not.toBe(mine.body.id);

    // …and each replays its own.
    expect((await post(owner, body, key)).body.id).toBe(mine.body.id);
    expect((await post(collaborator, body, key)).body.id).toBe(theirs.body.id);
    expect(await rowsOf(slug)).toEqual([mine.body.id, theirs.body.id].sort());
  });

  it('a key longer than 255 characters is a 422 on Idempotency-Key', async () => {
    const { slug } = await makeApp(t.url, owner);
    const res = await post(owner, { project: slug }, 'k'.repeat(256));
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('Idempotency-Key');
    expect(await rowsOf(slug)).toEqual([]);
  });

  describe('GraphQL twin', () => {
    it('deploy(idempotencyKey:) with the same input returns the first deployment, once', async () => {
      const { slug } = await makeApp(t.url, owner);
      const key = unique('key');
      const input = { project: slug, env: { X: 'y' } };
      const first = await gqlOk(t.url, owner.token, DeployDocument, { input, idempotencyKey: key });
      const second = await gqlOk(t.url, owner.token, DeployDocument, { input, idempotencyKey: key });
      expect(second.deploy).toEqual(first.deploy);
      expect(await rowsOf(slug)).toEqual([first.deploy.id]);
    });

    it('deploy(idempotencyKey:) with another input is BAD_USER_INPUT on idempotencyKey and writes nothing', async () => {
      const { slug } = await makeApp(t.url, owner);
      const key = unique('key');
      const first = await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug }, idempotencyKey: key });
      const keysBefore = await keyCount();
      const res = await gql(t.url, owner.token, DeployDocument, { input: { project: slug, env: { Z: '1' } }, idempotencyKey: key });
      expect(res.data).toBeFalsy();
      expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0].extensions?.errors.map((e: { field: string }) => e.field)).toEqual(['idempotencyKey']);
      expect(await rowsOf(slug)).toEqual([first.deploy.id]);
      expect(await keyCount()).toBe(keysBefore);
    });

    it('10 concurrent deploy mutations with the same key make exactly one deployment', async () => {
      const { slug } = await makeApp(t.url, owner);
      const key = unique('key');
      const results = await Promise.all(
        Array.from({ length: 10 }, () => gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug }, idempotencyKey: key })),
      );
      const ids = new Set(results.map((r) => r.deploy.id));
      expect(ids.size).toBe(1);
      expect(await rowsOf(slug)).toEqual([...ids]);
    });

    it('shares keys with REST: a REST key replayed over GraphQL returns the same deployment', async () => {
      const { slug } = await makeApp(t.url, owner);
      const key = unique('key');
      const viaRest = await post(owner, { project: slug, env: { K: 'v' } }, key);
      expect(viaRest.status).toBe(201);
      const viaGraphql = await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug, env: { K: 'v' } }, idempotencyKey: key });
      expect(viaGraphql.deploy.id).toBe(viaRest.body.id);
      expect(await rowsOf(slug)).toEqual([viaRest.body.id]);
    });
  });
});
