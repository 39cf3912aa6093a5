import { UpsertPreviewDocument } from '../../src/client/generated';
import { gql, startGateway, TestGateway } from '../support/gateway';
import { makeApp } from '../support/factories';
import { expectProblem } from '../rest/problem';
import { deletePreview, eggResources, eggWithPeople, listPreviews, postPreview, PreviewRuntime, storedPreviews } from './helpers';

describe('preview environments: at most 3 per egg', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;

  beforeAll(async () => {
    t = await startGateway({}, { runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  /** The runtime's preview resources that appeared since `before`. */
  const addedSince = (before: string[]) => sim.externalIds().filter((id) => !before.includes(id));

  it('3 distinct prs → 201; the 4th → 422 limit_exceeded (field pr_number, GraphQL LIMIT_EXCEEDED); updating one of the 3 → 200; after deleting one a new pr → 201', async () => {
    const { owner, slug } = await eggWithPeople(t);
    for (const pr of [1, 2, 3]) expect((await postPreview(t, owner.token, slug, { pr_number: pr })).status).toBe(201);
    const runtime = sim.externalIds();
    const rows = await storedPreviews(t, slug);
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(9);

    const fourth = await postPreview(t, owner.token, slug, { pr_number: 4 });
    expectProblem(fourth, 422, 'limit_exceeded');
    expect(fourth.body.errors[0].field).toBe('pr_number');
    const gqlFourth = await gql(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 4 });
    expect(gqlFourth.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
    expect(gqlFourth.data?.upsertPreview ?? null).toBeNull();
    // Nothing was made for the refused preview.
    expect((await storedPreviews(t, slug)).map((p) => p.pr_number)).toEqual([1, 2, 3]);
    expect(await eggResources(t, slug)).toEqual(resources);
    expect(sim.externalIds()).toEqual(runtime);
    expect(sim.builds(`${slug}-pr-4`)).toBe(0);

    const updated = await postPreview(t, owner.token, slug, { pr_number: 2 });
    expect(updated.status).toBe(200);
    expect(updated.body.pr_number).toBe(2);
    expect((await storedPreviews(t, slug)).map((p) => p.id)).toEqual(rows.map((p) => p.id));

    expect((await deletePreview(t, owner.token, slug, 1)).status).toBe(204);
    const fifth = await postPreview(t, owner.token, slug, { pr_number: 4 });
    expect(fifth.status).toBe(201);
    expect(fifth.body.slug).toBe(`${slug}-pr-4`);
    expect((await listPreviews(t, owner.token, slug)).body.data.map((p: { pr_number: number }) => p.pr_number)).toEqual([4, 3, 2]);
    expect(await eggResources(t, slug)).toHaveLength(9);
  });

  it('the limit is per egg: a second egg of the same owner still gets its own 3', async () => {
    const { owner, slug } = await eggWithPeople(t);
    for (const pr of [1, 2, 3]) expect((await postPreview(t, owner.token, slug, { pr_number: pr })).status).toBe(201);
    const { slug: second } = await makeApp(t.url, owner);
    for (const pr of [1, 2, 3]) expect((await postPreview(t, owner.token, second, { pr_number: pr })).status).toBe(201);
    expectProblem(await postPreview(t, owner.token, second, { pr_number: 4 }), 422, 'limit_exceeded');
    expect((await storedPreviews(t, second)).map((p) => p.slug)).toEqual([1, 2, 3].map((pr) => `${second}-pr-${pr}`));
  });

  it('race: 10 concurrent POSTs with distinct prs on a fresh egg → exactly 3 × 201 and 7 × 422 limit_exceeded; 3 previews, 9 resources, no leaked runtime resources', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const before = sim.externalIds();
    const prs = Array.from({ length: 10 }, (_, i) => i + 1);

    const results = await Promise.all(prs.map((pr) => postPreview(t, owner.token, slug, { pr_number: pr })));

    const created = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status !== 201);
    expect(created).toHaveLength(3);
    expect(refused).toHaveLength(7);
    for (const r of refused) {
      expectProblem(r, 422, 'limit_exceeded');
      expect(r.body.errors[0].field).toBe('pr_number');
    }

    const rows = await storedPreviews(t, slug);
    expect(rows).toHaveLength(3);
    expect(rows.map((p) => p.pr_number)).toEqual(created.map((r) => r.body.pr_number).sort((a, b) => a - b));
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(9);
    expect(new Set(resources.map((r) => r.preview_id))).toEqual(new Set(rows.map((p) => p.id)));
    // The runtime holds exactly the resources of those 3 previews, nothing of the 7 refused ones.
    expect(addedSince(before)).toEqual(resources.map((r) => r.external_id).sort());

    const listed = await listPreviews(t, owner.token, slug);
    expect(listed.body.data).toHaveLength(3);
  });

  it('race: 6 concurrent POSTs of the same pr on a fresh egg → one 201 and five 200; one preview with one set of resources', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const before = sim.externalIds();

    const results = await Promise.all(Array.from({ length: 6 }, () => postPreview(t, owner.token, slug, { pr_number: 9 })));

    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    for (const r of results) expect(r.body.slug).toBe(`${slug}-pr-9`);
    expect(new Set(results.map((r) => r.body.created_at)).size).toBe(1);
    const rows = await storedPreviews(t, slug);
    expect(rows).toHaveLength(1);
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(3);
    expect(addedSince(before)).toEqual(resources.map((r) => r.external_id).sort());
  });
});
