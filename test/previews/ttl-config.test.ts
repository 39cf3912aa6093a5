import { ManualClock } from '../../src/clock';
import { startGateway, TestGateway } from '../support/gateway';
import { eggResources, eggWithPeople, HOUR_MS, listPreviews, postPreview, PreviewRuntime } from './helpers';

describe('preview environments: HATCHERY_PREVIEW_TTL_HOURS', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_PREVIEW_TTL_HOURS: '2' }, { clock, runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  it('sets the lifetime: expires_at = now + 2 hours, and the preview is torn down then', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const start = clock.now().getTime();
    const res = await postPreview(t, owner.token, slug, { pr_number: 1 });
    expect(res.status).toBe(201);
    expect(res.body.expires_at).toBe(new Date(start + 2 * HOUR_MS).toISOString());
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(3);

    clock.set(new Date(start + 2 * HOUR_MS - 1000));
    await t.gateway.services.previews.expire();
    expect((await listPreviews(t, owner.token, slug)).body.data).toHaveLength(1);

    clock.set(new Date(start + 2 * HOUR_MS));
    await t.gateway.services.previews.expire();
    expect((await listPreviews(t, owner.token, slug)).body.data).toEqual([]);
    expect(await eggResources(t, slug)).toEqual([]);
    expect(resources.some((r) => sim.previewResources.has(r.external_id))).toBe(false);
  });
});
