import {
  AddCollaboratorDocument,
  AppDocument,
  AppsDocument,
  DeploymentDocument,
  DeploymentStatusDocument,
  RemoveCollaboratorDocument,
} from '../../src/client/generated';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';

type GqlError = { message?: string; extensions?: Record<string, unknown> };

/**
 * Subscribes to deploymentStatus and returns the GraphQL errors the server answered with,
 * whether they came as an `error` message or as a `next` carrying errors; plus any data items.
 */
async function statusSubscriptionErrors(url: string, token: string, id: string): Promise<{ errors: GqlError[]; items: unknown[] }> {
  const client = wsClient(url, token);
  try {
    const sub = collect(client, DeploymentStatusDocument, { id });
    const rejected = await sub.done.then(
      () => [] as GqlError[],
      (err: unknown) => (Array.isArray(err) ? (err as GqlError[]) : [{ message: String(err) }]),
    );
    return { errors: [...(sub.errors as GqlError[]), ...rejected], items: sub.items };
  } finally {
    await client.dispose();
  }
}

describe('collaborators', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  const collaboratorRows = async (appId: string): Promise<number> =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM collaborators WHERE app_id = $1', [appId]))[0].n;

  it('a collaborator sees, lists, deploys and watches the egg; after removal all of it is gone', async () => {
    const owner = await makeUser(t.gateway);
    const collab = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    const slug = app.slug;

    // Before: the egg does not exist for them.
    expect((await gql(t.url, collab.token, AppDocument, { slug })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await rest(t.url, collab.token, 'GET', `/deployments?project=${slug}`)).status).toBe(404);

    const added = (await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collab.email })).addCollaborator;
    expect(added.slug).toBe(slug);
    expect(added.owner.id).toBe(owner.id);
    expect(added.collaborators).toEqual([{ id: collab.id, email: collab.email }]);

    // Adding again changes nothing.
    const again = (await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collab.email })).addCollaborator;
    expect(again.collaborators).toEqual([{ id: collab.id, email: collab.email }]);
    expect(await collaboratorRows(app.id)).toBe(1);

    // The egg, as the collaborator sees it.
    const seen = (await gqlOk(t.url, collab.token, AppDocument, { slug })).app;
    expect(seen).toMatchObject({ id: app.id, slug, owner: { id: owner.id }, collaborators: [{ id: collab.id }] });
    expect((await gqlOk(t.url, collab.token, AppsDocument, { first: 100 })).apps.nodes.map((n) => n.slug)).toContain(slug);

    // The owner's deployment is in their REST list.
    const ownerDep = await deploy(t.url, owner, slug);
    const list = await rest(t.url, collab.token, 'GET', `/deployments?project=${slug}`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((d: { id: string }) => d.id)).toEqual([ownerDep.id]);
    expect(list.body.data[0].project).toBe(slug);

    // They deploy over REST.
    const created = await rest(t.url, collab.token, 'POST', '/deploy', { project: slug });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ project: slug, status: 'building' });
    expect(created.body.id).toMatch(/^dep_/);

    // They watch it go live over graphql-ws.
    const client = wsClient(t.url, collab.token);
    const stream = collect(client, DeploymentStatusDocument, { id: created.body.id });
    const [first] = await stream.waitFor(1);
    expect(first.deploymentStatus.id).toBe(created.body.id);
    expect(stream.errors).toEqual([]);
    let n = 1;
    while (stream.items[n - 1].deploymentStatus.status === 'BUILDING') await stream.waitFor(++n);
    expect(stream.items.at(-1)!.deploymentStatus.status).toBe('LIVE');
    stream.unsubscribe();
    await client.dispose();
    expect(await settle(t.url, owner, ownerDep.id)).toBe('LIVE');

    // Removal.
    const removed = (await gqlOk(t.url, owner.token, RemoveCollaboratorDocument, { app: slug, email: collab.email })).removeCollaborator;
    expect(removed.collaborators).toEqual([]);
    expect(await collaboratorRows(app.id)).toBe(0);

    const gone = await gql(t.url, collab.token, AppDocument, { slug });
    expect(gone.data ?? null).toBeNull();
    expect(gone.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await gqlOk(t.url, collab.token, AppsDocument, { first: 100 })).apps.nodes.map((a) => a.slug)).not.toContain(slug);
    expect((await gql(t.url, collab.token, DeploymentDocument, { id: created.body.id })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const listAfter = await rest(t.url, collab.token, 'GET', `/deployments?project=${slug}`);
    expect(listAfter.status).toBe(404);
    expect(listAfter.body).toMatchObject({ status: 404, code: 'not_found' });
    const oneAfter = await rest(t.url, collab.token, 'GET', `/deployments/${created.body.id}`);
    expect(oneAfter.status).toBe(404);
    const allAfter = await rest(t.url, collab.token, 'GET', '/deployments');
    expect(allAfter.status).toBe(200);
    expect(allAfter.body.data).toEqual([]);
    const deployAfter = await rest(t.url, collab.token, 'POST', '/deploy', { project: slug });
    expect(deployAfter.status).toBe(404);
    expect(deployAfter.body).toMatchObject({ code: 'not_found' });
    const [{ count }] = await t.gateway.ds.query('SELECT count(*)::int AS count FROM deployments WHERE app_id = $1', [app.id]);
    expect(count).toBe(2);

    const sub = await statusSubscriptionErrors(t.url, collab.token, created.body.id);
    expect(sub.items).toEqual([]);
    expect(sub.errors[0]?.extensions?.code).toBe('NOT_FOUND');

    // The owner keeps full access.
    expect((await rest(t.url, owner.token, 'GET', `/deployments?project=${slug}`)).body.data).toHaveLength(2);
  });

  it('addCollaborator with an unknown email → NOT_FOUND, nothing stored', async () => {
    const owner = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    const res = await gql(t.url, owner.token, AddCollaboratorDocument, { app: app.slug, email: 'nobody-here@example.com' });
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(await collaboratorRows(app.id)).toBe(0);
  });

  it('adding the owner as a collaborator → BAD_USER_INPUT, nothing stored', async () => {
    const owner = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    const res = await gql(t.url, owner.token, AddCollaboratorDocument, { app: app.slug, email: owner.email });
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.extensions?.errors?.[0]?.field).toBe('email');
    expect(await collaboratorRows(app.id)).toBe(0);
    expect((await gqlOk(t.url, owner.token, AppDocument, { slug: app.slug })).app.collaborators).toEqual([]);
  });

  it('a stranger cannot add or remove collaborators: NOT_FOUND, and nothing changes', async () => {
    const owner = await makeUser(t.gateway);
    const member = await makeUser(t.gateway);
    const stranger = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: app.slug, email: member.email });

    const add = await gql(t.url, stranger.token, AddCollaboratorDocument, { app: app.slug, email: stranger.email });
    expect(add.data ?? null).toBeNull();
    expect(add.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const remove = await gql(t.url, stranger.token, RemoveCollaboratorDocument, { app: app.slug, email: member.email });
    expect(remove.data ?? null).toBeNull();
    expect(remove.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    expect((await gqlOk(t.url, owner.token, AppDocument, { slug: app.slug })).app.collaborators).toEqual([{ id: member.id, email: member.email }]);
    expect((await gql(t.url, stranger.token, AppDocument, { slug: app.slug })).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('a collaborator cannot add or remove collaborators (owner only): FORBIDDEN, and nothing changes', async () => {
    const owner = await makeUser(t.gateway);
    const member = await makeUser(t.gateway);
    const other = await makeUser(t.gateway);
    const friend = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: app.slug, email: member.email });
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: app.slug, email: other.email });

    const add = await gql(t.url, member.token, AddCollaboratorDocument, { app: app.slug, email: friend.email });
    expect(add.data ?? null).toBeNull();
    expect(add.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const remove = await gql(t.url, member.token, RemoveCollaboratorDocument, { app: app.slug, email: other.email });
    expect(remove.data ?? null).toBeNull();
    expect(remove.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    // Not even themselves, nor the owner.
    for (const email of [member.email, owner.email]) {
      expect((await gql(t.url, member.token, RemoveCollaboratorDocument, { app: app.slug, email })).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    }

    const ids = (await gqlOk(t.url, owner.token, AppDocument, { slug: app.slug })).app.collaborators.map((c) => c.id).sort();
    expect(ids).toEqual([member.id, other.id].sort());
    expect(await collaboratorRows(app.id)).toBe(2);
  });

  it('removing an account that is not a collaborator → NOT_FOUND', async () => {
    const owner = await makeUser(t.gateway);
    const other = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    const res = await gql(t.url, owner.token, RemoveCollaboratorDocument, { app: app.slug, email: other.email });
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('a stranger subscribing to deploymentStatus of the egg’s deployment gets NOT_FOUND and no data', async () => {
    const owner = await makeUser(t.gateway);
    const stranger: TestUser = await makeUser(t.gateway);
    const app = await makeApp(t.url, owner);
    const dep = await deploy(t.url, owner, app.slug);

    const sub = await statusSubscriptionErrors(t.url, stranger.token, dep.id);
    expect(sub.items).toEqual([]);
    expect(sub.errors.length).toBeGreaterThan(0);
    expect(sub.errors[0].extensions?.code).toBe('NOT_FOUND');
    expect(JSON.stringify(sub.errors)).not.toMatch(/BUILDING|LIVE/);

    expect(await settle(t.url, owner, dep.id)).toBe('LIVE');
  });
});
