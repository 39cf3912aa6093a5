import { AddCollaboratorDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser, unique } from '../support/factories';

// Builds take ten minutes here: deployments stay BUILDING unless a test finishes them.
describe('GET /deployments', () => {
  let t: TestGateway;
  let owner: TestUser;
  let collaborator: TestUser;
  let stranger: TestUser;
  let eggA: string;
  let eggB: string;
  let strangerEgg: string;
  /** Every deployment the owner can see, in creation order. */
  const ownerIds: string[] = [];
  const eggBIds: string[] = [];
  const strangerIds: string[] = [];
  let failedIds: string[];
  let liveIds: string[];

  const create = async (user: TestUser, project: string): Promise<string> => {
    const res = await rest(t.url, user.token, 'POST', '/deploy', { project });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const ids = (body: { data: Array<{ id: string }> }) => body.data.map((d) => d.id);
  const newestFirst = (list: string[]) => [...list].reverse();

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '600000' });
    owner = await makeUser(t.gateway);
    collaborator = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
    eggA = (await makeApp(t.url, owner)).slug;
    eggB = (await makeApp(t.url, owner)).slug;
    strangerEgg = (await makeApp(t.url, stranger)).slug;
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: eggB, email: collaborator.email });

    for (let i = 0; i < 23; i++) {
      const project = i % 8 === 3 ? eggB : eggA;
      const id = await create(owner, project);
      ownerIds.push(id);
      if (project === eggB) eggBIds.push(id);
    }
    for (let i = 0; i < 2; i++) strangerIds.push(await create(stranger, strangerEgg));

    // Finish a few builds through the service, so the list holds every status (eggBIds[1] is ownerIds[11]).
    const deployments = t.gateway.services.deployments;
    failedIds = [ownerIds[2], ownerIds[11]];
    liveIds = [ownerIds[5], eggBIds[2]];
    for (const id of failedIds) await deployments.finishBuild(id, { ok: false, reason: 'test: failed on purpose' });
    for (const id of liveIds) await deployments.finishBuild(id, { ok: true });
  });
  afterAll(() => t.stop());

  it('is a {data, has_more, next_cursor} wrapper, newest first, 20 by default', async () => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'has_more', 'next_cursor']);
    expect(res.body.data).toHaveLength(20);
    expect(ids(res.body)).toEqual(newestFirst(ownerIds).slice(0, 20));
    expect(res.body.has_more).toBe(true);
    expect(typeof res.body.next_cursor).toBe('string');
    const createdAt = res.body.data.map((d: { created_at: string }) => Date.parse(d.created_at));
    expect(createdAt).toEqual([...createdAt].sort((a, b) => b - a));
    expect(res.body.data[0]).toMatchObject({ id: ownerIds.at(-1), status: 'building', env_keys: [] });
  });

  it('pages through everything with limit and cursor, without duplicates or gaps', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const path: string = `/deployments?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await rest(t.url, owner.token, 'GET', path);
      expect(res.status).toBe(200);
      pages++;
      seen.push(...ids(res.body));
      if (!res.body.has_more) {
        expect(res.body.next_cursor).toBeNull();
        break;
      }
      expect(res.body.data).toHaveLength(7);
      cursor = res.body.next_cursor;
      expect(pages).toBeLessThan(10);
    }
    expect(pages).toBe(Math.ceil(ownerIds.length / 7));
    expect(seen).toEqual(newestFirst(ownerIds));
  });

  it('returns everything in one page when the limit allows, with has_more false', async () => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments?limit=100');
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual(newestFirst(ownerIds));
    expect(res.body).toMatchObject({ has_more: false, next_cursor: null });

    const exact = await rest(t.url, owner.token, 'GET', `/deployments?limit=${ownerIds.length}`);
    expect(ids(exact.body)).toEqual(newestFirst(ownerIds));
    expect(exact.body).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('rejects a limit outside 1..100, or not an integer, and a foreign cursor with 422', async () => {
    for (const limit of ['0', '101', '-1', 'abc', '2.5']) {
      const res = await rest(t.url, owner.token, 'GET', `/deployments?limit=${limit}`);
      expect({ limit, status: res.status }).toEqual({ limit, status: 422 });
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('limit');
    }
    const bad = await rest(t.url, owner.token, 'GET', '/deployments?cursor=not-a-cursor');
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('cursor');
  });

  it('filters by project', async () => {
    const res = await rest(t.url, owner.token, 'GET', `/deployments?project=${eggB}`);
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual(newestFirst(eggBIds));
    expect(res.body.data.every((d: { project: string }) => d.project === eggB)).toBe(true);
    expect(res.body.has_more).toBe(false);

    const paged = await rest(t.url, owner.token, 'GET', `/deployments?project=${eggA}&limit=5`);
    expect(ids(paged.body)).toEqual(newestFirst(ownerIds.filter((id) => !eggBIds.includes(id))).slice(0, 5));
    const next = await rest(t.url, owner.token, 'GET', `/deployments?project=${eggA}&limit=5&cursor=${paged.body.next_cursor}`);
    expect(ids(next.body)).toEqual(newestFirst(ownerIds.filter((id) => !eggBIds.includes(id))).slice(5, 10));
  });

  it('filters by status, also combined with project', async () => {
    const failed = await rest(t.url, owner.token, 'GET', '/deployments?status=failed');
    expect(failed.status).toBe(200);
    expect(ids(failed.body)).toEqual(newestFirst(failedIds));
    expect(failed.body.data.every((d: { status: string }) => d.status === 'failed')).toBe(true);

    const live = await rest(t.url, owner.token, 'GET', '/deployments?status=live&limit=100');
    expect(ids(live.body)).toEqual([...liveIds].sort().reverse());

    const building = await rest(t.url, owner.token, 'GET', '/deployments?status=building&limit=100');
    expect(ids(building.body)).toEqual(newestFirst(ownerIds.filter((id) => !failedIds.includes(id) && !liveIds.includes(id))));

    const liveInB = await rest(t.url, owner.token, 'GET', `/deployments?project=${eggB}&status=live`);
    expect(ids(liveInB.body)).toEqual([eggBIds[2]]);

    const bad = await rest(t.url, owner.token, 'GET', '/deployments?status=sleeping');
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('status');
  });

  it("lists only the deployments of eggs the caller can see, and 404s another's egg", async () => {
    const theirs = await rest(t.url, stranger.token, 'GET', '/deployments?limit=100');
    expect(ids(theirs.body)).toEqual(newestFirst(strangerIds));

    const collab = await rest(t.url, collaborator.token, 'GET', '/deployments?limit=100');
    expect(ids(collab.body)).toEqual(newestFirst(eggBIds));

    const nobody = await makeUser(t.gateway);
    const empty = await rest(t.url, nobody.token, 'GET', '/deployments');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ data: [], has_more: false, next_cursor: null });

    const hidden = await rest(t.url, owner.token, 'GET', `/deployments?project=${strangerEgg}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body.code).toBe('not_found');
    const forCollab = await rest(t.url, collaborator.token, 'GET', `/deployments?project=${eggA}`);
    expect(forCollab.status).toBe(404);
    const unknown = await rest(t.url, owner.token, 'GET', `/deployments?project=${unique('none')}`);
    expect(unknown.status).toBe(404);
  });

  it('rejects unknown query parameters with 422 naming them', async () => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments?colour=red');
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('colour');
  });
});
