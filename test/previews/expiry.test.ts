import { ManualClock } from '../../src/clock';
import { startGateway, TestGateway } from '../support/gateway';
import { expectProblem } from '../rest/problem';
import {
  DAY_MS,
  eggResources,
  eggWithPeople,
  HOUR_MS,
  listPreviews,
  postPreview,
  PreviewRuntime,
  statusAfterBuild,
  storedPreviews,
  StoredResource,
  TTL_MS,
} from './helpers';

const iso = (ms: number) => new Date(ms).toISOString();

describe('preview environments: automatic expiry', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock, runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const expire = () => t.gateway.services.previews.expire();
  const prs = async (token: string, slug: string) => (await listPreviews(t, token, slug)).body.data.map((p: { pr_number: number }) => p.pr_number) as number[];
  const inRuntime = (resources: StoredResource[]) => resources.map((r) => sim.previewResources.has(r.external_id));

  it('kept one second before expires_at; torn down at expires_at (rows and runtime resources gone); a younger preview is kept', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const start = clock.now().getTime();
    const old = await postPreview(t, owner.token, slug, { pr_number: 1 });
    expect(old.status).toBe(201);
    expect(old.body.expires_at).toBe(iso(start + TTL_MS));
    expect(await statusAfterBuild(t, sim, owner.token, slug, 1)).toBe('ready');
    clock.advance(HOUR_MS);
    expect((await postPreview(t, owner.token, slug, { pr_number: 2 })).status).toBe(201);
    expect(await statusAfterBuild(t, sim, owner.token, slug, 2)).toBe('ready');

    const [row1, row2] = await storedPreviews(t, slug);
    const all = await eggResources(t, slug);
    const res1 = all.filter((r) => r.preview_id === row1.id);
    const res2 = all.filter((r) => r.preview_id === row2.id);
    expect([res1.length, res2.length]).toEqual([3, 3]);

    clock.set(new Date(start + TTL_MS - 1000));
    await expire();
    expect(await prs(owner.token, slug)).toEqual([2, 1]);
    expect(await eggResources(t, slug)).toEqual(all);
    expect(inRuntime(all).every(Boolean)).toBe(true);

    clock.set(new Date(start + TTL_MS));
    await expire();
    expect(await prs(owner.token, slug)).toEqual([2]);
    expect((await storedPreviews(t, slug)).map((p) => p.id)).toEqual([row2.id]);
    expect(await eggResources(t, slug)).toEqual(res2);
    expect(inRuntime(res1)).toEqual([false, false, false]);
    expect(inRuntime(res2)).toEqual([true, true, true]);

    clock.advance(HOUR_MS);
    await expire();
    expect(await prs(owner.token, slug)).toEqual([]);
    expect(await eggResources(t, slug)).toEqual([]);
    expect(inRuntime(res2)).toEqual([false, false, false]);
  });

  it('an updated preview keeps living past its first expiry until the extended one', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const start = clock.now().getTime();
    expect((await postPreview(t, owner.token, slug, { pr_number: 7 })).status).toBe(201);
    expect(await statusAfterBuild(t, sim, owner.token, slug, 7)).toBe('ready');

    clock.advance(DAY_MS);
    const updated = await postPreview(t, owner.token, slug, { pr_number: 7 });
    expect(updated.status).toBe(200);
    expect(updated.body.expires_at).toBe(iso(start + DAY_MS + TTL_MS));
    expect(await statusAfterBuild(t, sim, owner.token, slug, 7, 2)).toBe('ready');
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(3);

    clock.set(new Date(start + TTL_MS));
    await expire();
    expect(await prs(owner.token, slug)).toEqual([7]);
    expect(inRuntime(resources)).toEqual([true, true, true]);

    clock.set(new Date(start + DAY_MS + TTL_MS - 1000));
    await expire();
    expect(await prs(owner.token, slug)).toEqual([7]);

    clock.set(new Date(start + DAY_MS + TTL_MS));
    await expire();
    expect(await prs(owner.token, slug)).toEqual([]);
    expect(await storedPreviews(t, slug)).toEqual([]);
    expect(await eggResources(t, slug)).toEqual([]);
    expect(inRuntime(resources)).toEqual([false, false, false]);
  });

  it('an expired preview still building is torn down, its build stops and does not bring it back; the freed slot can be used again', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const start = clock.now().getTime();
    for (const pr of [1, 2]) expect((await postPreview(t, owner.token, slug, { pr_number: pr })).status).toBe(201);
    sim.held.add(`${slug}-pr-3`);
    expect((await postPreview(t, owner.token, slug, { pr_number: 3 })).status).toBe(201);
    expectProblem(await postPreview(t, owner.token, slug, { pr_number: 4 }), 422, 'limit_exceeded');
    const resources = await eggResources(t, slug);

    clock.set(new Date(start + TTL_MS));
    await expire();
    expect(await sim.buildEnded(`${slug}-pr-3`, 1)).toEqual({ aborted: true });
    sim.release(`${slug}-pr-3`);
    expect(await storedPreviews(t, slug)).toEqual([]);
    expect(await eggResources(t, slug)).toEqual([]);
    expect(inRuntime(resources).some(Boolean)).toBe(false);

    const again = await postPreview(t, owner.token, slug, { pr_number: 4 });
    expect(again.status).toBe(201);
    expect(again.body.expires_at).toBe(iso(start + 2 * TTL_MS));
  });

  /** How many sessions of this database wait for a lock (raw SQL). */
  const lockWaiters = async (): Promise<number> =>
    (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n;

  it('an update that lands while the expiry job is tearing the preview down is not lost: the preview lives on with the expiry the response gave', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const start = clock.now().getTime();
    expect((await postPreview(t, owner.token, slug, { pr_number: 8 })).status).toBe(201);
    expect(await statusAfterBuild(t, sim, owner.token, slug, 8)).toBe('ready');

    clock.set(new Date(start + TTL_MS));
    const hold = sim.holdTeardowns();
    const expiring = expire();
    await hold.started; // the job has picked the preview and is removing its resources

    let settled = false;
    const posting = postPreview(t, owner.token, slug, { pr_number: 8 }).finally(() => (settled = true));
    // Let the update finish, or stop once it waits on a lock the job holds (bounded).
    for (let i = 0; i < 1000 && !settled; i++) if ((await lockWaiters()) > 0) break;
    hold.release();
    const [res] = await Promise.all([posting, expiring]);

    expect([200, 201]).toContain(res.status);
    expect(res.body.expires_at).toBe(iso(start + 2 * TTL_MS));
    const listed = (await listPreviews(t, owner.token, slug)).body.data;
    expect(listed.map((p: { pr_number: number; expires_at: string }) => [p.pr_number, p.expires_at])).toEqual([[8, res.body.expires_at]]);
    const resources = await eggResources(t, slug);
    expect(resources).toHaveLength(3);
    expect(inRuntime(resources)).toEqual([true, true, true]);
  });
});
