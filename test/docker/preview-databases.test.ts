import { Client } from 'pg';
import { DeletePreviewDocument, UpsertPreviewDocument } from '../../src/client/generated';
import { PreviewDatabases } from '../../src/runtime/docker/preview-databases';
import { gqlOk, startGateway, TEST_KEY, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { describeDocker } from '../support/docker';

/** Previews on the Docker runtime get a real database and role of their own, and teardown leaves nothing in the catalogs. */
describeDocker('preview databases on the Docker runtime', () => {
  let t: TestGateway;
  let owner: TestUser;
  const dbs = () => new PreviewDatabases(t.db.url, Buffer.from(TEST_KEY, 'base64'));

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_RUNTIME: 'docker' });
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const catalogs = async (name: string) => {
    const [db] = await t.gateway.ds.query<Array<{ n: number }>>('SELECT count(*)::int AS n FROM pg_database WHERE datname = $1', [name]);
    const [role] = await t.gateway.ds.query<Array<{ n: number }>>('SELECT count(*)::int AS n FROM pg_roles WHERE rolname = $1', [name]);
    return { databases: db.n, roles: role.n };
  };
  /** Connects as the preview's role to `database`. */
  const connectAs = async (previewId: string, database: string) => {
    const url = new URL(dbs().urlOf(previewId));
    url.pathname = `/${database}`;
    const c = new Client({ connectionString: url.toString() });
    await c.connect();
    return c;
  };

  it('each preview gets its own database and role; its role reaches its own data and not another preview’s; teardown drops both', async () => {
    const { slug } = await makeApp(t.url, owner);
    const a = (await gqlOk(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 1 })).upsertPreview.preview;
    const b = (await gqlOk(t.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 2 })).upsertPreview.preview;
    const nameA = PreviewDatabases.nameOf(a.id);
    const nameB = PreviewDatabases.nameOf(b.id);
    expect(a.resources).toEqual(expect.arrayContaining([{ kind: 'DATABASE', name: nameA }]));
    expect(await catalogs(nameA)).toEqual({ databases: 1, roles: 1 });
    expect(await catalogs(nameB)).toEqual({ databases: 1, roles: 1 });

    const own = await connectAs(a.id, nameA);
    try {
      await own.query('CREATE TABLE notes (body text)');
      await own.query(`INSERT INTO notes VALUES ('preview 1')`);
      expect((await own.query('SELECT current_user AS who, current_database() AS db')).rows).toEqual([{ who: nameA, db: nameA }]);
    } finally {
      await own.end();
    }
    await expect(connectAs(a.id, nameB)).rejects.toThrow(/permission denied for database/);

    // Torn down (with a connection still open): nothing of it is left.
    const lingering = await connectAs(a.id, nameA);
    lingering.on('error', () => undefined);
    await gqlOk(t.url, owner.token, DeletePreviewDocument, { app: slug, prNumber: 1 });
    expect(await catalogs(nameA)).toEqual({ databases: 0, roles: 0 });
    await lingering.end().catch(() => undefined);
    // Expiry tears down the same way.
    await t.gateway.ds.query(`UPDATE previews SET expires_at = now() - interval '1 minute' WHERE id = $1`, [b.id]);
    expect(await t.gateway.services.previews.expire()).toBe(1);
    expect(await catalogs(nameB)).toEqual({ databases: 0, roles: 0 });
  }, 60_000);
});
