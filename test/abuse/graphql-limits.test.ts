import { Client as WsClient } from 'graphql-ws';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { graphql, openWsClient, request, runWs } from './helpers';

/**
 * Depth, cost, alias, directive, token and list limits: an operation at a limit runs, one past it
 * is refused with 400 / BAD_USER_INPUT naming the limit, over HTTP and graphql-ws alike, before
 * any SQL (not even the token lookup).
 */

const LIMITS = {
  HATCHERY_GRAPHQL_MAX_DEPTH: '10',
  HATCHERY_GRAPHQL_MAX_COST: '9801',
  HATCHERY_GRAPHQL_MAX_ALIASES: '5',
  HATCHERY_GRAPHQL_MAX_DIRECTIVES: '4',
  HATCHERY_GRAPHQL_MAX_TOKENS: '600',
};

/** `app(slug)` then `currentDeployment { app { … } }` until `depth` levels, counting the leaf. */
function deepQuery(slug: string, depth: number): string {
  let inner = depth % 2 === 0 ? 'slug' : 'id';
  for (let level = depth - 1; level >= 2; level--) inner = `${level % 2 === 0 ? 'currentDeployment' : 'app'} { ${inner} }`;
  return `{ app(slug: "${slug}") { ${inner} } }`;
}

/** 1 + 100 × (1 + (1 + perApp × 2)): 9801 with 48 deployments per egg, 10001 with 49. */
const costlyQuery = (perApp: number) => `{ apps(first: 100) { nodes { deployments(first: ${perApp}) { nodes { id } } } } }`;
const aliasQuery = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: viewer { id }`).join(' ')} }`;
const directiveQuery = (n: number) => `{ viewer { ${Array.from({ length: n }, () => 'id @include(if: true)').join(' ')} } }`;
/** `{ viewer { id … } }`: 5 tokens plus one per `id`. */
const tokenQuery = (tokens: number) =>
  `{ viewer { ${Array(tokens - 5)
    .fill('id')
    .join(' ')} } }`;

