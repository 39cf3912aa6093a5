import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import {
  AddCollaboratorDocument,
  DeleteDeploymentDocument,
  DeploymentDocument,
  DeploymentLogStreamDocument,
  DeploymentStatusDocument,
} from '../../src/client/generated';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { ISO_MS, waitForItem } from './helpers';

const CurrentDeploymentDocument = parse(`
  query CurrentDeployment($slug: String!) { app(slug: $slug) { currentDeployment { id } latestDeployment { id } } }
`) as TypedDocumentNode<{ app: { currentDeployment: { id: string } | null; latestDeployment: { id: string } | null } }, { slug: string }>;

describe('GET and DELETE /deployments/:id', () => {
  let t: TestGateway;
  let owner: TestUser;
  let stranger: TestUser;
  let slug: string;

  const logRows = async (id: string): Promise<number> =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM log_lines WHERE deployment_id = $1', [id]))[0].n;

  beforeAll(async () => {
    // Builds take a second, long enough to delete one while it is building.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '1000' });
    owner = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  describe('GET /deployments/:id', () => {
    it('returns the deployment record to its owner and collaborators', async () => {
      const d = await deploy(t.url, owner, slug, { KEY: 'v' });
      const res = await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: d.id, project: slug, status: 'building', url: d.url, env_keys: ['KEY'], finished_at: null });
      expect(res.body.created_at).toMatch(ISO_MS);
      expect(res.body.updated_at).toMatch(ISO_MS);
      expect(Number.isInteger(res.body.memory_mb)).toBe(true);
      expect(res.body).not.toHaveProperty('env');

      const collaborator = await makeUser(t.gateway);
      await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
      const asCollaborator = await rest(t.url, collaborator.token, 'GET', `/deployments/${d.id}`);
      expect(asCollaborator.status).toBe(200);
      expect(asCollaborator.body.id).toBe(d.id);
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    });

    it('answers 404 for an unknown id and for a deployment of an egg the caller cannot see, alike', async () => {
      const d = await deploy(t.url, owner, slug);
      const hidden = await rest(t.url, stranger.token, 'GET', `/deployments/${d.id}`);
      expect(hidden.status).toBe(404);
      expect(hidden.body.code).toBe('not_found');

      const unknown = await rest(t.url, owner.token, 'GET', '/deployments/dep_01jz0000000000000000000000');
      expect(unknown.status).toBe(404);
      expect(unknown.body.code).toBe('not_found');
      expect(Object.keys(hidden.body).sort()).toEqual(Object.keys(unknown.body).sort());

      expect((await rest(t.url, owner.token, 'GET', '/deployments/not-an-id')).status).toBe(404);

      const viaGraphql = await gql(t.url, stranger.token, DeploymentDocument, { id: d.id });
      expect(viaGraphql.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    });
  });

  describe('DELETE /deployments/:id', () => {
    it('answers 204, removes it and its logs, and completes its open subscriptions', async () => {
      const d = await deploy(t.url, owner, slug);
      const client = wsClient(t.url, owner.token);
      try {
        const status = collect(client, DeploymentStatusDocument, { id: d.id });
        const logs = collect(client, DeploymentLogStreamDocument, { id: d.id });
        await waitForItem(status, (i) => i.deploymentStatus.status === 'LIVE');
        await waitForItem(logs, (i) => i.deploymentLogs.message === 'Listening on port 8080');
        expect(await logRows(d.id)).toBeGreaterThan(0);

        const res = await rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`);
        expect(res.status).toBe(204);
        expect(res.body).toBeUndefined();

        await expect(status.done).resolves.toBeUndefined();
        await expect(logs.done).resolves.toBeUndefined();
        expect(status.errors).toEqual([]);
        expect(logs.errors).toEqual([]);
      } finally {
        await client.dispose();
      }

      const gone = await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`);
      expect(gone.status).toBe(404);
      expect(gone.body.code).toBe('not_found');
      expect(await logRows(d.id)).toBe(0);
      expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}/logs`)).status).toBe(404);
      const listed = await rest(t.url, owner.token, 'GET', `/deployments?project=${slug}&limit=100`);
      expect(listed.body.data.map((x: { id: string }) => x.id)).not.toContain(d.id);

      const again = await rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`);
      expect(again.status).toBe(404);
    });

    it('while building: stops the build, writes no more lines, and completes BUILD and status streams', async () => {
      const d = await deploy(t.url, owner, slug);
      const client = wsClient(t.url, owner.token);
      try {
        const status = collect(client, DeploymentStatusDocument, { id: d.id });
        const build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
        const [first] = await status.waitFor(1);
        expect(first.deploymentStatus.status).toBe('BUILDING');
        await build.waitFor(1);

        expect((await rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`)).status).toBe(204);
        await status.done;
        await build.done;
        expect(status.items.map((i) => i.deploymentStatus.status)).toEqual(['BUILDING']);
        expect(build.items.map((i) => i.deploymentLogs.message)).not.toContain('==> Build succeeded');
      } finally {
        await client.dispose();
      }
      expect(await logRows(d.id)).toBe(0);
      expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).status).toBe(404);
    });

    it('subscribing to a deleted deployment is NOT_FOUND', async () => {
      const d = await deploy(t.url, owner, slug);
      expect((await rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`)).status).toBe(204);
      const client = wsClient(t.url, owner.token);
      try {
        const status = collect(client, DeploymentStatusDocument, { id: d.id });
        const err = await status.done.then(
          () => null,
          (e: unknown) => e,
        );
        const errors = (Array.isArray(err) ? err : status.errors) as Array<{ extensions?: { code?: string } }>;
        expect(errors.map((e) => e.extensions?.code)).toContain('NOT_FOUND');
        expect(status.items).toEqual([]);
      } finally {
        await client.dispose();
      }
    });

    it("answers 404 for another account's deployment and leaves it in place", async () => {
      const d = await deploy(t.url, owner, slug);
      const res = await rest(t.url, stranger.token, 'DELETE', `/deployments/${d.id}`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
      const viaGraphql = await gql(t.url, stranger.token, DeleteDeploymentDocument, { id: d.id });
      expect(viaGraphql.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).status).toBe(200);
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    });

    it("deleting the egg's current deployment falls back to the newest live one left", async () => {
      const egg = (await makeApp(t.url, owner)).slug;
      const older = await deploy(t.url, owner, egg);
      expect(await settle(t.url, owner, older.id)).toBe('LIVE');
      const newer = await deploy(t.url, owner, egg);
      expect(await settle(t.url, owner, newer.id)).toBe('LIVE');
      expect((await gqlOk(t.url, owner.token, CurrentDeploymentDocument, { slug: egg })).app.currentDeployment?.id).toBe(newer.id);

      const deleted = await gqlOk(t.url, owner.token, DeleteDeploymentDocument, { id: newer.id });
      expect(deleted.deleteDeployment).toBe(newer.id);
      const after = await gqlOk(t.url, owner.token, CurrentDeploymentDocument, { slug: egg });
      expect(after.app.currentDeployment?.id).toBe(older.id);
      expect(after.app.latestDeployment?.id).toBe(older.id);

      expect((await rest(t.url, owner.token, 'DELETE', `/deployments/${older.id}`)).status).toBe(204);
      const none = await gqlOk(t.url, owner.token, CurrentDeploymentDocument, { slug: egg });
      expect(none.app).toEqual({ currentDeployment: null, latestDeployment: null });
    });
  });
});
