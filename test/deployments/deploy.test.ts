import { DeployDocument, DeploymentDocument } from '../../src/client/generated';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser, unique } from '../support/factories';
import { ISO_MS } from './helpers';

describe('POST /deploy', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  it('answers 201 with the new deployment in building, which then goes live', async () => {
    const res = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug, env: { B_VAR: 'b', A_VAR: 'a' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'building', project: slug, finished_at: null });
    expect([...res.body.env_keys].sort()).toEqual(['A_VAR', 'B_VAR']);
    expect(res.body.id).toMatch(/^dep_[0-9a-z]{26}$/);
    expect(res.body.url).toBe(`https://${slug}--${res.body.id.slice(-8)}.hatchery.run`);
    expect(res.body.created_at).toMatch(ISO_MS);

    expect(await settle(t.url, owner, res.body.id)).toBe('LIVE');

    const got = await rest(t.url, owner.token, 'GET', `/deployments/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: res.body.id, status: 'live', url: res.body.url, created_at: res.body.created_at, failure_reason: null });
    expect(got.body.finished_at).toMatch(ISO_MS);
    expect(Date.parse(got.body.finished_at)).toBeGreaterThanOrEqual(Date.parse(got.body.created_at));
  });

  it('without env deploys with no env keys', async () => {
    const res = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug });
    expect(res.status).toBe(201);
    expect(res.body.env_keys).toEqual([]);
    expect(await settle(t.url, owner, res.body.id)).toBe('LIVE');
  });

  it('fails the build when env holds HATCHERY_SIMULATE=fail, with a reason and a build log line saying so', async () => {
    const res = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug, env: { HATCHERY_SIMULATE: 'fail' } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('building');

    expect(await settle(t.url, owner, res.body.id)).toBe('FAILED');

    const got = await rest(t.url, owner.token, 'GET', `/deployments/${res.body.id}`);
    expect(got.body.status).toBe('failed');
    expect(typeof got.body.failure_reason).toBe('string');
    expect(got.body.failure_reason.length).toBeGreaterThan(0);
    expect(got.body.finished_at).toMatch(ISO_MS);

    const logs = await rest(t.url, owner.token, 'GET', `/deployments/${res.body.id}/logs?type=build`);
    expect(logs.status).toBe(200);
    const messages: string[] = logs.body.data.map((l: { message: string }) => l.message);
    expect(messages.some((m) => /fail/i.test(m))).toBe(true);
    expect(messages).not.toContain('==> Build succeeded');
  });

  it('rejects a missing project, bad env names and non-string env values with 422 naming the field', async () => {
    const before = await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments');

    const missing = await rest(t.url, owner.token, 'POST', '/deploy', { env: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.code).toBe('validation_failed');
    expect(missing.body.errors.map((e: { field: string }) => e.field)).toContain('project');

    const badName = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug, env: { '1BAD': 'x' } });
    expect(badName.status).toBe(422);
    expect(badName.body.errors.map((e: { field: string }) => e.field)).toContain('env.1BAD');

    const badValue = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug, env: { NUM: 5 } });
    expect(badValue.status).toBe(422);
    expect(badValue.body.errors.map((e: { field: string }) => e.field)).toContain('env.NUM');

    for (const [body, field] of [
      [{ project: slug, env: ['A=1'] }, 'env'],
      [{ project: slug, env: 'A=1' }, 'env'],
      [{ project: 42 }, 'project'],
      [{ project: slug, colour: 'red' }, 'colour'],
    ] as const) {
      const res = await rest(t.url, owner.token, 'POST', '/deploy', body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 422, code: 'validation_failed' });
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }

    const after = await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments');
    expect(after[0].n).toBe(before[0].n);
  });

  it('answers 404 for an egg the caller cannot see, and 401 without a token', async () => {
    const stranger = await makeUser(t.gateway);
    const hidden = await rest(t.url, stranger.token, 'POST', '/deploy', { project: slug });
    expect(hidden.status).toBe(404);
    expect(hidden.body.code).toBe('not_found');

    const unknown = await rest(t.url, owner.token, 'POST', '/deploy', { project: unique('nope') });
    expect(unknown.status).toBe(404);

    const anon = await rest(t.url, null, 'POST', '/deploy', { project: slug });
    expect(anon.status).toBe(401);
    expect(anon.body.code).toBe('unauthorized');
  });

  describe('env values are secrets', () => {
    const SENTINEL = 'plaintext-sentinel-123';

    it('are never stored in plain text and never returned, only their names', async () => {
      const viaRest = await rest(
        t.url,
        owner.token,
        'POST',
        '/deploy',
        { project: slug, env: { SECRET_VALUE: SENTINEL } },
        { 'Idempotency-Key': unique('secret-key') },
      );
      expect(viaRest.status).toBe(201);
      expect(viaRest.body.env_keys).toEqual(['SECRET_VALUE']);
      expect(JSON.stringify(viaRest.body)).not.toContain(SENTINEL);

      const viaGraphql = await deploy(t.url, owner, slug, { SECRET_VALUE: SENTINEL });
      expect(viaGraphql.envKeys).toEqual(['SECRET_VALUE']);
      expect(JSON.stringify(viaGraphql)).not.toContain(SENTINEL);

      // A secret-bearing deploy that fails proves the value is kept (sealed), not dropped.
      const failing = await deploy(t.url, owner, slug, { SECRET_VALUE: SENTINEL, HATCHERY_SIMULATE: 'fail' });
      expect(await settle(t.url, owner, viaRest.body.id)).toBe('LIVE');
      expect(await settle(t.url, owner, viaGraphql.id)).toBe('LIVE');
      expect(await settle(t.url, owner, failing.id)).toBe('FAILED');

      const like = `%${SENTINEL}%`;
      const deployments = await t.gateway.ds.query('SELECT d::text AS row FROM deployments d WHERE d.id = ANY($1)', [
        [viaRest.body.id, viaGraphql.id, failing.id],
      ]);
      expect(deployments).toHaveLength(3);
      for (const { row } of deployments) expect(row).not.toContain(SENTINEL);
      expect(await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d WHERE d::text LIKE $1', [like])).toEqual([{ n: 0 }]);
      expect(await t.gateway.ds.query('SELECT count(*)::int AS n FROM idempotency_keys k WHERE k::text LIKE $1', [like])).toEqual([{ n: 0 }]);
      expect((await t.gateway.ds.query('SELECT count(*)::int AS n FROM idempotency_keys'))[0].n).toBeGreaterThan(0);

      // Nowhere else in the database either (logs, jobs, anything).
      const tables: Array<{ s: string; n: string }> = await t.gateway.ds.query(
        `SELECT table_schema AS s, table_name AS n FROM information_schema.tables
          WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
      );
      expect(tables.map((x) => x.n)).toEqual(expect.arrayContaining(['deployments', 'idempotency_keys', 'log_lines']));
      for (const { s, n } of tables) {
        const [hit] = await t.gateway.ds.query(`SELECT count(*)::int AS n FROM "${s}"."${n}" x WHERE x::text LIKE $1`, [like]);
        expect({ table: `${s}.${n}`, rows: hit.n }).toEqual({ table: `${s}.${n}`, rows: 0 });
      }

      const got = await rest(t.url, owner.token, 'GET', `/deployments/${viaRest.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body.env_keys).toEqual(['SECRET_VALUE']);
      expect(JSON.stringify(got.body)).not.toContain(SENTINEL);

      const list = await rest(t.url, owner.token, 'GET', `/deployments?project=${slug}&limit=100`);
      expect(JSON.stringify(list.body)).not.toContain(SENTINEL);

      const viaQuery = await gql(t.url, owner.token, DeploymentDocument, { id: viaRest.body.id });
      expect(viaQuery.data?.deployment.envKeys).toEqual(['SECRET_VALUE']);
      expect(JSON.stringify(viaQuery)).not.toContain(SENTINEL);
    });

    it('a secret-bearing GraphQL deploy answers with env key names only', async () => {
      const res = await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug, env: { SECRET_VALUE: SENTINEL, OTHER: 'x' } } });
      expect([...res.deploy.envKeys].sort()).toEqual(['OTHER', 'SECRET_VALUE']);
      expect(res.deploy.status).toBe('BUILDING');
      expect(JSON.stringify(res)).not.toContain(SENTINEL);
      expect(await settle(t.url, owner, res.deploy.id)).toBe('LIVE');
    });
  });
});
