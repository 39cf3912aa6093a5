import { DeletePreviewDocument, PreviewsDocument, UpsertPreviewDocument } from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import {
  DAY_MS,
  deletePreview,
  eggResources,
  eggWithPeople,
  ISO_MS,
  listedPreview,
  listPreviews,
  postPreview,
  PreviewRuntime,
  statusAfterBuild,
  storedPreviews,
  storedResources,
  TTL_MS,
} from './helpers';

const iso = (ms: number) => new Date(ms).toISOString();

describe('preview environments: create, update, list, delete', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  describe('POST /v1/apps/:slug/previews', () => {
    it('{pr_number: 12} → 201 {slug <egg>-pr-12, pr_number, url, status building, expires_at = now + 7 days, created_at}; GET shows it building, then ready', async () => {
      const { owner, slug } = await eggWithPeople(t);
      sim.held.add(`${slug}-pr-12`);
      const now = clock.now().getTime();

      const res = await postPreview(t, owner.token, slug, { pr_number: 12 });
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        slug: `${slug}-pr-12`,
        pr_number: 12,
        url: expect.stringMatching(/^https:\/\//),
        status: 'building',
        expires_at: iso(now + TTL_MS),
        created_at: iso(now),
      });
      expect(res.body.created_at).toMatch(ISO_MS);
      expect(new URL(res.body.url).hostname.startsWith(`${slug}--pr-12.`)).toBe(true);

      // While the runtime builds, the preview reads as building.
      expect(await listedPreview(t, owner.token, slug, 12)).toEqual(res.body);
      const [row] = await storedPreviews(t, slug);
      expect(row).toEqual(expect.objectContaining({ pr_number: 12, slug: `${slug}-pr-12`, status: 'building', expires_at: iso(now + TTL_MS) }));

      sim.release(`${slug}-pr-12`);
      expect(await statusAfterBuild(t, sim, owner.token, slug, 12)).toBe('ready');
      expect(await listedPreview(t, owner.token, slug, 12)).toEqual({ ...res.body, status: 'ready' });
      expect(sim.builds(`${slug}-pr-12`)).toBe(1);
    });

    it('the same pr again → 200, building again, expires_at = new now + 7 days, created_at unchanged, still one preview with the same resources', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const created = await postPreview(t, owner.token, slug, { pr_number: 12 });
      expect(created.status).toBe(201);
      expect(await statusAfterBuild(t, sim, owner.token, slug, 12)).toBe('ready');
      const [before] = await storedPreviews(t, slug);
      const resourcesBefore = await storedResources(t, [before.id]);
      const simBefore = sim.externalIds();

      clock.advance(DAY_MS);
      const later = clock.now().getTime();
      sim.held.add(`${slug}-pr-12`);
      const updated = await postPreview(t, owner.token, slug, { pr_number: 12 });
      expect(updated.status).toBe(200);
      expect(updated.body).toEqual({ ...created.body, status: 'building', expires_at: iso(later + TTL_MS), created_at: created.body.created_at });
      expect(await listedPreview(t, owner.token, slug, 12)).toEqual(updated.body);

      const rows = await storedPreviews(t, slug);
      expect(rows).toEqual([{ ...before, status: 'building', expires_at: iso(later + TTL_MS) }]);
      // Redeploying does not provision a second set of routes, database and addons.
      expect(await storedResources(t, [before.id])).toEqual(resourcesBefore);
      expect(sim.externalIds()).toEqual(simBefore);

      sim.release(`${slug}-pr-12`);
      expect(await statusAfterBuild(t, sim, owner.token, slug, 12, 2)).toBe('ready');
      expect((await listPreviews(t, owner.token, slug)).body.data).toEqual([{ ...updated.body, status: 'ready' }]);
    });

    it('a build that fails leaves the preview failed; updating it builds again (building → ready)', async () => {
      const { owner, slug } = await eggWithPeople(t);
      sim.failing.add(`${slug}-pr-5`);
      const created = await postPreview(t, owner.token, slug, { pr_number: 5 });
      expect(created.status).toBe(201);
      expect(created.body.status).toBe('building');
      expect(await statusAfterBuild(t, sim, owner.token, slug, 5)).toBe('failed');
      expect((await storedPreviews(t, slug))[0].status).toBe('failed');
      expect((await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews.map((p) => p.status)).toEqual(['FAILED']);

      sim.failing.delete(`${slug}-pr-5`);
      const again = await postPreview(t, owner.token, slug, { pr_number: 5 });
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('building');
      expect(await statusAfterBuild(t, sim, owner.token, slug, 5, 2)).toBe('ready');
    });
  });

  describe('GET /v1/apps/:slug/previews', () => {
    it('an egg without previews → {data: [], has_more: false, next_cursor: null}', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await listPreviews(t, owner.token, slug);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ data: [], has_more: false, next_cursor: null });
    });

    it('lists the previews newest first, each with slug, pr_number, url, status, expires_at', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const bodies: Record<number, unknown> = {};
      for (const pr of [30, 10, 20]) {
        sim.held.add(`${slug}-pr-${pr}`);
        clock.advance(1000);
        const res = await postPreview(t, owner.token, slug, { pr_number: pr });
        expect(res.status).toBe(201);
        bodies[pr] = res.body;
      }
      const res = await listPreviews(t, owner.token, slug);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [bodies[20], bodies[10], bodies[30]], has_more: false, next_cursor: null });
      for (const p of res.body.data) {
        expect(p).toEqual({
          slug: `${slug}-pr-${p.pr_number}`,
          pr_number: p.pr_number,
          url: expect.stringMatching(/^https:\/\//),
          status: 'building',
          expires_at: expect.stringMatching(ISO_MS),
          created_at: expect.stringMatching(ISO_MS),
        });
      }
      for (const pr of [30, 10, 20]) sim.release(`${slug}-pr-${pr}`);
      for (const pr of [30, 10, 20]) expect(await statusAfterBuild(t, sim, owner.token, slug, pr)).toBe('ready');
    });
  });

  describe('resources and DELETE /v1/apps/:slug/previews/:pr', () => {
    it('each preview owns one route, one database and one addon: in GraphQL, in preview_resources and in the runtime', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await postPreview(t, owner.token, slug, { pr_number: 12 });
      expect(res.status).toBe(201);

      const [listed] = (await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews;
      expect(listed.resources.map((r) => r.kind).sort()).toEqual(['ADDON', 'DATABASE', 'ROUTE']);
      const route = listed.resources.find((r) => r.kind === 'ROUTE')!;
      expect(route.name).toBe(new URL(res.body.url).hostname);
      for (const r of listed.resources) expect(r.name.length).toBeGreaterThan(0);

      const rows = await storedResources(t, [listed.id]);
      expect(rows.map((r) => r.kind).sort()).toEqual(['addon', 'database', 'route']);
      expect(rows.map((r) => ({ kind: r.kind.toUpperCase(), name: r.name })).sort((a, b) => a.kind.localeCompare(b.kind))).toEqual(
        [...listed.resources].sort((a, b) => a.kind.localeCompare(b.kind)),
      );
      for (const r of rows) expect(sim.previewResources.get(r.external_id)).toEqual({ kind: r.kind, name: r.name, externalId: r.external_id });
      expect(await statusAfterBuild(t, sim, owner.token, slug, 12)).toBe('ready');
    });

    it('DELETE → 204, then no previews row, no preview_resources rows, nothing left in the runtime; other previews untouched', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expect((await postPreview(t, owner.token, slug, { pr_number: 12 })).status).toBe(201);
      const other = await postPreview(t, owner.token, slug, { pr_number: 13 });
      expect(other.status).toBe(201);
      const [p12, p13] = await storedPreviews(t, slug);
      expect([p12.pr_number, p13.pr_number]).toEqual([12, 13]);
      const gone = await storedResources(t, [p12.id]);
      const kept = await storedResources(t, [p13.id]);
      expect(gone).toHaveLength(3);
      expect(kept).toHaveLength(3);
      for (const r of [...gone, ...kept]) expect(sim.previewResources.has(r.external_id)).toBe(true);

      const res = await deletePreview(t, owner.token, slug, 12);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();

      expect((await storedPreviews(t, slug)).map((p) => p.pr_number)).toEqual([13]);
      expect(await storedResources(t, [p12.id])).toEqual([]);
      for (const r of gone) expect(sim.previewResources.has(r.external_id)).toBe(false);
      expect(await storedResources(t, [p13.id])).toEqual(kept);
      for (const r of kept) expect(sim.previewResources.has(r.external_id)).toBe(true);
      expect((await listPreviews(t, owner.token, slug)).body.data.map((p: { pr_number: number }) => p.pr_number)).toEqual([13]);

      // It is gone: deleting it again is a 404.
      expect((await deletePreview(t, owner.token, slug, 12)).status).toBe(404);
    });

    it('DELETE while the preview is still building tears it down, and the interrupted build does not bring it back', async () => {
      const { owner, slug } = await eggWithPeople(t);
      sim.held.add(`${slug}-pr-4`);
      expect((await postPreview(t, owner.token, slug, { pr_number: 4 })).status).toBe(201);
      const [row] = await storedPreviews(t, slug);
      const resources = await storedResources(t, [row.id]);

      expect((await deletePreview(t, owner.token, slug, 4)).status).toBe(204);
      expect(await sim.buildEnded(`${slug}-pr-4`, 1)).toEqual({ aborted: true });
      sim.release(`${slug}-pr-4`);
      expect(await storedPreviews(t, slug)).toEqual([]);
      expect(await eggResources(t, slug)).toEqual([]);
      for (const r of resources) expect(sim.previewResources.has(r.external_id)).toBe(false);
      expect((await listPreviews(t, owner.token, slug)).body.data).toEqual([]);
    });
  });

  describe('GraphQL twin', () => {
    it('upsertPreview says created true then false; previews(app) lists it with resources; deletePreview removes it', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const now = clock.now().getTime();
      sim.held.add(`${slug}-pr-7`);
      const first = (await gqlOk(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 7 })).upsertPreview;
      expect(first).toEqual({
        created: true,
        preview: {
          id: expect.stringMatching(/^prv_[0-7][0-9a-hjkmnp-tv-z]{25}$/),
          slug: `${slug}-pr-7`,
          prNumber: 7,
          url: expect.stringMatching(/^https:\/\//),
          status: 'BUILDING',
          failureReason: null,
          expiresAt: iso(now + TTL_MS),
          createdAt: iso(now),
          resources: expect.any(Array),
        },
      });
      expect(first.preview.resources.map((r) => r.kind).sort()).toEqual(['ADDON', 'DATABASE', 'ROUTE']);

      // REST reads the same preview.
      expect(await listedPreview(t, owner.token, slug, 7)).toEqual({
        slug: first.preview.slug,
        pr_number: 7,
        url: first.preview.url,
        status: 'building',
        expires_at: first.preview.expiresAt,
        created_at: first.preview.createdAt,
      });

      clock.advance(DAY_MS);
      const second = (await gqlOk(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 7 })).upsertPreview;
      expect(second).toEqual({ created: false, preview: { ...first.preview, expiresAt: iso(now + DAY_MS + TTL_MS) } });
      expect((await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews).toEqual([second.preview]);

      sim.release(`${slug}-pr-7`);
      expect(await statusAfterBuild(t, sim, owner.token, slug, 7, 2)).toBe('ready');
      expect((await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews).toEqual([{ ...second.preview, status: 'READY' }]);

      const resources = await storedResources(t, [first.preview.id]);
      expect(resources).toHaveLength(3);
      expect((await gqlOk(t.url, owner.token, DeletePreviewDocument, { app: slug, prNumber: 7 })).deletePreview).toBe(true);
      expect((await gqlOk(t.url, owner.token, PreviewsDocument, { app: slug })).previews).toEqual([]);
      expect(await storedResources(t, [first.preview.id])).toEqual([]);
      for (const r of resources) expect(sim.previewResources.has(r.external_id)).toBe(false);

      const again = await gql(t.url, owner.token, DeletePreviewDocument, { app: slug, prNumber: 7 });
      expect(again.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(again.data?.deletePreview ?? null).toBeNull();
    });
  });
});
