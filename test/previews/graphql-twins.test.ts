import { DeletePreviewDocument, PreviewsDocument, UpsertPreviewDocument } from '../../src/client/generated';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import { expectProblem } from '../rest/problem';
import { deletePreview, eggResources, eggWithPeople, listPreviews, postPreview, PreviewRuntime, statusAfterBuild, storedPreviews } from './helpers';

/** GraphQL twins and path edge cases of the preview endpoints that the feature files leave open. */
describe('preview environments: GraphQL twins and edge cases', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;

  beforeAll(async () => {
    t = await startGateway({}, { runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  /** Runs a request that must be rejected and asserts it changed no preview, row or runtime resource. */
  async function changesNothing<T>(slug: string, request: () => Promise<T>): Promise<T> {
    const snapshot = async () => ({ previews: await storedPreviews(t, slug), resources: await eggResources(t, slug), runtime: sim.externalIds() });
    const before = await snapshot();
    const result = await request();
    expect(await snapshot()).toEqual(before);
    return result;
  }

  it('previews(app:) of an unknown slug is NOT_FOUND, like a stranger’s egg (REST 404)', async () => {
    const { owner, stranger, slug } = await eggWithPeople(t);
    const unknown = await gql(t.url, owner.token, PreviewsDocument, { app: 'no-such-egg-here' });
    expect(unknown.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expect(unknown.data ?? null).toBeNull();
    const hidden = await gql(t.url, stranger.token, PreviewsDocument, { app: slug });
    expect(hidden.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expectProblem(await listPreviews(t, owner.token, 'no-such-egg-here'), 404, 'not_found');
    // The egg itself lists fine for its owner.
    expect((await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews).toEqual([]);
  });

  it('upsertPreview with prNumber 0 or -1 is BAD_USER_INPUT naming prNumber, nothing created', async () => {
    const { owner, slug } = await eggWithPeople(t);
    for (const prNumber of [0, -1]) {
      const res = await changesNothing(slug, () => gql(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber }));
      expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('prNumber');
    }
    expect(await storedPreviews(t, slug)).toEqual([]);
  });

  it.each(['0', '-1'])('DELETE …/previews/%s names no preview: 404 not_found (GraphQL NOT_FOUND), the egg’s preview untouched', async (pr) => {
    const { owner, slug } = await eggWithPeople(t);
    expect((await postPreview(t, owner.token, slug, { pr_number: 1 })).status).toBe(201);
    expect(await statusAfterBuild(t, sim, owner.token, slug, 1)).toBe('ready');

    expectProblem(await changesNothing(slug, () => deletePreview(t, owner.token, slug, pr)), 404, 'not_found');
    const twin = await changesNothing(slug, () => gql(t.url, owner.token, DeletePreviewDocument, { app: slug, prNumber: Number(pr) }));
    expect(twin.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expect((await storedPreviews(t, slug)).map((p) => p.pr_number)).toEqual([1]);
  });

  it('race: 10 concurrent GraphQL upsertPreview calls with distinct prs on a fresh egg → exactly 3 created, 7 LIMIT_EXCEEDED on prNumber; 3 previews, 9 resources, no leaked runtime resources', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const before = sim.externalIds();
    const prs = Array.from({ length: 10 }, (_, i) => i + 1);

    const results = await Promise.all(prs.map((prNumber) => gql(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber })));

    const created = results.filter((r) => r.data?.upsertPreview);
    const refused = results.filter((r) => !r.data?.upsertPreview);
    expect(created).toHaveLength(3);
    expect(refused).toHaveLength(7);
    for (const r of created) {
      expect(r.errors).toBeUndefined();
      expect(r.data?.upsertPreview.created).toBe(true);
    }
    for (const r of refused) {
      expect(r.errors).toHaveLength(1);
      expect(r.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
      expect(r.errors?.[0].extensions?.errors?.[0].field).toBe('prNumber');
    }

    const createdPrs = created.map((r) => r.data!.upsertPreview.preview.prNumber).sort((a, b) => a - b);
    const rows = await storedPreviews(t, slug);
    expect(rows.map((p) => p.pr_number)).toEqual(createdPrs);
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(9);
    expect(new Set(resources.map((r) => r.preview_id))).toEqual(new Set(rows.map((p) => p.id)));
    // The runtime holds exactly the resources of those 3 previews, nothing of the 7 refused ones.
    expect(sim.externalIds().filter((id) => !before.includes(id))).toEqual(resources.map((r) => r.external_id).sort());
    for (const pr of prs.filter((p) => !createdPrs.includes(p))) expect(sim.builds(`${slug}-pr-${pr}`)).toBe(0);
    expect((await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews).toHaveLength(3);
  });
});
