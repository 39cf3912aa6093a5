import { createHook } from 'node:async_hooks';
import { request } from 'node:http';
import { parse } from 'graphql';
import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { StatementLog } from '../support/statements';

const ListWithEggs = parse(`
  query ListWithEggs { deployments(first: 20) { nodes { id status canRollback app { slug } } } }
`) as TypedDocumentNode<{ deployments: { nodes: Array<{ id: string; status: string; canRollback: boolean; app: { slug: string } }> } }>;

/** The token's own statements (a lookup, now and then last_used_at), which the token cache may or may not save. */
const TOKEN = /\bapi_tokens\b/;

/**
 * The hottest list reads its deployments' eggs in the same statement as the deployments (issue 17:
 * fewer statements per request): `app` and `canRollback` need no statement of their own.
 */
describe('the deployments list: one statement, eggs included', () => {
  let t: TestGateway;
  let owner: TestUser;
  const sql = new StatementLog();
  const expected = new Map<string, { slug: string; canRollback: boolean }>();

  beforeAll(async () => {
    // With the gateways' default token cache: what a list costs in production.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '600000', HATCHERY_TOKEN_CACHE_MS: '250' }, { db: { onQuery: sql.onQuery } });
    owner = await makeUser(t.gateway);
    for (let e = 0; e < 3; e++) {
      const { slug } = await makeApp(t.url, owner);
      // Two live deployments: the older one can be rolled back to, the current one not; then one building.
      const older = (await deploy(t.url, owner, slug)).id;
      await t.gateway.services.deployments.finishBuild(older, { ok: true });
      const current = (await deploy(t.url, owner, slug)).id;
      await t.gateway.services.deployments.finishBuild(current, { ok: true });
      const building = (await deploy(t.url, owner, slug)).id;
      expected.set(older, { slug, canRollback: true });
      expected.set(current, { slug, canRollback: false });
      expected.set(building, { slug, canRollback: false });
    }
    await t.gateway.services.deployments.supervisor.resumeRunning();
  });
  afterAll(() => t.stop());

  const served = (statements: string[]) => statements.filter((s) => !TOKEN.test(s));

  it('GraphQL: deployments with their egg and canRollback, in one statement', async () => {
    const { result, served: statements } = await sql.during(() => gqlOk(t.url, owner.token, ListWithEggs, {}));
    expect(result.deployments.nodes).toHaveLength(expected.size);
    for (const n of result.deployments.nodes) expect({ slug: n.app.slug, canRollback: n.canRollback }).toEqual(expected.get(n.id));
    expect(served(statements)).toHaveLength(1);
    expect(served(statements)[0]).toMatch(/\bJOIN apps\b/);
    // A named prepared statement: parsed and planned once per connection.
    expect(served(statements)[0]).toMatch(/^\/\* prepared \*\//);
  });

  it('REST: GET /deployments in one statement, each with its egg', async () => {
    const { result, served: statements } = await sql.during(() => rest(t.url, owner.token, 'GET', '/deployments?limit=20'));
    expect(result.status).toBe(200);
    const body = result.body as { data: Array<{ id: string; project: string }> };
    expect(body.data).toHaveLength(expected.size);
    for (const d of body.data) expect(d.project).toBe(expected.get(d.id)!.slug);
    expect(served(statements)).toHaveLength(1);
  });

  it("counts the request's statements, not work on timers that runs meanwhile", async () => {
    // A statement outside any request (as a runner's reconcile on its timer), while the list is served.
    const { served, statements } = await sql.during(() =>
      Promise.all([t.gateway.ds.query('SELECT 1 AS background'), rest(t.url, owner.token, 'GET', '/deployments?limit=20')]),
    );
    expect(statements.some((s) => s.includes('background'))).toBe(true);
    expect(served.some((s) => s.includes('background'))).toBe(false);
    expect(served.filter((s) => !TOKEN.test(s))).toHaveLength(1);
  });

  it('GraphQL: a row costs no promise (its egg and canRollback are read from the row, not awaited)', async () => {
    const query = (first: number) => `query { deployments(first: ${first}) { nodes { id status canRollback app { slug } } } }`;
    // Node's callback client: the same few promises on this side whatever the answer's size.
    const post = (body: string) =>
      new Promise<string>((resolve, reject) => {
        const req = request(`${t.url}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        });
        req.on('error', reject);
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve(text));
        });
        req.end(body);
      });
    /** The promises made while serving one request (the fewest of five: timers of the gateway run meanwhile). */
    const promisesOf = async (first: number) => {
      const counts: number[] = [];
      for (let i = 0; i < 5; i++) {
        let n = 0;
        const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && n++) }).enable();
        const text = await post(JSON.stringify({ query: query(first) }));
        hook.disable();
        expect(JSON.parse(text).data.deployments.nodes).toHaveLength(first);
        counts.push(n);
      }
      return Math.min(...counts);
    };
    const one = await promisesOf(1);
    const all = await promisesOf(expected.size);
    // Through a primed loader each row made about five (the resolvers' awaits, the loader's own).
    expect((all - one) / (expected.size - 1)).toBeLessThan(1);
  });
});
