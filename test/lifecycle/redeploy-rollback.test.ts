import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { DataSource } from 'typeorm';
import {
  AddCollaboratorDocument,
  AppResourcesDocument,
  DeploymentLogStreamDocument,
  DeploymentRollbackDocument,
  RedeployDocument,
  RollbackDocument,
} from '../../src/client/generated';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { untilListening, waitForItem } from '../deployments/helpers';
import { EggSpec, LogSink, RunHooks, RunningEgg } from '../../src/runtime/runtime.port';
import { GatedRuntime } from '../support/gated-runtime';

/** deploy, asking for canRollback in the response: the deployment is BUILDING at that moment. */
const DeployCanRollback = parse(`
  mutation DeployCanRollback($project: String!) {
    deploy(input: { project: $project }) { id status canRollback }
  }
`) as TypedDocumentNode<{ deploy: { id: string; status: string; canRollback: boolean } }, { project: string }>;

/** The egg's main address and what it serves, as the API shows them. */
const MainUrl = parse(`
  query MainUrl($slug: String!) {
    app(slug: $slug) { url currentDeployment { id url } }
  }
`) as TypedDocumentNode<{ app: { url: string; currentDeployment: { id: string; url: string } | null } }, { slug: string }>;

/**
 * The simulated runtime, watched: `serving` maps each slug to the deployment the runtime runs for
 * it (the one the egg's main address reaches); builds of `held` slugs wait until `release(slug)`.
 */
class LifecycleRuntime extends GatedRuntime {
  readonly serving = new Map<string, string>();

  constructor(ds: DataSource) {
    super(ds, { buildMs: 150, runtimeLogMs: 60_000, commandMs: 20 });
  }

  run(spec: EggSpec, log: LogSink, hooks: RunHooks): RunningEgg {
    const egg = super.run(spec, log, hooks);
    this.serving.set(spec.slug, spec.deploymentId);
    const stop = async () => {
      await egg.stop();
      if (this.serving.get(spec.slug) === spec.deploymentId) this.serving.delete(spec.slug);
    };
    return { stop, detach: () => void stop() };
  }
}

