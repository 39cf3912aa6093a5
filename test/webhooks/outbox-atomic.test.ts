import { DeployDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { BuildResult } from '../../src/runtime/runtime.port';
import { collect, gql, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { createWebhook } from './helpers';

/**
 * The outbox row and the status change commit together or not at all. A PostgreSQL trigger (on
 * this test's own database, dropped after each test) makes one statement of the transaction
 * fail: the `webhook_deliveries` INSERT, or the `apps` UPDATE that promotes a live deployment,
 * which runs after the INSERT. Builds take 10 minutes here, so the test finishes them itself
 * with `finishBuild` (what the build supervisor calls). Nothing is ever sent: the worker is off
 * and the webhook points at a name under .invalid.
 */
const REFUSE_FN = `CREATE OR REPLACE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN RAISE EXCEPTION 'refused by test trigger on %', TG_TABLE_NAME; END $$`;
const REFUSE_OUTBOX = 'CREATE TRIGGER test_refuse_outbox BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION test_refuse()';
const REFUSE_PROMOTION = 'CREATE TRIGGER test_refuse_promotion BEFORE UPDATE OF current_deployment_id ON apps FOR EACH ROW EXECUTE FUNCTION test_refuse()';

describe('webhook outbox: the delivery row and the status change are one transaction', () => {
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway({
      HATCHERY_SIM_BUILD_MS: '600000',
      HATCHERY_WEBHOOK_WORKER: 'off',
      HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid',
    });
    owner = await makeUser(t.gateway);
    await t.gateway.ds.query(REFUSE_FN);
  });
  afterEach(async () => {
    await t.gateway.ds.query('DROP TRIGGER IF EXISTS test_refuse_outbox ON webhook_deliveries');
    await t.gateway.ds.query('DROP TRIGGER IF EXISTS test_refuse_promotion ON apps');
  });
  afterAll(async () => {
    await t.gateway.ds.query('DROP FUNCTION IF EXISTS test_refuse()');
    await t.stop();
  });

  /** An egg with one webhook. */
  const eggWithHook = async () => {
    const { id: appId, slug } = await makeApp(t.url, owner);
    const hook = await createWebhook(t, owner.token, slug, 'https://hooks.invalid/outbox');
    return { appId, slug, hook };
  };
  const deploymentsOf = async (slug: string): Promise<Array<{ id: string; status: string; revision: number; finished_at: Date | null }>> =>
    t.gateway.ds.query('SELECT d.id, d.status, d.revision, d.finished_at FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [slug]);
  const outbox = async (webhookId: string): Promise<string[]> =>
    (await t.gateway.ds.query('SELECT payload FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id', [webhookId])).map(
      (r: { payload: string }) => `${JSON.parse(r.payload).data.deployment.id}:${JSON.parse(r.payload).data.deployment.status}`,
    );
  const currentOf = async (slug: string): Promise<string | null> =>
    (await t.gateway.ds.query('SELECT current_deployment_id FROM apps WHERE slug = $1', [slug]))[0].current_deployment_id;
  /** Every status event published in-process for a deployment (what status subscribers get). */
  const published = (deploymentId: string) => {
    const seen: string[] = [];
    t.gateway.pubsub.target.addEventListener(`DEPLOYMENT:${deploymentId}`, (e) => {
      const detail = (e as CustomEvent<{ kind: string; deployment?: { status: string } }>).detail;
      if (detail.kind === 'status') seen.push(`${detail.kind}:${detail.deployment?.status ?? ''}`);
    });
    return seen;
  };

  it('deploy: when the outbox INSERT fails, no deployment is created; an egg without webhooks still deploys; without the trigger both are written', async () => {
    const { slug, hook } = await eggWithHook();
    const { slug: plain } = await makeApp(t.url, owner);
    await t.gateway.ds.query(REFUSE_OUTBOX);

    const res = await gql(t.url, owner.token, DeployDocument, { input: { project: slug } });
    expect(res.data ?? null).toBeNull();
    expect(res.errors).toHaveLength(1);
    expect(await deploymentsOf(slug)).toEqual([]);
    expect(await outbox(hook.id)).toEqual([]);

    // The trigger only bites when there is a row to write.
    const other = await deploy(t.url, owner, plain);
    expect(other.status).toBe('BUILDING');
    expect(await deploymentsOf(plain)).toHaveLength(1);

    await t.gateway.ds.query('DROP TRIGGER test_refuse_outbox ON webhook_deliveries');
    const d = await deploy(t.url, owner, slug);
    expect(d.status).toBe('BUILDING');
    expect((await deploymentsOf(slug)).map((x) => [x.id, x.status])).toEqual([[d.id, 'building']]);
    expect(await outbox(hook.id)).toEqual([`${d.id}:building`]);
  });

  it.each<[string, BuildResult, string]>([
    ['live', { ok: true }, 'LIVE'],
    ['failed', { ok: false, reason: 'the test says so' }, 'FAILED'],
  ])('building → %s: when the outbox INSERT fails, the status change rolls back and no subscriber hears of it', async (status, result, upper) => {
    const { slug, hook } = await eggWithHook();
    const d = await deploy(t.url, owner, slug);
    const [before] = await deploymentsOf(slug);
    expect(before).toMatchObject({ id: d.id, status: 'building', finished_at: null });
    const client = wsClient(t.url, owner.token);
    try {
      const stream = collect(client, DeploymentStatusDocument, { id: d.id });
      expect((await stream.waitFor(1))[0].deploymentStatus.status).toBe('BUILDING');
      const events = published(d.id);

      await t.gateway.ds.query(REFUSE_OUTBOX);
      await expect(t.gateway.services.deployments.finishBuild(d.id, result)).rejects.toThrow(/refused by test trigger on webhook_deliveries/);
      expect(await deploymentsOf(slug)).toEqual([before]);
      expect(await currentOf(slug)).toBeNull();
      expect(await outbox(hook.id)).toEqual([`${d.id}:building`]);
      expect(events).toEqual([]);

      // Without the trigger the same change commits with its row, and is published.
      await t.gateway.ds.query('DROP TRIGGER test_refuse_outbox ON webhook_deliveries');
      await t.gateway.services.deployments.finishBuild(d.id, result);
      expect(await deploymentsOf(slug)).toEqual([{ id: d.id, status, revision: before.revision + 1, finished_at: expect.any(Date) }]);
      expect(await currentOf(slug)).toBe(result.ok ? d.id : null);
      expect(await outbox(hook.id)).toEqual([`${d.id}:building`, `${d.id}:${status}`]);
      expect(events).toEqual([`status:${status}`]);
      const items = await stream.waitFor(2);
      expect(items.map((i) => i.deploymentStatus.status)).toEqual(['BUILDING', upper]);
    } finally {
      await client.dispose();
    }
  });

  it('building → live: when a later statement of the same transaction fails (promoting the deployment), the outbox row is rolled back too', async () => {
    const { slug, hook } = await eggWithHook();
    const d = await deploy(t.url, owner, slug);
    const [before] = await deploymentsOf(slug);
    const events = published(d.id);

    await t.gateway.ds.query(REFUSE_PROMOTION);
    await expect(t.gateway.services.deployments.finishBuild(d.id, { ok: true })).rejects.toThrow(/refused by test trigger on apps/);
    expect(await outbox(hook.id)).toEqual([`${d.id}:building`]);
    expect(await deploymentsOf(slug)).toEqual([before]);
    expect(await currentOf(slug)).toBeNull();
    expect(events).toEqual([]);

    await t.gateway.ds.query('DROP TRIGGER test_refuse_promotion ON apps');
    await t.gateway.services.deployments.finishBuild(d.id, { ok: true });
    expect(await outbox(hook.id)).toEqual([`${d.id}:building`, `${d.id}:live`]);
    expect(await currentOf(slug)).toBe(d.id);
    expect(events).toEqual(['status:live']);
  });
});
