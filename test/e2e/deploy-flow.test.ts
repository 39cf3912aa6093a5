import { DeploymentLogStreamDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { collect, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';

describe('deploy over REST, watch over graphql-ws', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  it('goes building → live and streams build logs that complete with the build', async () => {
    const created = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug, env: { GREETING: 'hi' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'building', project: slug, env_keys: ['GREETING'] });
    expect(created.body.id).toMatch(/^dep_/);
    expect(created.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const client = wsClient(t.url, owner.token);
    const status = collect(client, DeploymentStatusDocument, { id: created.body.id });
    const build = collect(client, DeploymentLogStreamDocument, { id: created.body.id, type: 'BUILD' });
    await build.done;
    const [first, second] = await status.waitFor(2);
    expect(first.deploymentStatus.status).toBe('BUILDING');
    expect(second.deploymentStatus.status).toBe('LIVE');

    const seqs = build.items.map((i) => i.deploymentLogs.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(build.items.every((i) => i.deploymentLogs.type === 'BUILD')).toBe(true);
    expect(build.items.at(-1)!.deploymentLogs.message).toMatch(/Build succeeded/);
    await client.dispose();

    const logs = await rest(t.url, owner.token, 'GET', `/deployments/${created.body.id}/logs?type=build`);
    expect(logs.status).toBe(200);
    expect(logs.body.data.map((l: { message: string }) => l.message)).toEqual(build.items.map((i) => i.deploymentLogs.message));
  });
});
