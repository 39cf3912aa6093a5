// The gateway (src/app) first: it loads reflect-metadata.
import { gql, gqlOk, GqlResult, rest, startGateway, TestGateway } from '../support/gateway';
import { DeleteDeploymentDocument, DeployDocument, DeploymentDocument, DeploymentLogsDocument, DeploymentsDocument } from '../../src/client/generated';
import { ErrorCode } from '../../src/errors';
import { ERROR_HTTP } from '../../src/http/problems';
import { newId } from '../../src/ids';
import { deploy, makeApp, makeUser, settle, TestUser, unique } from '../support/factories';
import { expectInvalid, expectProblem, RestResponse, writesNothing } from '../rest/problem';

/**
 * The GraphQL twins refuse what REST refuses: for each 4xx case of POST /deploy, GET
 * /deployments, GET and DELETE /deployments/:id and GET /deployments/:id/logs, the twin
 * operation (the typed client documents) with the matching variables answers the
 * `extensions.code` whose HTTP status (ERROR_HTTP, the one mapping) is REST's, names the same
 * field, and writes nothing.
 *
 * Where GraphQL itself refuses a variable (wrong type, missing field, unknown enum value or
 * input field) there is no `extensions.errors`; the message names the variable path instead.
 */

/** How the twin names the field at fault: in `extensions.errors` (the service refused it) or, for GraphQL's own variable coercion, in the message. */
type GqlField = { field: string } | { message: string };

interface TwinCase {
  name: string;
  code: ErrorCode;
  rest: () => Promise<RestResponse>;
  gql: () => Promise<GqlResult<unknown>>;
  /** REST's name of the field at fault (422 only). */
  restField?: string;
  gqlField?: GqlField;
}

const ENV_MAX_VARS = 200;
const ENV_MAX_VALUE = 32 * 1024;
/** An env object with `n` variables. */
const envOf = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`VAR_${i}`, 'v']));

