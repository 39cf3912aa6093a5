import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { postPreview, PreviewRuntime } from './helpers';

/**
 * A preview build that lasts longer than HATCHERY_LEASE_MS keeps renewing its lease, so another
 * gateway's reclaim job (previews-reclaim) does not build it a second time.
 */
describe('preview build leases', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;
  const LEASE_MS = 300;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_LEASE_MS: String(LEASE_MS) }, { runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  const leaseOf = async (id: string): Promise<number> =>
    new Date((await t.gateway.ds.query('SELECT lease_until FROM previews WHERE id = $1', [id]))[0].lease_until).getTime();

  it('a build held past several leases is renewed, not reclaimed, and built once', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const previewSlug = `${slug}-pr-7`;
    sim.held.add(previewSlug);
    const res = await postPreview(t, owner.token, slug, { pr_number: 7 });
    expect(res.status).toBe(201);
    const [{ id, lease_until }] = await t.gateway.ds.query(`SELECT id, lease_until FROM previews WHERE slug = $1`, [previewSlug]);
    const first = new Date(lease_until).getTime();

    // Renewed past three of its original leases while the build is held.
    const deadline = Date.now() + 10_000;
    while ((await leaseOf(id)) < first + 3 * LEASE_MS) {
      if (Date.now() > deadline) throw new Error('the preview build lease was not renewed');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await t.gateway.services.previews.reclaimOrphans()).toBe(0);
    expect(sim.builds(previewSlug)).toBe(1);

    sim.release(previewSlug);
    expect(await sim.buildEnded(previewSlug, 1)).toEqual({ result: { ok: true } });
  });
});