describe('GraphQL operation limits', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;
  const statements: string[] = [];
  let client: WsClient;

  beforeAll(async () => {
    t = await startGateway(LIMITS, { db: { onQuery: (sql) => statements.push(sql) } });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
    // One connection for the file: each refusal is seen on a connection that stays open.
    client = openWsClient(t.url, user.token);
  });
  afterAll(async () => {
    await client?.dispose();
    await t?.stop();
  });

  /** Statements issued while `fn` runs. */
  async function sqlDuring<T>(fn: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
    const before = statements.length;
    const result = await fn();
    return { result, sql: statements.slice(before) };
  }

  const cases = [
    { limit: 'depth', max: 10, at: () => deepQuery(slug, 10), over: () => deepQuery(slug, 11), found: 11 },
    { limit: 'cost', max: 9801, at: () => costlyQuery(48), over: () => costlyQuery(49), found: 10001 },
    { limit: 'aliases', max: 5, at: () => aliasQuery(5), over: () => aliasQuery(6), found: 6 },
    { limit: 'directives', max: 4, at: () => directiveQuery(4), over: () => directiveQuery(5), found: 5 },
    { limit: 'tokens', max: 600, at: () => tokenQuery(600), over: () => tokenQuery(601), found: undefined },
  ];

  describe.each(cases)('$limit (max $max)', ({ limit, max, at, over, found }) => {
    it('runs an operation at the limit, over HTTP and graphql-ws', async () => {
      const res = await graphql(t.url, user.token, at());
      expect(res.status).toBe(200);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data).toBeTruthy();
      const ws = await runWs(client, at());
      expect(ws.errors).toBeUndefined();
      expect(ws.data).toEqual(res.body.data);
    });

    it('refuses one past it with 400 and BAD_USER_INPUT naming the limit, running no SQL', async () => {
      const { result: res, sql } = await sqlDuring(() => graphql(t.url, user.token, over()));
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors).toHaveLength(1);
      expect(res.body.errors[0].extensions).toEqual({
        code: 'BAD_USER_INPUT',
        limit,
        max,
        ...(found === undefined ? {} : { found }),
        requestId: expect.stringMatching(/^req_/),
      });
      expect(res.body.errors[0].message).toMatch(new RegExp(`limit of ${max} exceeded`, 'i'));
      expect(sql).toEqual([]);
    });

    it('refuses it over graphql-ws with the same error, keeping the connection', async () => {
      await runWs(client, '{ viewer { id } }'); // connected and authenticated before counting
      const { result: ws, sql } = await sqlDuring(() => runWs(client, over()));
      expect(ws.data).toBeUndefined();
      expect(ws.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', limit, max }) })]);
      expect(sql).toEqual([]);
      expect((await runWs(client, '{ viewer { email } }')).data).toEqual({ viewer: { email: user.email } });
    });
  });

  it('refuses without a token too, before answering 401', async () => {
    const { result: res, sql } = await sqlDuring(() => graphql(t.url, null, deepQuery(slug, 11)));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'depth' });
    expect(sql).toEqual([]);
    expect((await graphql(t.url, null, deepQuery(slug, 10))).status).toBe(401);
  });

  it('holds GraphQL over GET (query string) to the same limits', async () => {
    const get = (query: string) =>
      request(t.url, 'GET', `/graphql?query=${encodeURIComponent(query)}`, { token: user.token, headers: { 'apollo-require-preflight': 'true' } });
    const { result: over, sql } = await sqlDuring(() => get(deepQuery(slug, 11)));
    expect(over.status).toBe(400);
    expect(over.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'depth' });
    expect(sql).toEqual([]);
    const at = await get(deepQuery(slug, 10));
    expect(at.status).toBe(200);
    expect(at.body).toEqual({ data: { app: { currentDeployment: null } } });
  });

  it('counts page sizes given as variables in the cost', async () => {
    const query = 'query($n: Int) { apps(first: 100) { nodes { deployments(first: $n) { nodes { id } } } } }';
    expect((await graphql(t.url, user.token, query, { n: 48 })).status).toBe(200);
    const res = await graphql(t.url, user.token, query, { n: 49 });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'cost', found: 10001 });
    // Without `first`, a page counts at its default size (20).
    expect((await graphql(t.url, user.token, '{ apps(first: 100) { nodes { deployments { nodes { id } } } } }')).status).toBe(200);
  });

  it('refuses a fragment bomb that fits the other limits as too costly, running no SQL', async () => {
    // 4 levels of fragments spreading the next one 30 times: depth 10, 200 tokens, 27,000 copies of `id`.
    const levels = 4;
    const spread = (i: number) =>
      Array(30)
        .fill(`...F${i + 1}`)
        .join(' ');
    const fragments = Array.from({ length: levels }, (_, i) =>
      i === levels - 1 ? `fragment F${i} on User { id }` : `fragment F${i} on User { ${spread(i)} }`,
    );
    const query = `query { viewer { ...F0 } } ${fragments.join(' ')}`;
    const { result: res, sql } = await sqlDuring(() => graphql(t.url, user.token, query));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'cost' });
    expect(sql).toEqual([]);
  });

  it('does not count introspection: the explorer’s schema query runs', async () => {
    const { getIntrospectionQuery } = await import('graphql');
    const res = await graphql(t.url, user.token, getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }));
    expect(res.status).toBe(200);
    expect(res.body.data.__schema.queryType.name).toBe('Query');
  });

  describe('list arguments: at most 100 items', () => {
    const create = `mutation($slug: String!, $input: CreateWebhookInput!) { createWebhook(app: $slug, input: $input) { secret } }`;
    const events = (n: number) => Array(n).fill('deploy');

    it('refuses a list variable of 101 items (400, limit "list") and passes one of 100 on to the service', async () => {
      const over = await graphql(t.url, user.token, create, { slug, input: { url: 'http://hooks.example.com/x', events: events(101) } });
      expect(over.status).toBe(400);
      expect(over.body.errors[0].extensions).toEqual({
        code: 'BAD_USER_INPUT',
        limit: 'list',
        max: 100,
        found: 101,
        requestId: expect.stringMatching(/^req_/),
      });
      expect(over.body.errors[0].message).toContain('$input.events');
      // 100 items pass the limit; the plain-http URL is what the service refuses.
      const at = await graphql(t.url, user.token, create, { slug, input: { url: 'http://hooks.example.com/x', events: events(100) } });
      expect(at.status).toBe(200);
      expect(at.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [expect.objectContaining({ field: 'url' })] });
      expect(at.body.errors[0].extensions.limit).toBeUndefined();
    });

    it('refuses a list literal of 101 items in the query', async () => {
      const literal = (n: number) =>
        `mutation { createWebhook(app: "${slug}", input: { url: "http://hooks.example.com/x", events: [${events(n)
          .map((e) => `"${e}"`)
          .join(', ')}] }) { secret } }`;
      const over = await graphql(t.url, user.token, literal(101));
      expect(over.status).toBe(400);
      expect(over.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'list', found: 101 });
      const at = await graphql(t.url, user.token, literal(100));
      expect(at.body.errors[0].extensions.limit).toBeUndefined();
    });

    it('REST answers 422 on the field holding 101 items', async () => {
      const over = await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/webhooks`, { url: 'http://hooks.example.com/x', events: events(101) });
      expect(over.status).toBe(422);
      expect(over.body.code).toBe('validation_failed');
      expect(over.body.errors).toEqual([{ field: 'events', message: 'must have at most 100 items' }]);
      const at = await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/webhooks`, { url: 'http://hooks.example.com/x', events: events(100) });
      expect(at.status).toBe(422);
      expect(at.body.errors.map((e: { field: string }) => e.field)).toEqual(['url']);
    });

    it('keeps page sizes at 1 to 100, and log pages at 1 to 1000 (REST’s documented logs limit)', async () => {
      const page = await graphql(t.url, user.token, '{ apps(first: 101) { nodes { slug } } }');
      expect(page.body.errors[0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        errors: [{ field: 'first', message: 'must be an integer from 1 to 100' }],
      });
      const d = await deploy(t.url, user, slug);
      await settle(t.url, user, d.id);
      const logs = await rest(t.url, user.token, 'GET', `/deployments/${d.id}/logs?limit=1000`);
      expect(logs.status).toBe(200);
      expect(logs.body.data.length).toBeGreaterThan(0);
      expect((await rest(t.url, user.token, 'GET', `/deployments/${d.id}/logs?limit=1001`)).status).toBe(422);
      const gqlLogs = await graphql(
        t.url,
        user.token,
        `
          query ($id: ID!) {
            deployment(id: $id) {
              logs(first: 1000) {
                nodes {
                  message
                }
              }
            }
          }
        `,
        { id: d.id },
      );
      expect(gqlLogs.status).toBe(200);
      expect(gqlLogs.body.data.deployment.logs.nodes.length).toBeGreaterThanOrEqual(logs.body.data.length); // runtime lines keep coming
      // …but 1000 lines under each of 100 deployments is far over the cost limit.
      const nested = await graphql(t.url, user.token, '{ deployments(first: 100) { nodes { logs(first: 1000) { nodes { message } } } } }');
      expect(nested.status).toBe(400);
      expect(nested.body.errors[0].extensions).toMatchObject({ limit: 'cost' });
    });
  });

  describe('field suggestions are never shown', () => {
    const probes: Array<[string, string, Record<string, unknown> | undefined, RegExp]> = [
      ['an unknown field', '{ viewer { emial } }', undefined, /^Cannot query field "emial" on type "User"\.$/m],
      ['an unknown argument', '{ apps(frist: 1) { nodes { slug } } }', undefined, /Unknown argument "frist"/],
      ['an unknown input field', 'mutation { createApp(input: { slg: "abc" }) { slug } }', undefined, /"slg" is not defined by type "CreateAppInput"/],
      ['an unknown type', 'query($s: DeploymentStats) { deployments(status: $s) { nodes { id } } }', undefined, /Unknown type "DeploymentStats"/],
      [
        'a misspelt enum value',
        'query($s: DeploymentStatus) { deployments(status: $s) { nodes { id } } }',
        { s: 'LIV' },
        /"LIV" does not exist in "DeploymentStatus" enum/,
      ],
    ];

    it.each(probes)('%s, over HTTP', async (_what, query, variables, says) => {
      const res = await graphql(t.url, user.token, query, variables);
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { message: string }) => e.message).join('\n')).toMatch(says);
      expect(res.text).not.toMatch(/did you mean/i);
    });

    it.each(probes)('%s, over graphql-ws', async (_what, query, variables, says) => {
      const ws = await runWs(client, query, variables);
      expect((ws.errors ?? []).map((e) => e.message).join('\n')).toMatch(says);
      expect(JSON.stringify(ws)).not.toMatch(/did you mean/i);
    });

    it('an unknown query parameter or enum value over REST', async () => {
      const res = await rest(t.url, user.token, 'GET', '/deployments?status=liv&limt=5');
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.body)).not.toMatch(/did you mean/i);
    });
  });
});

describe('operation limit settings', () => {
  it('default to depth 12, cost 10000, 15 aliases, 20 directives, 1000 tokens', () => {
    expect(loadConfig({}).graphqlLimits).toEqual({ maxDepth: 12, maxCost: 10_000, maxAliases: 15, maxDirectives: 20, maxTokens: 1000 });
    expect(() => loadConfig({ HATCHERY_GRAPHQL_MAX_DEPTH: '0' })).toThrow(/HATCHERY_GRAPHQL_MAX_DEPTH/);
    expect(() => loadConfig({ HATCHERY_GRAPHQL_MAX_COST: 'lots' })).toThrow(/HATCHERY_GRAPHQL_MAX_COST/);
  });

  it('a configuration too strict for the REST layer’s own operations stops the start, naming the route and setting', async () => {
    const t = await startGateway();
    try {
      const strict = buildApp({ ...t.config, graphqlLimits: { ...t.config.graphqlLimits, maxCost: 5000 } });
      await expect(strict.start(0)).rejects.toThrow(/REST GET \/deployments\/:id\/logs.*HATCHERY_GRAPHQL_MAX_COST/);
      await strict.stop();
    } finally {
      await t.stop();
    }
  });
});
