import { DeletePreviewDocument, PreviewsDocument, UpsertPreviewDocument } from '../../src/client/generated';
import { gql, startGateway, TestGateway } from '../support/gateway';
import { unique } from '../support/factories';
import { expectInvalid, expectProblem, expectUnauthorized } from '../rest/problem';
import { deletePreview, eggResources, eggWithPeople, listPreviews, postPreview, PreviewRuntime, statusAfterBuild, storedPreviews } from './helpers';

describe('preview environments: validation and access', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;

  beforeAll(async () => {
    t = await startGateway({}, { runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  /** Runs a request that must be rejected and asserts it changed no preview, row or runtime resource. */
  // A build finishing meanwhile moves `status` on its own; the request must change nothing else.
  const snapshot = async (slug: string) => ({
    previews: (await storedPreviews(t, slug)).map(({ status: _status, ...rest }) => rest),
    resources: await eggResources(t, slug),
    runtime: sim.externalIds(),
  });
  async function changesNothing<T>(slug: string, request: () => Promise<T>): Promise<T> {
    const before = await snapshot(slug);
    const result = await request();
    expect(await snapshot(slug)).toEqual(before);
    return result;
  }

  describe('POST body', () => {
    it.each([
      ['0', { pr_number: 0 }, 'pr_number'],
      ['-1', { pr_number: -1 }, 'pr_number'],
      ['1.5', { pr_number: 1.5 }, 'pr_number'],
      ['"3" (a string)', { pr_number: '3' }, 'pr_number'],
      ['null', { pr_number: null }, 'pr_number'],
      ['true', { pr_number: true }, 'pr_number'],
      ['2^31 (beyond Int)', { pr_number: 2 ** 31 }, 'pr_number'],
      ['missing', {}, 'pr_number'],
      ['an unknown field', { pr_number: 1, branch: 'main' }, 'branch'],
    ])('pr_number %s → 422 validation_failed naming the field, nothing created', async (_name, body, field) => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await changesNothing(slug, () => postPreview(t, owner.token, slug, body));
      expectInvalid(res, field);
      expect(await storedPreviews(t, slug)).toEqual([]);
    });

    it('GraphQL upsertPreview with prNumber 0 or -1 → BAD_USER_INPUT, nothing created', async () => {
      const { owner, slug } = await eggWithPeople(t);
      for (const prNumber of [0, -1]) {
        const res = await changesNothing(slug, () => gql(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber }));
        expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
        expect(res.data?.upsertPreview ?? null).toBeNull();
      }
    });
  });

  describe('DELETE path', () => {
    it('an unknown pr → 404 not_found (GraphQL NOT_FOUND), the egg’s other preview untouched', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expectProblem(await deletePreview(t, owner.token, slug, 12), 404, 'not_found');
      expect((await postPreview(t, owner.token, slug, { pr_number: 12 })).status).toBe(201);
      expectProblem(await changesNothing(slug, () => deletePreview(t, owner.token, slug, 13)), 404, 'not_found');
      const res = await changesNothing(slug, () => gql(t.url, owner.token, DeletePreviewDocument, { app: slug, prNumber: 13 }));
      expect(res.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(await statusAfterBuild(t, sim, owner.token, slug, 12)).toBe('ready');
    });

    it.each(['abc', '1.5'])('pr %s → 422 validation_failed with errors[0].field "pr"', async (pr) => {
      const { owner, slug } = await eggWithPeople(t);
      expect((await postPreview(t, owner.token, slug, { pr_number: 1 })).status).toBe(201);
      const res = await changesNothing(slug, () => deletePreview(t, owner.token, slug, pr));
      expectProblem(res, 422, 'validation_failed');
      expect(res.body.errors[0].field).toBe('pr');
      expect(await statusAfterBuild(t, sim, owner.token, slug, 1)).toBe('ready');
    });
  });

  describe('who may', () => {
    it('a collaborator may create, list and delete previews', async () => {
      const { owner, collaborator, slug } = await eggWithPeople(t);
      const created = await postPreview(t, collaborator.token, slug, { pr_number: 3 });
      expect(created.status).toBe(201);
      expect(created.body.slug).toBe(`${slug}-pr-3`);
      const listed = await listPreviews(t, collaborator.token, slug);
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([created.body]);
      // The owner sees the collaborator's preview too.
      expect((await listPreviews(t, owner.token, slug)).body.data).toEqual([created.body]);
      expect((await postPreview(t, collaborator.token, slug, { pr_number: 3 })).status).toBe(200);

      const [row] = await storedPreviews(t, slug);
      const res = await deletePreview(t, collaborator.token, slug, 3);
      expect(res.status).toBe(204);
      expect(await storedPreviews(t, slug)).toEqual([]);
      expect(sim.externalIds().filter((id) => id.endsWith(row.id))).toEqual([]);
    });

    it('a stranger gets 404 not_found on POST, GET and DELETE (GraphQL NOT_FOUND), and changes nothing', async () => {
      const { owner, stranger, slug } = await eggWithPeople(t);
      expect((await postPreview(t, owner.token, slug, { pr_number: 1 })).status).toBe(201);

      expectProblem(await changesNothing(slug, () => postPreview(t, stranger.token, slug, { pr_number: 2 })), 404, 'not_found');
      expectProblem(await changesNothing(slug, () => postPreview(t, stranger.token, slug, { pr_number: 1 })), 404, 'not_found');
      expectProblem(await listPreviews(t, stranger.token, slug), 404, 'not_found');
      expectProblem(await changesNothing(slug, () => deletePreview(t, stranger.token, slug, 1)), 404, 'not_found');

      const up = await changesNothing(slug, () => gql(t.url, stranger.token, UpsertPreviewDocument, { app: slug, prNumber: 2 }));
      expect(up.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      const list = await gql(t.url, stranger.token, PreviewsDocument, { app: slug });
      expect(list.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      const del = await changesNothing(slug, () => gql(t.url, stranger.token, DeletePreviewDocument, { app: slug, prNumber: 1 }));
      expect(del.errors?.[0].extensions?.code).toBe('NOT_FOUND');

      expect((await storedPreviews(t, slug)).map((p) => p.pr_number)).toEqual([1]);
      expect(await statusAfterBuild(t, sim, owner.token, slug, 1)).toBe('ready');
    });

    it('an unknown slug → 404 not_found on POST, GET and DELETE', async () => {
      const { owner } = await eggWithPeople(t);
      const slug = unique('nope');
      const runtime = sim.externalIds();
      expectProblem(await postPreview(t, owner.token, slug, { pr_number: 1 }), 404, 'not_found');
      expectProblem(await listPreviews(t, owner.token, slug), 404, 'not_found');
      expectProblem(await deletePreview(t, owner.token, slug, 1), 404, 'not_found');
      expect(sim.externalIds()).toEqual(runtime);
    });

    it('no token → 401 unauthorized with WWW-Authenticate: Bearer on POST, GET and DELETE (GraphQL UNAUTHENTICATED), nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expect((await postPreview(t, owner.token, slug, { pr_number: 1 })).status).toBe(201);

      expectUnauthorized(await changesNothing(slug, () => postPreview(t, null, slug, { pr_number: 2 })));
      expectUnauthorized(await listPreviews(t, null, slug));
      expectUnauthorized(await changesNothing(slug, () => deletePreview(t, null, slug, 1)));
      expectUnauthorized(await changesNothing(slug, () => postPreview(t, 'hatch_not-a-real-token', slug, { pr_number: 2 })));

      const up = await changesNothing(slug, () => gql(t.url, null, UpsertPreviewDocument, { app: slug, prNumber: 2 }));
      expect(up.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
      const del = await changesNothing(slug, () => gql(t.url, null, DeletePreviewDocument, { app: slug, prNumber: 1 }));
      expect(del.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
      expect(await statusAfterBuild(t, sim, owner.token, slug, 1)).toBe('ready');
    });
  });
});
