import { ManualClock } from '../../src/clock';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { SimulatedRuntime } from '../../src/runtime/simulated.runtime';
import { startGateway, TestGateway } from '../support/gateway';
import { expectProblem } from '../rest/problem';
import { deleteVolume, eggWithPeople as eggWithVolume, getVolume, usageRow, volumeRows } from '../volumes/helpers';
import { eggResources, eggWithPeople, HOUR_MS, listPreviews, postPreview, PreviewRuntime, statusAfterBuild, storedPreviews, TTL_MS } from '../previews/helpers';

const DEADLINE_MS = 20_000;

/** Polls `probe` until it returns a value other than undefined, or fails after DEADLINE_MS naming `what`. */
async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The clock-driven clean-ups run by the gateway's pg-boss workers (HATCHERY_JOBS=on), not by a
 * test calling the service: a separate pg-boss client queues a run of the queue, and the
 * gateway's worker for it does the work.
 */
describe('pg-boss job handlers do the clock-driven clean-ups', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;
  let sim: PreviewRuntime;
  let trigger: Jobs;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' }, { clock, runtime: (ds) => (sim = new PreviewRuntime(ds)) });
    trigger = new Jobs(t.db.url, createLogger('silent'));
    await trigger.start([]);
  });
  afterAll(async () => {
    await trigger?.stop(1000);
    await t?.stop();
  });

  const finishedRuns = async (queue: string): Promise<{ completed: number; failed: number }> => {
    const [row] = await t.gateway.ds.query(
      `SELECT count(*) FILTER (WHERE state = 'completed')::int AS completed,
              count(*) FILTER (WHERE state IN ('failed', 'retry'))::int AS failed
         FROM pgboss.job WHERE name = $1 AND singleton_key = $2`,
      [queue, `${queue}-now`],
    );
    return row;
  };

  /** Queues a run of `queue` now and waits until the gateway's worker has completed it. */
  async function runJob(queue: string): Promise<void> {
    const before = await finishedRuns(queue);
    await trigger.send(queue);
    await until(`a completed run of ${queue}`, async () => {
      const now = await finishedRuns(queue);
      if (now.failed > before.failed) throw new Error(`a run of ${queue} failed`);
      return now.completed > before.completed ? true : undefined;
    });
  }

  it('volumes-erase: a grace-deleted volume survives a run one second before erase_at, and a run at erase_at erases it (GET 404, row and runtime data gone)', async () => {
    const { owner, slug } = await eggWithVolume(t, { sizeMb: 100 });
    const kept = await eggWithVolume(t, { sizeMb: 100 });
    await SimulatedRuntime.setVolumeUsage(t.gateway.ds, slug, 40);
    const deleted = await deleteVolume(t, owner.token, slug);
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('grace_deleting');
    const eraseAt = new Date(deleted.body.erase_at).getTime();

    clock.set(new Date(eraseAt - 1000));
    await runJob('volumes-erase');
    const still = await getVolume(t, owner.token, slug);
    expect(still.status).toBe(200);
    expect(still.body).toMatchObject({ status: 'grace_deleting', size_mb: 100, used_mb: 40 });
    expect(await volumeRows(t, slug)).toBe(1);

    clock.set(new Date(eraseAt));
    await trigger.send('volumes-erase');
    const gone = await until('the volume to be erased', async () => {
      const res = await getVolume(t, owner.token, slug);
      return res.status === 404 ? res : undefined;
    });
    expectProblem(gone, 404, 'not_found');
    expect(await volumeRows(t, slug)).toBe(0);
    await until('the runtime data to be erased', async () => ((await usageRow(t, slug)) === null ? true : undefined));
    // An active volume is never erased by the job.
    expect((await getVolume(t, kept.owner.token, kept.slug)).body).toMatchObject({ status: 'active', size_mb: 100 });
  });

  it('previews-expire: a run one second before expires_at keeps the preview; a run at it tears it down like DELETE (rows and runtime resources gone); a younger preview is kept', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const start = clock.now().getTime();
    expect((await postPreview(t, owner.token, slug, { pr_number: 1 })).status).toBe(201);
    expect(await statusAfterBuild(t, sim, owner.token, slug, 1)).toBe('ready');
    clock.advance(HOUR_MS);
    expect((await postPreview(t, owner.token, slug, { pr_number: 2 })).status).toBe(201);
    expect(await statusAfterBuild(t, sim, owner.token, slug, 2)).toBe('ready');

    const [old, young] = await storedPreviews(t, slug);
    expect(old.expires_at).toBe(new Date(start + TTL_MS).toISOString());
    const all = await eggResources(t, slug);
    const oldResources = all.filter((r) => r.preview_id === old.id);
    const youngResources = all.filter((r) => r.preview_id === young.id);
    expect([oldResources.length, youngResources.length]).toEqual([3, 3]);
    const prs = async () => (await listPreviews(t, owner.token, slug)).body.data.map((p: { pr_number: number }) => p.pr_number) as number[];

    clock.set(new Date(start + TTL_MS - 1000));
    await runJob('previews-expire');
    expect(await prs()).toEqual([2, 1]);
    expect(await eggResources(t, slug)).toEqual(all);

    clock.set(new Date(start + TTL_MS));
    await trigger.send('previews-expire');
    await until('the expired preview to be torn down', async () => ((await prs()).length === 1 ? true : undefined));
    expect(await prs()).toEqual([2]);
    expect((await storedPreviews(t, slug)).map((p) => p.id)).toEqual([young.id]);
    expect(await eggResources(t, slug)).toEqual(youngResources);
    expect(oldResources.map((r) => sim.previewResources.has(r.external_id))).toEqual([false, false, false]);
    expect(youngResources.map((r) => sim.previewResources.has(r.external_id))).toEqual([true, true, true]);

    // Past the younger one's expiry, the next run takes it too: nothing of the egg's previews is left.
    clock.advance(HOUR_MS);
    await trigger.send('previews-expire');
    await until('the second preview to be torn down', async () => ((await prs()).length === 0 ? true : undefined));
    expect(await eggResources(t, slug)).toEqual([]);
    expect(youngResources.map((r) => sim.previewResources.has(r.external_id))).toEqual([false, false, false]);
  });
});