describe('GraphQL twins of the deployment 4xx cases', () => {
  let t: TestGateway;
  let owner: TestUser;
  let stranger: TestUser;
  let slug: string;
  let strangerSlug: string;
  /** A finished (failed) deployment of the owner's egg: it writes no more log lines. */
  let depId: string;
  /** A well-formed deployment id that was never created. */
  const neverCreated = newId('dep');

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    strangerSlug = (await makeApp(t.url, stranger)).slug;
    depId = (await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' })).id;
    expect(await settle(t.url, owner, depId)).toBe('FAILED');
  });
  afterAll(() => t.stop());

  const post = (body: unknown, headers: Record<string, string> = {}) => rest(t.url, owner.token, 'POST', '/deploy', body, headers);
  const get = (path: string) => rest(t.url, owner.token, 'GET', path);
  /** Sends variables as they are, past the generated types (a raw client could send anything). */
  const raw = <V>(variables: Record<string, unknown>) => variables as unknown as V;
  const deployTwin = (input: Record<string, unknown>, idempotencyKey?: string) =>
    gql(t.url, owner.token, DeployDocument, raw({ input, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) }));
  const listTwin = (variables: Record<string, unknown>) => gql(t.url, owner.token, DeploymentsDocument, raw(variables));
  const logsTwin = (variables: Record<string, unknown>) => gql(t.url, owner.token, DeploymentLogsDocument, raw({ id: depId, ...variables }));

  /** Sends both twins; each must be refused with the same meaning and write nothing. */
  async function expectSameRefusal(c: TwinCase): Promise<void> {
    const restRes = await writesNothing(t, c.rest);
    const { status, code } = ERROR_HTTP[c.code];
    expectProblem(restRes, status, code);
    if (c.restField) expectInvalid(restRes, c.restField);

    const gqlRes = await writesNothing(t, c.gql);
    expect(gqlRes.errors?.length).toBeGreaterThan(0);
    const error = gqlRes.errors![0];
    expect(error.extensions?.code).toBe(c.code);
    expect(gqlRes.data ?? null).toBeNull();
    if (c.gqlField && 'field' in c.gqlField) {
      expect((error.extensions?.errors as Array<{ field: string }> | undefined)?.map((e) => e.field)).toContain(c.gqlField.field);
    } else if (c.gqlField) {
      expect(error.message).toContain(c.gqlField.message);
    }
  }

  describe('deploy(input, idempotencyKey) ↔ POST /deploy', () => {
    const cases: TwinCase[] = [
      {
        name: 'an unknown egg slug → NOT_FOUND ↔ 404',
        code: 'NOT_FOUND',
        rest: () => post({ project: 'nosuch-egg-for-twins' }),
        gql: () => deployTwin({ project: 'nosuch-egg-for-twins' }),
      },
      {
        name: 'project missing → BAD_USER_INPUT naming "project" ↔ 422 on project',
        code: 'BAD_USER_INPUT',
        rest: () => post({}),
        gql: () => deployTwin({}),
        restField: 'project',
        gqlField: { message: 'Field "project"' },
      },
      {
        name: 'project missing with env present → BAD_USER_INPUT naming "project" ↔ 422 on project',
        code: 'BAD_USER_INPUT',
        rest: () => post({ env: { A: '1' } }),
        gql: () => deployTwin({ env: { A: '1' } }),
        restField: 'project',
        gqlField: { message: 'Field "project"' },
      },
      {
        name: 'project null → BAD_USER_INPUT naming input.project ↔ 422 on project',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: null }),
        gql: () => deployTwin({ project: null }),
        restField: 'project',
        gqlField: { message: '"input.project"' },
      },
      {
        name: 'project a number → BAD_USER_INPUT naming input.project ↔ 422 on project',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: 42 }),
        gql: () => deployTwin({ project: 42 }),
        restField: 'project',
        gqlField: { message: '"input.project"' },
      },
      {
        name: 'env a string → BAD_USER_INPUT naming input.env ↔ 422 on env',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: 'A=1' }),
        gql: () => deployTwin({ project: slug, env: 'A=1' }),
        restField: 'env',
        gqlField: { message: '"input.env"' },
      },
      {
        name: 'env an array → BAD_USER_INPUT naming input.env ↔ 422 on env',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: ['A=1'] }),
        gql: () => deployTwin({ project: slug, env: ['A=1'] }),
        restField: 'env',
        gqlField: { message: '"input.env"' },
      },
      {
        name: 'env key starting with a digit → BAD_USER_INPUT on env.1BAD ↔ 422 on env.1BAD',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: { '1BAD': 'x' } }),
        gql: () => deployTwin({ project: slug, env: { '1BAD': 'x' } }),
        restField: 'env.1BAD',
        gqlField: { field: 'env.1BAD' },
      },
      {
        name: 'env key with a dash → BAD_USER_INPUT on env.BAD-KEY ↔ 422 on env.BAD-KEY',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: { 'BAD-KEY': 'x' } }),
        gql: () => deployTwin({ project: slug, env: { 'BAD-KEY': 'x' } }),
        restField: 'env.BAD-KEY',
        gqlField: { field: 'env.BAD-KEY' },
      },
      {
        name: 'env value a number → BAD_USER_INPUT on env.NUM ↔ 422 on env.NUM',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: { NUM: 5 } }),
        gql: () => deployTwin({ project: slug, env: { NUM: 5 } }),
        restField: 'env.NUM',
        gqlField: { field: 'env.NUM' },
      },
      {
        name: 'env value an object → BAD_USER_INPUT on env.NAME ↔ 422 on env.NAME',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: { NAME: { nested: 'x' } } }),
        gql: () => deployTwin({ project: slug, env: { NAME: { nested: 'x' } } }),
        restField: 'env.NAME',
        gqlField: { field: 'env.NAME' },
      },
      {
        name: 'an unknown input field → BAD_USER_INPUT naming "region" ↔ 422 on region',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, region: 'eu' }),
        gql: () => deployTwin({ project: slug, region: 'eu' }),
        restField: 'region',
        gqlField: { message: 'Field "region"' },
      },
      {
        name: 'an unknown camelCase input field → BAD_USER_INPUT naming "buildCommand" ↔ 422 on buildCommand',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, buildCommand: 'make' }),
        gql: () => deployTwin({ project: slug, buildCommand: 'make' }),
        restField: 'buildCommand',
        gqlField: { message: 'Field "buildCommand"' },
      },
      {
        name: 'an idempotency key of 256 characters → BAD_USER_INPUT on idempotencyKey ↔ 422 on Idempotency-Key',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug }, { 'Idempotency-Key': 'k'.repeat(256) }),
        gql: () => deployTwin({ project: slug }, 'k'.repeat(256)),
        restField: 'Idempotency-Key',
        gqlField: { field: 'idempotencyKey' },
      },
    ];

    it.each(cases)('$name, nothing written', (c) => expectSameRefusal(c));

    it('an egg of another account is NOT_FOUND exactly like an unknown slug, and nothing is written', async () => {
      const missing = unique('nosuch');
      const theirs = await writesNothing(t, () => deployTwin({ project: strangerSlug }));
      const unknown = await writesNothing(t, () => deployTwin({ project: missing }));
      expect(theirs.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(unknown.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      // The same error but for the slug in its message and the id of the request it answers.
      const shape = (r: GqlResult<unknown>, key: string) => {
        const { requestId, ...extensions } = r.errors![0].extensions ?? {};
        expect(requestId).toMatch(/^req_/);
        return { ...r.errors![0], extensions, message: r.errors![0].message.split(key).join('<slug>') };
      };
      expect(shape(theirs, strangerSlug)).toEqual(shape(unknown, missing));
    });
  });

  describe(`out-of-range deploy input: at most ${ENV_MAX_VARS} env variables, values of at most ${ENV_MAX_VALUE} characters, an Idempotency-Key of 1 to 255`, () => {
    const cases: TwinCase[] = [
      {
        name: `env with ${ENV_MAX_VARS + 1} variables → BAD_USER_INPUT on env ↔ 422 on env`,
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: envOf(ENV_MAX_VARS + 1) }),
        gql: () => deployTwin({ project: slug, env: envOf(ENV_MAX_VARS + 1) }),
        restField: 'env',
        gqlField: { field: 'env' },
      },
      {
        name: `an env value of ${ENV_MAX_VALUE + 1} characters → BAD_USER_INPUT on env.BIG ↔ 422 on env.BIG`,
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug, env: { BIG: 'x'.repeat(ENV_MAX_VALUE + 1) } }),
        gql: () => deployTwin({ project: slug, env: { BIG: 'x'.repeat(ENV_MAX_VALUE + 1) } }),
        restField: 'env.BIG',
        gqlField: { field: 'env.BIG' },
      },
      {
        name: 'an empty Idempotency-Key → BAD_USER_INPUT on idempotencyKey ↔ 422 on Idempotency-Key',
        code: 'BAD_USER_INPUT',
        rest: () => post({ project: slug }, { 'Idempotency-Key': '' }),
        gql: () => deployTwin({ project: slug }, ''),
        restField: 'Idempotency-Key',
        gqlField: { field: 'idempotencyKey' },
      },
    ];

    it.each(cases)('$name, nothing written', (c) => expectSameRefusal(c));

    it(`accepts the boundaries: ${ENV_MAX_VARS} variables, one of them ${ENV_MAX_VALUE} characters long, and a 255-character key`, async () => {
      const env = { ...envOf(ENV_MAX_VARS - 2), BIG: 'x'.repeat(ENV_MAX_VALUE), HATCHERY_SIMULATE: 'fail' };
      expect(Object.keys(env)).toHaveLength(ENV_MAX_VARS);
      const viaRest = await post({ project: slug, env }, { 'Idempotency-Key': 'r'.repeat(255) });
      expect(viaRest.status).toBe(201);
      expect(viaRest.body.env_keys).toHaveLength(ENV_MAX_VARS);
      const viaGql = await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug, env }, idempotencyKey: 'g'.repeat(255) });
      expect(viaGql.deploy.envKeys).toHaveLength(ENV_MAX_VARS);
      expect(viaGql.deploy.id).not.toBe(viaRest.body.id);
      expect(await settle(t.url, owner, viaRest.body.id)).toBe('FAILED');
      expect(await settle(t.url, owner, viaGql.deploy.id)).toBe('FAILED');
    });
  });

  describe('deployments(project, status, first, after) ↔ GET /deployments', () => {
    const seqCursor = Buffer.from('seq:1').toString('base64url');
    const cases: TwinCase[] = [
      ...[0, 101, -1].map((n): TwinCase => ({
        name: `first ${n} → BAD_USER_INPUT on first ↔ limit=${n}: 422 on limit`,
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments?limit=${n}`),
        gql: () => listTwin({ first: n }),
        restField: 'limit',
        gqlField: { field: 'first' },
      })),
      ...(['abc', 1.5] as const).map((v): TwinCase => ({
        name: `first ${JSON.stringify(v)} (not an Int) → BAD_USER_INPUT naming $first ↔ limit=${v}: 422 on limit`,
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments?limit=${v}`),
        gql: () => listTwin({ first: v }),
        restField: 'limit',
        gqlField: { message: '"$first"' },
      })),
      {
        name: 'after "not-a-cursor" → BAD_USER_INPUT on after ↔ cursor=not-a-cursor: 422 on cursor',
        code: 'BAD_USER_INPUT',
        rest: () => get('/deployments?cursor=not-a-cursor'),
        gql: () => listTwin({ after: 'not-a-cursor' }),
        restField: 'cursor',
        gqlField: { field: 'after' },
      },
      {
        name: 'after a log cursor (seq:1) → BAD_USER_INPUT on after ↔ 422 on cursor',
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments?cursor=${seqCursor}`),
        gql: () => listTwin({ after: seqCursor }),
        restField: 'cursor',
        gqlField: { field: 'after' },
      },
      ...['BOGUS', 'SLEEPING'].map((s): TwinCase => ({
        name: `status "${s}" → BAD_USER_INPUT naming $status ↔ status=${s.toLowerCase()}: 422 on status`,
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments?status=${s.toLowerCase()}`),
        gql: () => listTwin({ status: s }),
        restField: 'status',
        gqlField: { message: '"$status"' },
      })),
      {
        name: 'project an unknown slug → NOT_FOUND ↔ 404',
        code: 'NOT_FOUND',
        rest: () => get('/deployments?project=nosuch-egg-for-twins'),
        gql: () => listTwin({ project: 'nosuch-egg-for-twins' }),
      },
      {
        name: 'project an egg of another account → NOT_FOUND ↔ 404',
        code: 'NOT_FOUND',
        rest: () => get(`/deployments?project=${strangerSlug}`),
        gql: () => listTwin({ project: strangerSlug }),
      },
    ];

    it.each(cases)('$name', (c) => expectSameRefusal(c));
  });

  describe('deployment(id) ↔ GET /deployments/:id', () => {
    it.each([
      ['a well-formed id that was never created', neverCreated],
      ['a malformed id', 'not-an-id'],
    ])('%s → NOT_FOUND ↔ 404', (_name, id) =>
      expectSameRefusal({
        name: id,
        code: 'NOT_FOUND',
        rest: () => get(`/deployments/${id}`),
        gql: () => gql(t.url, owner.token, DeploymentDocument, { id }),
      }),
    );
  });

  describe('deleteDeployment(id) ↔ DELETE /deployments/:id', () => {
    it.each([
      ['a well-formed id that was never created', neverCreated],
      ['a malformed id', 'not-an-id'],
    ])('%s → NOT_FOUND ↔ 404, nothing deleted', (_name, id) =>
      expectSameRefusal({
        name: id,
        code: 'NOT_FOUND',
        rest: () => rest(t.url, owner.token, 'DELETE', `/deployments/${id}`),
        gql: () => gql(t.url, owner.token, DeleteDeploymentDocument, { id }),
      }),
    );

    it('an already deleted deployment → NOT_FOUND ↔ 404', async () => {
      const d = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      expect(await settle(t.url, owner, d.id)).toBe('FAILED');
      expect((await gqlOk(t.url, owner.token, DeleteDeploymentDocument, { id: d.id })).deleteDeployment).toBe(d.id);
      await expectSameRefusal({
        name: 'deleted',
        code: 'NOT_FOUND',
        rest: () => rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`),
        gql: () => gql(t.url, owner.token, DeleteDeploymentDocument, { id: d.id }),
      });
      // The other deployments are untouched.
      expect((await gqlOk(t.url, owner.token, DeploymentDocument, { id: depId })).deployment.id).toBe(depId);
    });
  });

  describe('deployment(id).logs(type, since, first, after) ↔ GET /deployments/:id/logs', () => {
    const cases: TwinCase[] = [
      ...[0, 1001].map((n): TwinCase => ({
        name: `first ${n} → BAD_USER_INPUT on first ↔ limit=${n}: 422 on limit`,
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments/${depId}/logs?limit=${n}`),
        gql: () => logsTwin({ first: n }),
        restField: 'limit',
        gqlField: { field: 'first' },
      })),
      {
        name: 'after "garbage" → BAD_USER_INPUT on after ↔ cursor=garbage: 422 on cursor',
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments/${depId}/logs?cursor=garbage`),
        gql: () => logsTwin({ after: 'garbage' }),
        restField: 'cursor',
        gqlField: { field: 'after' },
      },
      ...['yesterday', '2026-13-45T00:00:00Z'].map((since): TwinCase => ({
        name: `since "${since}" → BAD_USER_INPUT naming $since ↔ since=${since}: 422 on since`,
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments/${depId}/logs?since=${since}`),
        gql: () => logsTwin({ since }),
        restField: 'since',
        gqlField: { message: '"$since"' },
      })),
      ...['STDOUT', 'BOGUS'].map((type): TwinCase => ({
        name: `type "${type}" → BAD_USER_INPUT naming $type ↔ type=${type.toLowerCase()}: 422 on type`,
        code: 'BAD_USER_INPUT',
        rest: () => get(`/deployments/${depId}/logs?type=${type.toLowerCase()}`),
        gql: () => logsTwin({ type }),
        restField: 'type',
        gqlField: { message: '"$type"' },
      })),
      {
        name: 'a well-formed deployment id that was never created → NOT_FOUND ↔ 404',
        code: 'NOT_FOUND',
        rest: () => get(`/deployments/${neverCreated}/logs`),
        gql: () => gql(t.url, owner.token, DeploymentLogsDocument, { id: neverCreated }),
      },
    ];

    it.each(cases)('$name', (c) => expectSameRefusal(c));

    it('the same variables without the fault are accepted by both (the cases above fail for the named reason only)', async () => {
      const r = await get(`/deployments/${depId}/logs?limit=1000&type=build&since=2000-01-01T00:00:00Z`);
      expect(r.status).toBe(200);
      const g = await gqlOk(t.url, owner.token, DeploymentLogsDocument, { id: depId, first: 1000, type: 'BUILD', since: '2000-01-01T00:00:00Z' });
      expect(g.deployment.logs.nodes.map((l) => l.message)).toEqual(r.body.data.map((l: { message: string }) => l.message));
      expect(g.deployment.logs.nodes.length).toBeGreaterThan(0);
    });
  });
});
