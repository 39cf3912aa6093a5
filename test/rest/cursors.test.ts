import { getNamedType, GraphQLObjectType } from 'graphql';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { newId } from '../../src/ids';
import { routes } from '../../src/rest/routes';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { expectInvalid } from './problem';

/**
 * Issue 12, item 9: every cursor is checked against the range of what it names before any SQL
 * runs. A log cursor (`seq:<n>`) names an `integer` column, so `seq:9999999999` used to reach
 * PostgreSQL and answer 500 ("out of range for type integer"); an id cursor must be a
 * well-formed id of its list's prefix. REST answers 422 naming `cursor`, GraphQL BAD_USER_INPUT
 * naming `after`. The tables below are checked against the route table and the schema, so a
 * new paged list must be added here.
 */
type Kind = 'seq' | 'at' | 'dep' | 'cron' | 'run' | 'tok' | 'app' | 'led' | 'whd' | 'src';

const b64 = (key: string) => Buffer.from(key, 'utf8').toString('base64url');
const SUFFIX = newId('dep').slice('dep_'.length);

/** Cursors no list ever hands out, for a list of `kind`. */
function forged(kind: Kind): Array<[string, string]> {
  const other: Kind = kind === 'dep' ? 'cron' : 'dep';
  const keys = [
    'seq:9999999999',
    'seq:2147483648',
    'seq:99999999999',
    'seq:-1',
    'seq:01',
    'seq:1.5',
    'seq:',
    `${other}_${SUFFIX}`,
    `${kind}_8zzzzzzzzzzzzzzzzzzzzzzzzz`,
    `${kind}_${SUFFIX.toUpperCase()}`,
    `${kind}_${SUFFIX}x`,
    // An egg's log cursor (time, deployment, seq) out of range or malformed.
    `t:1:dep_${SUFFIX}:2147483648`,
    `t:9000000000000000:dep_${SUFFIX}:1`,
    `t:01:dep_${SUFFIX}:1`,
    `t:1:cron_${SUFFIX}:1`,
  ];
  return [...keys.map((k): [string, string] => [k, b64(k)]), ['not base64url', 'not a cursor!']];
}

/** The last cursor of each kind's range: it must be accepted (an empty or full page, not an error). */
function highest(kind: Kind): string {
  if (kind === 'at') return b64('t:8640000000000000:dep_7zzzzzzzzzzzzzzzzzzzzzzzzz:2147483647');
  return b64(kind === 'seq' ? 'seq:2147483647' : `${kind}_7zzzzzzzzzzzzzzzzzzzzzzzzz`);
}

/** REST lists with a `cursor`, by path, with the kind of cursor each pages by. */
const REST_KINDS: Record<string, Kind> = {
  '/deployments': 'dep',
  '/deployments/:id/logs': 'seq',
  '/v1/apps/:slug/logs': 'at',
  '/v1/apps/:slug/crons': 'cron',
  '/v1/apps/:slug/crons/:id/runs': 'run',
};

/** GraphQL connections, as `Type.field`, with the kind and an operation reaching them with `$after`. */
const GQL_LISTS: Record<string, { kind: Kind; query: string }> = {
  'Query.deployments': { kind: 'dep', query: 'query($after: String) { deployments(after: $after) { nodes { id } } }' },
  'Deployment.logs': { kind: 'seq', query: 'query($dep: ID!, $after: String) { deployment(id: $dep) { logs(after: $after) { nodes { seq } } } }' },
  'App.logs': { kind: 'at', query: 'query($slug: String!, $after: String) { app(slug: $slug) { logs(after: $after) { nodes { seq } } } }' },
  'Query.apiTokens': { kind: 'tok', query: 'query($after: String) { apiTokens(after: $after) { nodes { id } } }' },
  'Query.apps': { kind: 'app', query: 'query($after: String) { apps(after: $after) { nodes { id } } }' },
  'App.deployments': { kind: 'dep', query: 'query($slug: String!, $after: String) { app(slug: $slug) { deployments(after: $after) { nodes { id } } } }' },
  'Query.crons': { kind: 'cron', query: 'query($slug: String!, $after: String) { crons(app: $slug, after: $after) { nodes { id } } }' },
  'Query.cronRuns': {
    kind: 'run',
    query: 'query($slug: String!, $cron: ID!, $after: String) { cronRuns(app: $slug, id: $cron, after: $after) { nodes { id } } }',
  },
  'Query.energyLedger': { kind: 'led', query: 'query($after: String) { energyLedger(after: $after) { nodes { id } } }' },
  'Webhook.deliveries': { kind: 'whd', query: 'query($slug: String!, $after: String) { webhooks(app: $slug) { deliveries(after: $after) { nodes { id } } } }' },
  'Query.sources': { kind: 'src', query: 'query($slug: String!, $after: String) { sources(app: $slug, after: $after) { nodes { id } } }' },
};

