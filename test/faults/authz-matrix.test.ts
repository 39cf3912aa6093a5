import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { getNamedType, GraphQLField, GraphQLObjectType, isCompositeType, isInputObjectType, parse } from 'graphql';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { Route, routes } from '../../src/rest/routes';
import { uploads } from '../../src/rest/uploads';
import { helloEgg, upload } from '../sources/helpers';
import { TestUser } from '../support/factories';
import { collect, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { furnish, Furnished, snapshot } from './helpers';

/**
 * The authorization matrix, generated from the REST route table and the GraphQL schema: every
 * route and every root field that names an egg or one of its things (args `id`, `app`, `slug`,
 * `project`, `to`, or an input with `project`) is tried by a stranger (404 / NOT_FOUND) and,
 * where only the owner may act, by a collaborator (403 / FORBIDDEN). Each needs a fixture below:
 * a new route or field without one fails the test. After the attempts the database is unchanged;
 * then the owner sends the very same requests and they succeed, so the fixtures point at real
 * things and the 404s are not vacuous.
 */

type RestFixture = { path: string; body?: Record<string, unknown> } | { unscoped: string };

const restFixtures: Record<string, (f: Furnished) => RestFixture> = {
  'POST /deploy': (f) => ({ path: '/deploy', body: { project: f.slug } }),
  'GET /deployments': (f) => ({ path: `/deployments?project=${f.slug}` }),
  'GET /deployments/:id': (f) => ({ path: `/deployments/${f.deployments[0]}` }),
  'DELETE /deployments/:id': (f) => ({ path: `/deployments/${f.deployments[1]}` }),
  'GET /deployments/:id/logs': (f) => ({ path: `/deployments/${f.deployments[0]}/logs?type=build` }),
  'GET /v1/apps/:slug/logs': (f) => ({ path: `/v1/apps/${f.slug}/logs?type=build` }),
  'PATCH /apps/:slug/resources': (f) => ({ path: `/apps/${f.slug}/resources`, body: { memory_mb: 128 } }),
  'POST /v1/apps/:slug/volume': (f) => ({ path: `/v1/apps/${f.slug}/volume`, body: { size_mb: 200 } }),
  'GET /v1/apps/:slug/volume': (f) => ({ path: `/v1/apps/${f.slug}/volume` }),
  'DELETE /v1/apps/:slug/volume': (f) => ({ path: `/v1/apps/${f.slug}/volume` }),
  'POST /v1/apps/:slug/previews': (f) => ({ path: `/v1/apps/${f.slug}/previews`, body: { pr_number: f.pr } }),
  'GET /v1/apps/:slug/previews': (f) => ({ path: `/v1/apps/${f.slug}/previews` }),
  'DELETE /v1/apps/:slug/previews/:pr': (f) => ({ path: `/v1/apps/${f.slug}/previews/${f.pr}` }),
  'POST /billing/energy-pack/checkout': () => ({ unscoped: 'buys energy for the caller’s own account; names no egg' }),
  'POST /v1/apps/:slug/crons': (f) => ({ path: `/v1/apps/${f.slug}/crons`, body: { schedule: '*/5 * * * *', command: 'echo x' } }),
  'GET /v1/apps/:slug/crons': (f) => ({ path: `/v1/apps/${f.slug}/crons` }),
  'DELETE /v1/apps/:slug/crons/:id': (f) => ({ path: `/v1/apps/${f.slug}/crons/${f.cronId}` }),
  'GET /v1/apps/:slug/crons/:id/runs': (f) => ({ path: `/v1/apps/${f.slug}/crons/${f.cronId}/runs` }),
  'POST /v1/apps/:slug/crons/:id/runs/:run/cancel': (f) => ({ path: `/v1/apps/${f.slug}/crons/${f.busyCronId}/runs/${f.busyRunId}/cancel` }),
  'POST /v1/apps/:slug/webhooks': (f) => ({ path: `/v1/apps/${f.slug}/webhooks`, body: { url: 'https://hooks.invalid/authz', events: ['deploy'] } }),
  'GET /v1/apps/:slug/webhooks': (f) => ({ path: `/v1/apps/${f.slug}/webhooks` }),
  'DELETE /v1/apps/:slug/webhooks/:id': (f) => ({ path: `/v1/apps/${f.slug}/webhooks/${f.webhookId}` }),
  'POST /v1/apps/:slug/webhooks/:id/test': (f) => ({ path: `/v1/apps/${f.slug}/webhooks/${f.webhookId}/test` }),
  'POST /v1/apps/:slug/log-drains': (f) => ({ path: `/v1/apps/${f.slug}/log-drains`, body: { url: 'https://hooks.invalid/authz-logs' } }),
  'GET /v1/apps/:slug/log-drains': (f) => ({ path: `/v1/apps/${f.slug}/log-drains` }),
  'DELETE /v1/apps/:slug/log-drains/:id': (f) => ({ path: `/v1/apps/${f.slug}/log-drains/${f.logDrainId}` }),
};

/** Per binary upload (src/rest/uploads.ts): the egg it names and a body to send. */
const uploadFixtures: Record<string, (f: Furnished) => { slug: string; body: Buffer }> = {
  'POST /v1/apps/:slug/sources': (f) => ({ slug: f.slug, body: helloEgg('authz matrix') }),
};

/** Arguments of each scoped root field, pointing at the furnished egg's things. */
const gqlFixtures: Record<string, (f: Furnished) => Record<string, unknown>> = {
  'Query.app': (f) => ({ slug: f.slug }),
  'Query.cron': (f) => ({ app: f.slug, id: f.cronId }),
  'Query.cronRuns': (f) => ({ app: f.slug, id: f.cronId }),
  'Query.crons': (f) => ({ app: f.slug }),
  'Query.deployment': (f) => ({ id: f.deployments[0] }),
  'Query.deployments': (f) => ({ project: f.slug }),
  'Query.previews': (f) => ({ app: f.slug }),
  'Query.volume': (f) => ({ app: f.slug }),
  'Query.webhooks': (f) => ({ app: f.slug }),
  'Query.logDrains': (f) => ({ app: f.slug }),
  'Query.sources': (f) => ({ app: f.slug }),
  'Query.source': (f) => ({ app: f.slug, id: f.sourceId }),
  'Mutation.addCollaborator': (f) => ({ app: f.slug, email: f.spare.email }),
  'Mutation.removeCollaborator': (f) => ({ app: f.slug, email: f.collaborator.email }),
  'Mutation.createCron': (f) => ({ app: f.slug, input: { schedule: '*/5 * * * *', command: 'echo x' } }),
  'Mutation.deleteCron': (f) => ({ app: f.slug, id: f.cronId }),
  'Mutation.runCronNow': (f) => ({ app: f.slug, id: f.cronId }),
  'Mutation.cancelCronRun': (f) => ({ app: f.slug, id: f.busyCronId, run: f.busyRunId }),
  'Mutation.setCronEnabled': (f) => ({ app: f.slug, id: f.cronId, enabled: false }),
  'Mutation.deploy': (f) => ({ input: { project: f.slug, env: { A: '1' } } }),
  'Mutation.redeploy': (f) => ({ id: f.deployments[0] }),
  'Mutation.rollback': (f) => ({ app: f.slug, to: f.deployments[0] }),
  'Mutation.restartApp': (f) => ({ slug: f.slug }),
  'Mutation.deleteDeployment': (f) => ({ id: f.deployments[1] }),
  'Mutation.updateResources': (f) => ({ app: f.slug, input: { memoryMb: 128 } }),
  'Mutation.provisionVolume': (f) => ({ app: f.slug, input: { sizeMb: 200 } }),
  'Mutation.deleteVolume': (f) => ({ app: f.slug }),
  'Mutation.upsertPreview': (f) => ({ app: f.slug, input: { prNumber: f.pr } }),
  'Mutation.deletePreview': (f) => ({ app: f.slug, prNumber: f.pr }),
  'Mutation.createWebhook': (f) => ({ app: f.slug, input: { url: 'https://hooks.invalid/authz-gql', events: ['deploy'] } }),
  'Mutation.deleteWebhook': (f) => ({ app: f.slug, id: f.webhookId }),
  'Mutation.setWebhookActive': (f) => ({ app: f.slug, id: f.webhookId, active: false }),
  'Mutation.testWebhook': (f) => ({ app: f.slug, id: f.webhookId }),
  'Mutation.redeliverWebhookDelivery': (f) => ({ app: f.slug, id: f.deliveryId }),
  'Mutation.createLogDrain': (f) => ({ app: f.slug, input: { url: 'https://hooks.invalid/authz-logs-gql' } }),
  'Mutation.deleteLogDrain': (f) => ({ app: f.slug, id: f.logDrainId }),
  'Mutation.revokeApiToken': (f) => ({ id: f.spareTokenId }),
  'Subscription.deploymentStatus': (f) => ({ id: f.deployments[0] }),
  'Subscription.deploymentLogs': (f) => ({ id: f.deployments[0] }),
  'Subscription.deploymentLogBatches': (f) => ({ id: f.deployments[0] }),
  'Subscription.appLogs': (f) => ({ app: f.slug }),
};

/** CONTRACT.md: collaborators may do everything the owner may, except PATCH resources and managing collaborators. */
const OWNER_ONLY_ROUTES = ['PATCH /apps/:slug/resources'];
const OWNER_ONLY_FIELDS = ['Mutation.updateResources', 'Mutation.addCollaborator', 'Mutation.removeCollaborator'];

const SCOPE_ARGS = new Set(['id', 'app', 'slug', 'project', 'to']);

function isScoped(field: GraphQLField<unknown, unknown>): boolean {
  return field.args.some((a) => {
    if (SCOPE_ARGS.has(a.name)) return true;
    const named = getNamedType(a.type);
    return isInputObjectType(named) && 'project' in named.getFields();
  });
}

const schema = buildGatewaySchema();
const roots: Array<['query' | 'mutation' | 'subscription', GraphQLObjectType | null | undefined]> = [
  ['query', schema.getQueryType()],
  ['mutation', schema.getMutationType()],
  ['subscription', schema.getSubscriptionType()],
];
const scopedFields = roots.flatMap(([kind, type]) =>
  Object.values(type?.getFields() ?? {})
    .filter(isScoped)
    .map((field) => ({ key: `${type!.name}.${field.name}`, kind, field })),
);

/** A one-field operation for `field` with `args` as variables, selecting only `__typename`. */
function operationFor(kind: string, field: GraphQLField<unknown, unknown>, args: Record<string, unknown>): string {
  const used = field.args.filter((a) => a.name in args);
  const unknown = Object.keys(args).filter((k) => !field.args.some((a) => a.name === k));
  if (unknown.length) throw new Error(`fixture of ${field.name} names unknown arguments: ${unknown.join(', ')}`);
  const defs = used.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
  const call = used.map((a) => `${a.name}: $${a.name}`).join(', ');
  const selection = isCompositeType(getNamedType(field.type)) ? ' { __typename }' : '';
  return `${kind} Authz${defs ? `(${defs})` : ''} { ${field.name}${call ? `(${call})` : ''}${selection} }`;
}

interface Outcome {
  status: number;
  code: string | undefined;
  data: unknown;
}

describe('authorization matrix', () => {
  let t: TestGateway;

  beforeAll(async () => {
    // The outbox stays pending (no worker): nothing in the background changes the database.
    // Commands last an hour: the furnished cron run is still running when it is cancelled.
    t = await startGateway({
      HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid',
      HATCHERY_WEBHOOK_WORKER: 'off',
      HATCHERY_LOG_DRAIN_WORKER: 'off',
      HATCHERY_SIM_RUNTIME_LOG_MS: '3600000',
      HATCHERY_SIM_COMMAND_MS: '3600000',
    });
  });
  afterAll(() => t.stop());

  const key = (r: Route) => `${r.method} ${r.path}`;

  it('has a REST fixture for every route and every upload and a GraphQL fixture for every scoped root field', () => {
    expect(Object.keys(restFixtures).sort()).toEqual(routes.map(key).sort());
    expect(Object.keys(uploadFixtures).sort()).toEqual(uploads.map((u) => `${u.method} ${u.path}`).sort());
    expect(Object.keys(gqlFixtures).sort()).toEqual(scopedFields.map((f) => f.key).sort());
    // The walk found what it should: it is not vacuous.
    expect(scopedFields.length).toBeGreaterThanOrEqual(30);
    expect(routes.filter((r) => r.ownerOnly).map(key)).toEqual(OWNER_ONLY_ROUTES);
  });

  it('routes marked unscoped really name no egg', () => {
    for (const route of routes) {
      const dummy = { slug: 'egg', deployments: ['dep_1', 'dep_2', 'dep_3'], cronId: 'cron_1', webhookId: 'wh_1', pr: 1 } as unknown as Furnished;
      const fx = restFixtures[key(route)](dummy);
      if (!fx || !('unscoped' in fx)) continue;
      expect(route.path).not.toMatch(/:/);
      expect(Object.keys(route.body ?? {})).not.toContain('project');
      expect(route.query ?? []).not.toContain('project');
    }
  });

  async function restAs(user: TestUser, route: Route, fx: { path: string; body?: Record<string, unknown> }) {
    return rest(t.url, user.token, route.method, fx.path, fx.body);
  }

  it('REST: a stranger gets 404 on every route naming an egg, a collaborator 403 where only the owner may; nothing changes; the owner succeeds', async () => {
    const f = await furnish(t);
    const scoped = routes
      .map((route) => ({ route, fx: restFixtures[key(route)](f) }))
      .filter((x): x is { route: Route; fx: { path: string; body?: Record<string, unknown> } } => !('unscoped' in x.fx));
    expect(scoped.length).toBe(routes.length - 1);

    const before = await snapshot(t.gateway.ds);
    const got: Record<string, [number, string]> = {};
    const want: Record<string, [number, string]> = {};
    for (const { route, fx } of scoped) {
      const res = await restAs(f.stranger, route, fx);
      got[`stranger ${key(route)}`] = [res.status, res.body?.code];
      want[`stranger ${key(route)}`] = [404, 'not_found'];
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      // Never reveals what it is: the answer is the one an unknown slug or id gets.
      expect(JSON.stringify(res.body)).not.toMatch(/owner|collaborat|forbidden/i);
      if (route.ownerOnly) {
        const c = await restAs(f.collaborator, route, fx);
        got[`collaborator ${key(route)}`] = [c.status, c.body?.code];
        want[`collaborator ${key(route)}`] = [403, 'forbidden'];
      }
    }
    expect(got).toEqual(want);
    expect(await snapshot(t.gateway.ds)).toEqual(before);

    // The same requests from the owner: reads first, deletes last.
    const order = { GET: 0, POST: 1, PATCH: 2, DELETE: 3 } as const;
    const owned: Record<string, number | string> = {};
    const expected: Record<string, number | string> = {};
    for (const { route, fx } of [...scoped].sort((a, b) => order[a.route.method] - order[b.route.method])) {
      const res = await restAs(f.owner, route, fx);
      const ok = typeof route.status === 'number' ? [route.status] : Object.keys(route.statuses ?? {}).map(Number);
      owned[key(route)] = ok.includes(res.status) ? 'ok' : `${res.status} ${JSON.stringify(res.body)}`;
      expected[key(route)] = 'ok';
    }
    expect(owned).toEqual(expected);
  });

  it('REST uploads: a stranger gets 404 and nothing changes; a collaborator and the owner succeed', async () => {
    const f = await furnish(t);
    for (const u of uploads) {
      const fx = uploadFixtures[`${u.method} ${u.path}`](f);
      const before = await snapshot(t.gateway.ds);
      const s = await upload(t, f.stranger.token, fx.slug, fx.body);
      expect([s.status, s.body.code]).toEqual([404, 'not_found']);
      expect(JSON.stringify(s.body)).not.toMatch(/owner|collaborat|forbidden/i);
      expect(await snapshot(t.gateway.ds)).toEqual(before);
      expect((await upload(t, f.collaborator.token, fx.slug, fx.body)).status).toBe(201);
      expect((await upload(t, f.owner.token, fx.slug, fx.body)).status).toBe(200);
    }
  });

  async function gqlAs(user: TestUser, kind: string, field: GraphQLField<unknown, unknown>, args: Record<string, unknown>): Promise<Outcome> {
    const query = operationFor(kind, field, args);
    if (kind === 'subscription') {
      const client = wsClient(t.url, user.token);
      try {
        const stream = collect(client, parse(query) as TypedDocumentNode<Record<string, unknown>, Record<string, unknown>>, args);
        // Either the first event, or the error that ends the stream.
        const first = await Promise.race([
          stream.waitFor(1).then((items) => ({ items })),
          stream.done.then(
            () => ({ items: stream.items }),
            (e: unknown) => ({ error: e }),
          ),
        ]);
        stream.unsubscribe();
        // An access error ends the stream: as graphql-ws's `error` message, or as a `next` with errors.
        const errors = ('error' in first ? first.error : stream.errors) as Array<{ extensions?: { code?: string } }>;
        if (errors.length) return { status: 101, code: errors[0]?.extensions?.code, data: null };
        return { status: 101, code: undefined, data: stream.items[0] ?? null };
      } finally {
        await client.dispose();
      }
    }
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: JSON.stringify({ query, variables: args }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown> | null; errors?: Array<{ extensions?: { code?: string } }> };
    return { status: res.status, code: body.errors?.[0]?.extensions?.code, data: body.data?.[field.name] ?? null };
  }

  it('GraphQL: a stranger gets NOT_FOUND on every field naming an egg, a collaborator FORBIDDEN where only the owner may; nothing changes; the owner succeeds', async () => {
    const f = await furnish(t);
    const before = await snapshot(t.gateway.ds);
    const got: Record<string, unknown> = {};
    const want: Record<string, unknown> = {};
    for (const { key: k, kind, field } of scopedFields) {
      const args = gqlFixtures[k](f);
      const s = await gqlAs(f.stranger, kind, field, args);
      got[`stranger ${k}`] = { code: s.code, data: s.data };
      want[`stranger ${k}`] = { code: 'NOT_FOUND', data: null };
      if (OWNER_ONLY_FIELDS.includes(k)) {
        const c = await gqlAs(f.collaborator, kind, field, args);
        got[`collaborator ${k}`] = { code: c.code, data: c.data };
        want[`collaborator ${k}`] = { code: 'FORBIDDEN', data: null };
      }
    }
    expect(got).toEqual(want);
    expect(await snapshot(t.gateway.ds)).toEqual(before);

    // The owner, with the same arguments: queries and streams, then mutations, destructive ones last.
    const rank = (k: string) => (k.startsWith('Mutation.') ? (/^Mutation\.(delete|remove|revoke)/.test(k) ? 2 : 1) : 0);
    const owned: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const { key: k, kind, field } of [...scopedFields].sort((a, b) => rank(a.key) - rank(b.key))) {
      const o = await gqlAs(f.owner, kind, field, gqlFixtures[k](f));
      owned[k] = { code: o.code, answered: o.data !== null };
      // deleteVolume without `now` answers the volume; every other field answers something too.
      expected[k] = { code: undefined, answered: true };
    }
    expect(owned).toEqual(expected);
  });
});
