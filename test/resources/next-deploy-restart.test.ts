import { AppResourcesDocument, DeploymentLogStreamDocument, RestartAppDocument } from '../../src/client/generated';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, settle, TestUser } from '../support/factories';
import { untilListening, waitForItem } from '../deployments/helpers';
import { eggWithPeople } from './helpers';

const memoryOf = async (t: TestGateway, user: TestUser, id: string): Promise<number> => {
  const res = await rest(t.url, user.token, 'GET', `/deployments/${id}`);
  expect(res.status).toBe(200);
  return res.body.memory_mb;
};

/** Deploys the egg and waits until it is live and its runtime is up. */
async function liveDeployment(t: TestGateway, user: TestUser, slug: string): Promise<string> {
  const created = await rest(t.url, user.token, 'POST', '/deploy', { project: slug });
  expect(created.status).toBe(201);
  expect(await settle(t.url, user, created.body.id)).toBe('LIVE');
  await untilListening(t.url, user, created.body.id);
  return created.body.id;
}

describe('a memory change takes effect on the next deploy or restart only', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('the running deployment keeps its memory; the next deploy records the new one', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const first = await liveDeployment(t, owner, slug);
    expect(await memoryOf(t, owner, first)).toBe(256);

    const patched = await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 384 });
    expect(patched.status).toBe(200);
    expect(await memoryOf(t, owner, first)).toBe(256);
    const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
    expect(app).toMatchObject({ memoryMb: 384, effectiveMemoryMb: 384, currentDeployment: { id: first, memoryMb: 256 } });

    const second = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug });
    expect(second.status).toBe(201);
    expect(await settle(t.url, owner, second.body.id)).toBe('LIVE');
    expect(await memoryOf(t, owner, second.body.id)).toBe(384);
    expect(await memoryOf(t, owner, first)).toBe(256);
    const after = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
    expect(after.app.currentDeployment).toEqual({ id: second.body.id, memoryMb: 384 });
  });

  it('a cleared override gives the next deploy the tier default', async () => {
    const { owner, slug } = await eggWithPeople(t, { tier: 'always_on', memoryMb: 1000 });
    expect((await deploy(t.url, owner, slug)).memoryMb).toBe(1000);
    expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: null })).status).toBe(200);
    const next = await deploy(t.url, owner, slug);
    expect(next.memoryMb).toBe(512);
    expect(await settle(t.url, owner, next.id)).toBe('LIVE');
  });

  it('restartApp restarts the current deployment with the new memory and logs it', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const id = await liveDeployment(t, owner, slug);
    expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 384 })).status).toBe(200);
    expect(await memoryOf(t, owner, id)).toBe(256);

    const client = wsClient(t.url, owner.token);
    try {
      const logs = collect(client, DeploymentLogStreamDocument, { id, type: 'RUNTIME' });
      // The stored go-live line arrives first: the stream is live before we restart.
      await waitForItem(logs, (i) => i.deploymentLogs.message === `Starting ${slug} with 256 MB of memory`);

      const restarted = await gqlOk(t.url, owner.token, RestartAppDocument, { slug });
      expect(restarted.restartApp).toEqual({ slug, currentDeployment: { id, memoryMb: 384 } });

      const items = await waitForItem(logs, (i) => i.deploymentLogs.message === `Starting ${slug} with 384 MB of memory`);
      const starts = items.map((i) => i.deploymentLogs.message).filter((m) => m.startsWith('Starting '));
      expect(starts).toEqual([`Starting ${slug} with 256 MB of memory`, `Starting ${slug} with 384 MB of memory`]);
      const seqs = items.map((i) => i.deploymentLogs.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      logs.unsubscribe();
    } finally {
      await client.dispose();
    }
    expect(await memoryOf(t, owner, id)).toBe(384);
    const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
    expect(app.currentDeployment).toEqual({ id, memoryMb: 384 });
  });

  it('restartApp picks up a tier change: an always_on egg without an override restarts with 512', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const id = await liveDeployment(t, owner, slug);
    expect(await memoryOf(t, owner, id)).toBe(256);
    await t.gateway.services.apps.setTier(slug, 'always_on');
    const restarted = await gqlOk(t.url, owner.token, RestartAppDocument, { slug });
    expect(restarted.restartApp.currentDeployment).toEqual({ id, memoryMb: 512 });
    expect(await memoryOf(t, owner, id)).toBe(512);
  });

  it('a collaborator may restart the egg', async () => {
    const { owner, collaborator, slug } = await eggWithPeople(t);
    const id = await liveDeployment(t, owner, slug);
    expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 128 })).status).toBe(200);
    const restarted = await gqlOk(t.url, collaborator.token, RestartAppDocument, { slug });
    expect(restarted.restartApp.currentDeployment).toEqual({ id, memoryMb: 128 });
  });

  it('restartApp on an egg without a live deployment is BAD_USER_INPUT', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const never = await gql(t.url, owner.token, RestartAppDocument, { slug });
    expect(never.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    const failed = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
    expect(await settle(t.url, owner, failed.id)).toBe('FAILED');
    const onlyFailed = await gql(t.url, owner.token, RestartAppDocument, { slug });
    expect(onlyFailed.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(await memoryOf(t, owner, failed.id)).toBe(256);
  });

  it('restartApp by a stranger or on an unknown slug is NOT_FOUND and restarts nothing', async () => {
    const { owner, stranger, slug } = await eggWithPeople(t);
    const id = await liveDeployment(t, owner, slug);
    expect((await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 384 })).status).toBe(200);
    const res = await gql(t.url, stranger.token, RestartAppDocument, { slug });
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(await memoryOf(t, owner, id)).toBe(256);
    const unknown = await gql(t.url, owner.token, RestartAppDocument, { slug: 'no-such-egg-here' });
    expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const anonymous = await gql(t.url, null, RestartAppDocument, { slug });
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