describe('forged cursors', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;
  let depId: string;
  let cronId: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WEBHOOK_WORKER: 'off' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    depId = (await deploy(t.url, owner, slug)).id;
    expect(await settle(t.url, owner, depId)).toBe('LIVE');
    const cron = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 0 * * *', command: 'echo hi' });
    expect(cron.status).toBe(201);
    cronId = cron.body.id;
    const hook = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, { url: 'https://93.184.216.34/hook', events: ['deploy'] });
    expect(hook.status).toBe(201);
  });
  afterAll(() => t.stop());

  it('the tables name every REST list with a cursor and every GraphQL connection', () => {
    expect(
      routes
        .filter((r) => r.query?.includes('cursor'))
        .map((r) => r.path)
        .sort(),
    ).toEqual(Object.keys(REST_KINDS).sort());
    const schema = buildGatewaySchema();
    const connections: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
      for (const field of Object.values(type.getFields())) {
        if (getNamedType(field.type).name.endsWith('Connection')) connections.push(`${type.name}.${field.name}`);
      }
    }
    expect(connections.sort()).toEqual(Object.keys(GQL_LISTS).sort());
  });

  describe('REST: 422 validation_failed naming cursor, never a 5xx', () => {
    const cases = Object.entries(REST_KINDS).flatMap(([path, kind]) => forged(kind).map(([key, cursor]) => [path, key, cursor] as const));

    it.each(cases)('GET %s?cursor=<%s>', async (path, _key, cursor) => {
      const url = path.replace(':slug', slug).replace(':id', path.includes('crons') ? cronId : depId);
      expectInvalid(await rest(t.url, owner.token, 'GET', `${url}?cursor=${encodeURIComponent(cursor)}`), 'cursor');
    });

    it.each(Object.entries(REST_KINDS))('GET %s with the highest %s cursor answers 200', async (path, kind) => {
      const url = path.replace(':slug', slug).replace(':id', path.includes('crons') ? cronId : depId);
      const res = await rest(t.url, owner.token, 'GET', `${url}?cursor=${highest(kind)}`);
      expect(res.status).toBe(200);
    });

    it('a log cursor of the last stored line pages on from there (the check leaves real cursors alone)', async () => {
      const all = await rest(t.url, owner.token, 'GET', `/deployments/${depId}/logs?limit=1`);
      expect(all.status).toBe(200);
      expect(all.body.has_more).toBe(true);
      const next = await rest(t.url, owner.token, 'GET', `/deployments/${depId}/logs?limit=1&cursor=${all.body.next_cursor}`);
      expect(next.status).toBe(200);
      expect(next.body.data).toHaveLength(1);
      expect(next.body.data[0]).not.toEqual(all.body.data[0]);
    });
  });

  describe('GraphQL: BAD_USER_INPUT naming after', () => {
    const vars = () => ({ slug, dep: depId, cron: cronId });
    const cases = Object.entries(GQL_LISTS).flatMap(([name, { kind }]) => forged(kind).map(([key, cursor]) => [name, key, cursor] as const));

    it.each(cases)('%s(after: <%s>)', async (name, _key, cursor) => {
      const { query } = GQL_LISTS[name];
      const out = await rawGql(query, { ...pick(query, vars()), after: cursor });
      expect(out.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(out.errors?.[0]?.extensions?.errors).toEqual([{ field: 'after', message: expect.any(String) }]);
    });

    it.each(Object.entries(GQL_LISTS))('%s with the highest cursor of its kind has no error', async (_name, { kind, query }) => {
      const out = await rawGql(query, { ...pick(query, vars()), after: highest(kind) });
      expect(out.errors).toBeUndefined();
    });
  });

  /** Only the variables the operation declares. */
  function pick(query: string, all: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(all).filter(([k]) => query.includes(`$${k}:`)));
  }

  async function rawGql(query: string, variables: Record<string, unknown>) {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ query, variables }),
    });
    expect(res.status).toBeLessThan(500);
    return (await res.json()) as { data?: unknown; errors?: Array<{ message: string; extensions?: Record<string, any> }> };
  }
});