describe('redeploy and rollback', () => {
  let t: TestGateway;
  let sim: LifecycleRuntime;
  let owner: TestUser;
  let collaborator: TestUser;
  let stranger: TestUser;

  beforeAll(async () => {
    t = await startGateway({}, { runtime: (ds) => (sim = new LifecycleRuntime(ds)) });
    owner = await makeUser(t.gateway);
    collaborator = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  async function newEgg(): Promise<string> {
    const { slug } = await makeApp(t.url, owner);
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
    return slug;
  }

  async function live(slug: string, env?: Record<string, string>, by: TestUser = owner): Promise<string> {
    const d = await deploy(t.url, by, slug, env);
    expect(await settle(t.url, by, d.id)).toBe('LIVE');
    await untilListening(t.url, by, d.id);
    return d.id;
  }

  const current = async (slug: string) => (await gqlOk(t.url, owner.token, AppResourcesDocument, { slug })).app.currentDeployment?.id ?? null;
  const canRollback = async (id: string) => (await gqlOk(t.url, owner.token, DeploymentRollbackDocument, { id })).deployment.canRollback;
  const mainUrl = async (slug: string) => (await gqlOk(t.url, owner.token, MainUrl, { slug })).app;
  const deploymentUrl = async (id: string) => (await rest(t.url, owner.token, 'GET', `/deployments/${id}`)).body.url as string;
  const volumeMbOf = async (id: string) => {
    const res = await rest(t.url, owner.token, 'GET', `/deployments/${id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toContain('volume_mb');
    return res.body.volume_mb as number | null;
  };
  const deploymentCount = async (slug: string) =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [slug]))[0].n as number;

  describe('redeploy', () => {
    it('builds a new deployment with the same env keys and the egg’s current memory; it goes live and becomes current', async () => {
      const slug = await newEgg();
      const source = await live(slug, { B_KEY: '2', A_KEY: '1' });
      expect(await current(slug)).toBe(source);
      expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 320 })).status).toBe(200);

      const { redeploy } = await gqlOk(t.url, owner.token, RedeployDocument, { id: source });
      expect(redeploy.id).toMatch(/^dep_/);
      expect(redeploy.id).not.toBe(source);
      expect(redeploy).toMatchObject({ status: 'BUILDING', envKeys: ['A_KEY', 'B_KEY'], memoryMb: 320, app: { slug } });
      expect(redeploy.url).not.toBe((await rest(t.url, owner.token, 'GET', `/deployments/${source}`)).body.url);

      expect(await settle(t.url, owner, redeploy.id)).toBe('LIVE');
      const res = await rest(t.url, owner.token, 'GET', `/deployments/${redeploy.id}`);
      expect(res.body).toMatchObject({ id: redeploy.id, project: slug, status: 'live', memory_mb: 320, env_keys: ['A_KEY', 'B_KEY'] });
      const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
      expect(app.currentDeployment).toEqual({ id: redeploy.id, memoryMb: 320 });

      // The source is untouched and can now be rolled back to.
      expect((await rest(t.url, owner.token, 'GET', `/deployments/${source}`)).body).toMatchObject({ status: 'live', memory_mb: 256 });
      expect(await canRollback(source)).toBe(true);
      expect(await canRollback(redeploy.id)).toBe(false);
      const [{ n }] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [slug]);
      expect(n).toBe(2);
    });

    it('carries the env values too: redeploying a deployment whose env makes the build fail fails again', async () => {
      const slug = await newEgg();
      const failed = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      expect(await settle(t.url, owner, failed.id)).toBe('FAILED');
      const { redeploy } = await gqlOk(t.url, owner.token, RedeployDocument, { id: failed.id });
      expect(redeploy.envKeys).toEqual(['HATCHERY_SIMULATE']);
      expect(await settle(t.url, owner, redeploy.id)).toBe('FAILED');
      expect(await current(slug)).toBeNull();
    });

    it('carries the egg’s current volume: volumeMb is the size mounted now, not the source’s', async () => {
      const slug = await newEgg();
      expect((await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/volume`, { size_mb: 100 })).status).toBe(201);
      const source = await live(slug);
      expect(await volumeMbOf(source)).toBe(100);
      expect((await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/volume`, { size_mb: 300 })).status).toBe(200);

      const { redeploy: resized } = await gqlOk(t.url, owner.token, RedeployDocument, { id: source });
      expect(resized).toMatchObject({ status: 'BUILDING', volumeMb: 300 });
      expect(await settle(t.url, owner, resized.id)).toBe('LIVE');
      expect(await volumeMbOf(resized.id)).toBe(300);
      expect(await volumeMbOf(source)).toBe(100);

      // A volume in its grace period is detached: a redeploy mounts nothing.
      const deleted = await rest(t.url, owner.token, 'DELETE', `/v1/apps/${slug}/volume`);
      expect(deleted.status).toBe(200);
      expect(deleted.body.status).toBe('grace_deleting');
      const { redeploy: detached } = await gqlOk(t.url, owner.token, RedeployDocument, { id: source });
      expect(detached.volumeMb).toBeNull();
      expect(await settle(t.url, owner, detached.id)).toBe('LIVE');
      expect(await volumeMbOf(detached.id)).toBeNull();
      expect(await volumeMbOf(resized.id)).toBe(300);
      expect(await volumeMbOf(source)).toBe(100);
    });

    it('the main URL follows: once the redeploy is live, App.url serves it (currentDeployment and the runtime)', async () => {
      const slug = await newEgg();
      const source = await live(slug);
      const main = `https://${slug}.${t.config.appsDomain}`;
      expect(await mainUrl(slug)).toEqual({ url: main, currentDeployment: { id: source, url: await deploymentUrl(source) } });
      expect(sim.serving.get(slug)).toBe(source);

      const { redeploy } = await gqlOk(t.url, owner.token, RedeployDocument, { id: source });
      // Still building: the main URL keeps serving the source.
      expect((await mainUrl(slug)).currentDeployment?.id).toBe(source);
      expect(await settle(t.url, owner, redeploy.id)).toBe('LIVE');
      await untilListening(t.url, owner, redeploy.id);

      expect(await mainUrl(slug)).toEqual({ url: main, currentDeployment: { id: redeploy.id, url: redeploy.url } });
      expect(redeploy.url).not.toBe(main);
      expect(sim.serving.get(slug)).toBe(redeploy.id);
    });

    it('a collaborator may redeploy', async () => {
      const slug = await newEgg();
      const source = await live(slug);
      const { redeploy } = await gqlOk(t.url, collaborator.token, RedeployDocument, { id: source });
      expect(redeploy.id).not.toBe(source);
      expect(await settle(t.url, collaborator, redeploy.id)).toBe('LIVE');
      expect(await current(slug)).toBe(redeploy.id);
    });

    it('a stranger, an unknown id and no token are refused, and nothing is built', async () => {
      const slug = await newEgg();
      const source = await live(slug);
      const count = async () => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments'))[0].n as number;
      const before = await count();
      expect((await gql(t.url, stranger.token, RedeployDocument, { id: source })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect((await gql(t.url, owner.token, RedeployDocument, { id: 'dep_01kzzzzzzzzzzzzzzzzzzzzzzz' })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect((await gql(t.url, null, RedeployDocument, { id: source })).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      expect(await count()).toBe(before);
      expect(await current(slug)).toBe(source);
    });
  });

  describe('rollback', () => {
    it('makes an older live deployment current again; canRollback flips', async () => {
      const slug = await newEgg();
      const older = await live(slug);
      const newer = await live(slug);
      expect(await current(slug)).toBe(newer);
      expect(await canRollback(older)).toBe(true);
      expect(await canRollback(newer)).toBe(false);

      const client = wsClient(t.url, owner.token);
      try {
        const logs = collect(client, DeploymentLogStreamDocument, { id: older, type: 'RUNTIME' });
        await waitForItem(logs, (i) => i.deploymentLogs.message.startsWith('Starting '));

        const { rollback } = await gqlOk(t.url, owner.token, RollbackDocument, { app: slug, to: older });
        expect(rollback.slug).toBe(slug);
        expect(rollback.currentDeployment).toEqual({ id: older, status: 'LIVE', memoryMb: 256 });

        // The older deployment runs again: its runtime starts a second time.
        let starts = 0;
        await waitForItem(logs, (i) => i.deploymentLogs.message.startsWith('Starting ') && ++starts >= 2);
        logs.unsubscribe();
      } finally {
        await client.dispose();
      }

      expect(await current(slug)).toBe(older);
      expect(await canRollback(older)).toBe(false);
      expect(await canRollback(newer)).toBe(true);
      // Nothing was rebuilt.
      const [{ n }] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [slug]);
      expect(n).toBe(2);

      // Forward again, by a collaborator.
      const forward = await gqlOk(t.url, collaborator.token, RollbackDocument, { app: slug, to: newer });
      expect(forward.rollback.currentDeployment?.id).toBe(newer);
      expect(await current(slug)).toBe(newer);
      expect(await canRollback(older)).toBe(true);
      expect(await canRollback(newer)).toBe(false);
    });

    it('the main URL follows: App.url keeps its address and serves the rolled-back deployment; a new live deploy moves it forward again', async () => {
      const slug = await newEgg();
      const older = await live(slug);
      const newer = await live(slug);
      const main = `https://${slug}.${t.config.appsDomain}`;
      const [olderUrl, newerUrl] = [await deploymentUrl(older), await deploymentUrl(newer)];
      expect(new Set([main, olderUrl, newerUrl]).size).toBe(3);
      expect(await mainUrl(slug)).toEqual({ url: main, currentDeployment: { id: newer, url: newerUrl } });
      expect(sim.serving.get(slug)).toBe(newer);

      const { rollback } = await gqlOk(t.url, owner.token, RollbackDocument, { app: slug, to: older });
      expect(rollback.url).toBe(main);
      expect(await mainUrl(slug)).toEqual({ url: main, currentDeployment: { id: older, url: olderUrl } });
      // The runtime behind the main address now runs the older deployment, not the newer one.
      expect(sim.serving.get(slug)).toBe(older);

      const newest = await live(slug);
      expect(await mainUrl(slug)).toEqual({ url: main, currentDeployment: { id: newest, url: await deploymentUrl(newest) } });
      expect(sim.serving.get(slug)).toBe(newest);
    });

    it('to a BUILDING deployment: BAD_USER_INPUT on `to`, nothing changes', async () => {
      const slug = await newEgg();
      const good = await live(slug);
      sim.held.add(slug);
      let building: string;
      try {
        building = (await deploy(t.url, owner, slug)).id;
        expect((await rest(t.url, owner.token, 'GET', `/deployments/${building}`)).body.status).toBe('building');

        const res = await gql(t.url, owner.token, RollbackDocument, { app: slug, to: building });
        expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('to');
        expect(res.data?.rollback ?? null).toBeNull();

        expect(await current(slug)).toBe(good);
        expect(sim.serving.get(slug)).toBe(good);
        expect((await rest(t.url, owner.token, 'GET', `/deployments/${building}`)).body.status).toBe('building');
        expect(await canRollback(building)).toBe(false);
        expect(await deploymentCount(slug)).toBe(2);
      } finally {
        sim.release(slug);
      }
      // Released, the build goes live as usual.
      expect(await settle(t.url, owner, building)).toBe('LIVE');
      expect(await current(slug)).toBe(building);
    });

    it('a collaborator may roll back', async () => {
      const slug = await newEgg();
      const older = await live(slug);
      const newer = await live(slug, undefined, collaborator);
      expect(await current(slug)).toBe(newer);
      const { rollback } = await gqlOk(t.url, collaborator.token, RollbackDocument, { app: slug, to: older });
      expect(rollback.currentDeployment?.id).toBe(older);
      expect(await current(slug)).toBe(older);
    });

    it('to a FAILED deployment: BAD_USER_INPUT on `to`, nothing changes', async () => {
      const slug = await newEgg();
      const good = await live(slug);
      const failed = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      expect(await settle(t.url, owner, failed.id)).toBe('FAILED');
      const res = await gql(t.url, owner.token, RollbackDocument, { app: slug, to: failed.id });
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('to');
      expect(await current(slug)).toBe(good);
    });

    it('to the current deployment: BAD_USER_INPUT on `to`', async () => {
      const slug = await newEgg();
      const only = await live(slug);
      const res = await gql(t.url, owner.token, RollbackDocument, { app: slug, to: only });
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('to');
      expect(await current(slug)).toBe(only);
    });

    it('to a deployment of another egg (even one the caller owns): NOT_FOUND, nothing changes', async () => {
      const slug = await newEgg();
      const older = await live(slug);
      const newer = await live(slug);
      const otherSlug = await newEgg();
      const other = await live(otherSlug);
      const res = await gql(t.url, owner.token, RollbackDocument, { app: slug, to: other });
      expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect(await current(slug)).toBe(newer);
      expect(await current(otherSlug)).toBe(other);
      expect(await canRollback(older)).toBe(true);
    });

    it('a stranger, an unknown egg, an unknown deployment and no token: refused, nothing changes', async () => {
      const slug = await newEgg();
      const older = await live(slug);
      const newer = await live(slug);
      expect((await gql(t.url, stranger.token, RollbackDocument, { app: slug, to: older })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect((await gql(t.url, owner.token, RollbackDocument, { app: 'no-such-egg-here', to: older })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect((await gql(t.url, owner.token, RollbackDocument, { app: slug, to: 'dep_01kzzzzzzzzzzzzzzzzzzzzzzz' })).errors?.[0]?.extensions?.code).toBe(
        'NOT_FOUND',
      );
      expect((await gql(t.url, null, RollbackDocument, { app: slug, to: older })).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      expect(await current(slug)).toBe(newer);
    });
  });

  describe('canRollback', () => {
    it('is false for a BUILDING deployment', async () => {
      const slug = await newEgg();
      await live(slug);
      const { deploy: building } = await gqlOk(t.url, owner.token, DeployCanRollback, { project: slug });
      expect(building).toEqual({ id: building.id, status: 'BUILDING', canRollback: false });
      expect(await settle(t.url, owner, building.id)).toBe('LIVE');
    });

    it('is false for a FAILED deployment, also when another one is current', async () => {
      const slug = await newEgg();
      const failed = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      expect(await settle(t.url, owner, failed.id)).toBe('FAILED');
      expect(await canRollback(failed.id)).toBe(false);
      await live(slug);
      expect(await canRollback(failed.id)).toBe(false);
    });

    it('is false for the current deployment and true for every other live one', async () => {
      const slug = await newEgg();
      const a = await live(slug);
      const b = await live(slug);
      const c = await live(slug);
      expect([await canRollback(a), await canRollback(b), await canRollback(c)]).toEqual([true, true, false]);
    });
  });
});
