import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { AddCollaboratorDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { StatementLog } from '../support/statements';

interface AppNode {
  slug: string;
  owner: { email: string };
  collaborators: Array<{ email: string }>;
  latestDeployment: { id: string; status: string } | null;
  currentDeployment: { id: string } | null;
  deployments: { nodes: Array<{ id: string }>; pageInfo: { hasNextPage: boolean } };
  previews: Array<{ prNumber: number }>;
}

const AppsWithRelationsDocument = parse(`
  query AppsWithRelations($first: Int) {
    apps(first: $first) {
      nodes {
        slug
        owner { email }
        collaborators { email }
        latestDeployment { id status }
        currentDeployment { id }
        deployments(first: 1) { nodes { id } pageInfo { hasNextPage } }
        previews { prNumber }
      }
      pageInfo { hasNextPage }
    }
  }
`) as TypedDocumentNode<{ apps: { nodes: AppNode[]; pageInfo: { hasNextPage: boolean } } }, { first: number }>;

/** What each egg of the list should show. */
interface Expected {
  collaborators: string[];
  latest: string | null;
  current: string | null;
  /** How many deployments the egg has. */
  count: number;
}

/**
 * Listing eggs with their owner, collaborators, latest and current deployment, a page of their
 * deployments and their previews must batch its
 * loads: the number of SQL statements does not grow with the number of eggs.
 */
describe('DataLoaders: apps with their relations run a constant number of statements', () => {
  let t: TestGateway;
  let owner: TestUser;
  const people: TestUser[] = [];
  const sql = new StatementLog();
  const expected = new Map<string, Expected>();

  beforeAll(async () => {
    // Builds never finish by themselves here, so nothing runs in the background while we count.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '600000' }, { db: { onQuery: sql.onQuery } });
    owner = await makeUser(t.gateway);
    for (let i = 0; i < 3; i++) people.push(await makeUser(t.gateway));
  });
  afterAll(() => t.stop());

  /**
   * Adds `n` eggs that differ in what they have: no deployment; one live; one live and a newer
   * one building; one failed build only. Collaborators: none, one, or two.
   */
  async function addEgg(i: number) {
    const { slug } = await makeApp(t.url, owner);
    const collaborators = people.slice(0, i % 3).map((p) => p.email);
    for (const email of collaborators) await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email });
    let latest: string | null = null;
    let current: string | null = null;
    const kind = i % 4;
    if (kind === 1 || kind === 2) {
      latest = current = (await deploy(t.url, owner, slug)).id;
      await t.gateway.services.deployments.finishBuild(current, { ok: true });
    }
    if (kind === 2) latest = (await deploy(t.url, owner, slug)).id;
    if (kind === 3) {
      latest = (await deploy(t.url, owner, slug)).id;
      await t.gateway.services.deployments.finishBuild(latest, { ok: false, reason: 'test' });
    }
    const count = kind === 0 ? 0 : kind === 2 ? 2 : 1;
    expected.set(slug, { collaborators: collaborators.sort(), latest, current, count });
  }

  async function addEggs(n: number) {
    const start = expected.size;
    // A few at a time: quicker, and still well inside the rate and connection limits.
    for (let k = 0; k < n; k += 8) {
      await Promise.all(Array.from({ length: Math.min(8, n - k) }, (_, j) => addEgg(start + k + j)));
    }
  }

  async function measure() {
    // The live eggs' runners start now, not on a timer while we count (their reconciles run SQL).
    await t.gateway.services.deployments.supervisor.resumeRunning();
    // Once unmeasured, so per-token bookkeeping (last used) is the same for both measurements.
    await gqlOk(t.url, owner.token, AppsWithRelationsDocument, { first: 50 });
    const { result: data, served } = await sql.during(() => gqlOk(t.url, owner.token, AppsWithRelationsDocument, { first: 50 }));
    return { nodes: data.apps.nodes, counted: served };
  }

  function expectAsBuilt(nodes: AppNode[]) {
    for (const node of nodes) {
      const e = expected.get(node.slug)!;
      expect(e).toBeDefined();
      expect(node.owner.email).toBe(owner.email);
      expect(node.collaborators.map((c) => c.email).sort()).toEqual(e.collaborators);
      expect(node.latestDeployment?.id ?? null).toBe(e.latest);
      expect(node.currentDeployment?.id ?? null).toBe(e.current);
      // Its own page of deployments (newest first, one per page here), batched with the others'.
      expect(node.deployments.nodes.map((d) => d.id)).toEqual(e.latest ? [e.latest] : []);
      expect(node.deployments.pageInfo.hasNextPage).toBe(e.count > 1);
      expect(node.previews).toEqual([]);
    }
  }

  it('lists 5 and then 50 eggs with the same, small number of statements', async () => {
    await addEggs(5);
    const small = await measure();
    expect(small.nodes).toHaveLength(5);
    expectAsBuilt(small.nodes);

    await addEggs(45);
    const large = await measure();
    expect(large.nodes).toHaveLength(50);
    expect(new Set(large.nodes.map((n) => n.slug)).size).toBe(50);
    expectAsBuilt(large.nodes);
    // Every shape is in the list: with and without collaborators and deployments.
    expect(large.nodes.some((n) => n.latestDeployment === null)).toBe(true);
    expect(large.nodes.some((n) => n.latestDeployment && n.currentDeployment && n.latestDeployment.id !== n.currentDeployment.id)).toBe(true);
    expect(large.nodes.some((n) => n.collaborators.length === 2)).toBe(true);

    expect(small.counted.length).toBeGreaterThan(0);
    expect(large.counted.length).toBe(small.counted.length);
    const kinds = (list: string[]) => list.map((sql) => sql.replace(/\s+/g, ' ').slice(0, 80)).sort();
    expect(kinds(large.counted)).toEqual(kinds(small.counted));
    // Not just equal, but a handful: one statement per loader, not per egg.
    expect(large.counted.length).toBeLessThanOrEqual(10);
  });
});
