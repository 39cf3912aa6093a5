import { DeploymentDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { settle, TestUser } from '../support/factories';
import { deleteVolume, eggWithPeople, postVolume } from './helpers';

/** Size mounted at /data on each deploy: what the deployment records as volume_mb. */
describe('a volume is mounted on the next deploy', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  async function restDeploy(user: TestUser, slug: string): Promise<{ id: string; volume_mb: number | null }> {
    const res = await rest(t.url, user.token, 'POST', '/deploy', { project: slug });
    expect(res.status).toBe(201);
    return res.body;
  }

  async function volumeMbOf(user: TestUser, id: string): Promise<number | null> {
    const res = await rest(t.url, user.token, 'GET', `/deployments/${id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toContain('volume_mb');
    return res.body.volume_mb;
  }

  it('none before a volume; the provisioned size from the next deploy; a resize waits for the deploy after it; a deleted volume is detached', async () => {
    const { owner, collaborator, slug } = await eggWithPeople(t);

    const before = await restDeploy(owner, slug);
    expect(before.volume_mb).toBeNull();
    expect(await volumeMbOf(owner, before.id)).toBeNull();
    expect(await settle(t.url, owner, before.id)).toBe('LIVE');

    expect((await postVolume(t, owner.token, slug, { size_mb: 100 })).status).toBe(201);
    // The running deployment does not get it.
    expect(await volumeMbOf(owner, before.id)).toBeNull();

    const withVolume = await restDeploy(owner, slug);
    expect(withVolume.volume_mb).toBe(100);
    expect(await volumeMbOf(owner, withVolume.id)).toBe(100);
    expect(await volumeMbOf(owner, before.id)).toBeNull();
    expect(await settle(t.url, owner, withVolume.id)).toBe('LIVE');

    expect((await postVolume(t, collaborator.token, slug, { size_mb: 300 })).status).toBe(200);
    expect(await volumeMbOf(owner, withVolume.id)).toBe(100);

    const resized = await restDeploy(collaborator, slug);
    expect(await volumeMbOf(owner, resized.id)).toBe(300);
    expect(await volumeMbOf(owner, withVolume.id)).toBe(100);
    expect(await settle(t.url, owner, resized.id)).toBe('LIVE');

    const graced = await deleteVolume(t, owner.token, slug);
    expect(graced.status).toBe(200);
    expect(graced.body.status).toBe('grace_deleting');
    expect(await volumeMbOf(owner, resized.id)).toBe(300);

    const detached = await restDeploy(owner, slug);
    expect(await volumeMbOf(owner, detached.id)).toBeNull();
    expect(await volumeMbOf(owner, resized.id)).toBe(300);
    expect(await volumeMbOf(owner, withVolume.id)).toBe(100);
  });

  it('a restored volume is mounted again on the next deploy; after DELETE ?now=true it is not', async () => {
    const { owner, slug } = await eggWithPeople(t, { sizeMb: 200 });
    expect((await deleteVolume(t, owner.token, slug)).status).toBe(200);
    expect((await restDeploy(owner, slug)).volume_mb).toBeNull();

    expect((await postVolume(t, owner.token, slug, { size_mb: 250 })).status).toBe(200);
    const restored = await restDeploy(owner, slug);
    expect(await volumeMbOf(owner, restored.id)).toBe(250);

    expect((await deleteVolume(t, owner.token, slug, '?now=true')).status).toBe(204);
    const gone = await restDeploy(owner, slug);
    expect(await volumeMbOf(owner, gone.id)).toBeNull();
    expect(await volumeMbOf(owner, restored.id)).toBe(250);
  });

  it('GraphQL twin: Deployment.volumeMb is null before a volume and the size after', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const first = await restDeploy(owner, slug);
    expect((await gqlOk(t.url, owner.token, DeploymentDocument, { id: first.id })).deployment.volumeMb).toBeNull();

    expect((await postVolume(t, owner.token, slug, { size_mb: 64 })).status).toBe(201);
    const second = await restDeploy(owner, slug);
    expect((await gqlOk(t.url, owner.token, DeploymentDocument, { id: second.id })).deployment.volumeMb).toBe(64);
    expect((await gqlOk(t.url, owner.token, DeploymentDocument, { id: first.id })).deployment.volumeMb).toBeNull();
  });
});
