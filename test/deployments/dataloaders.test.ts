import { AddCollaboratorDocument, DeploymentLogStreamDocument, DeploymentsWithOwnersDocument } from '../../src/client/generated';
import { collect, gqlOk, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { StatementLog } from '../support/statements';

/**
 * Listing deployments with their egg, owner, latest and current deployment and collaborators must
 * batch its loads: the number of SQL statements does not grow with the number of deployments.
 */
describe('DataLoaders: DeploymentsWithOwners runs a constant number of statements', () => {
  let t: TestGateway;
  let owner: TestUser;
  const sql = new StatementLog();
  const slugs: string[] = [];
  const collaborators: TestUser[] = [];

  beforeAll(async () => {
    // Builds never finish by themselves here, so nothing runs in the background while we count.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '600000' }, { db: { onQuery: sql.onQuery } });
    owner = await makeUser(t.gateway);
    for (let i = 0; i < 5; i++) {
      slugs.push((await makeApp(t.url, owner)).slug);
      const c = await makeUser(t.gateway);
      collaborators.push(c);
      await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slugs[i], email: c.email });
    }
    // A second collaborator on some eggs, so collaborator lists differ in length.
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slugs[0], email: collaborators[1].email });
  });
  afterAll(() => t.stop());

  /** Deploys `n` times to each egg and waits until each build has written its first line. */
  async function deployEach(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (const slug of slugs) for (let i = 0; i < n; i++) ids.push((await deploy(t.url, owner, slug)).id);
    const client = wsClient(t.url, owner.token);
    try {
      await Promise.all(ids.map((id) => collect(client, DeploymentLogStreamDocument, { id, type: 'BUILD' }).waitFor(1)));
    } finally {
      await client.dispose();
    }
    await t.gateway.services.deployments.writer.flush();
    return ids;
  }

  async function measure(first: number) {
    // Once unmeasured, so per-token bookkeeping (last used) is the same for both measurements.
    await gqlOk(t.url, owner.token, DeploymentsWithOwnersDocument, { first });
    // The request's own statements: the live eggs' runners reconcile on timers, which may fire meanwhile.
    const { result: data, served } = await sql.during(() => gqlOk(t.url, owner.token, DeploymentsWithOwnersDocument, { first }));
    return { data, counted: served };
  }

  it('lists 5 and then 50 deployments with the same number of statements', async () => {
    const firstIds = await deployEach(1);
    // The first deployment of each egg goes live and becomes its current one.
    for (const id of firstIds) await t.gateway.services.deployments.finishBuild(id, { ok: true });

    const small = await measure(50);
    expect(small.data.deployments.nodes).toHaveLength(5);
    for (const node of small.data.deployments.nodes) {
      expect(node.app.owner.email).toBe(owner.email);
      expect(node.app.currentDeployment?.id).toBe(node.id);
      expect(node.app.latestDeployment?.id).toBe(node.id);
      expect(node.app.collaborators.length).toBeGreaterThanOrEqual(1);
    }

    const moreIds = await deployEach(9);
    const large = await measure(50);
    expect(large.data.deployments.nodes).toHaveLength(50);
    const bySlug = new Map(slugs.map((s, i) => [s, i]));
    for (const node of large.data.deployments.nodes) {
      const i = bySlug.get(node.app.slug)!;
      expect(node.app.owner.email).toBe(owner.email);
      expect(node.app.currentDeployment?.id).toBe(firstIds[i]);
      expect(node.app.latestDeployment?.id).toBe(moreIds[i * 9 + 8]);
      const expected = i === 0 ? [collaborators[0].email, collaborators[1].email] : [collaborators[i].email];
      expect(node.app.collaborators.map((c) => c.email).sort()).toEqual(expected.sort());
    }

    expect(small.counted.length).toBeGreaterThan(0);
    expect(large.counted.length).toBe(small.counted.length);
    const kinds = (list: string[]) => list.map((sql) => sql.replace(/\s+/g, ' ').slice(0, 80)).sort();
    expect(kinds(large.counted)).toEqual(kinds(small.counted));
    // Not just equal, but a handful: one statement per loader, not per row.
    expect(large.counted.length).toBeLessThanOrEqual(12);
  });
});
