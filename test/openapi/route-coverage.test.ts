import { routes } from '../../src/rest/routes';
import { uploads } from '../../src/rest/uploads';
import { startGateway, TestGateway } from '../support/gateway';

/**
 * Every route the gateway registers with Fastify, recorded by an `onRoute` hook added to each
 * Fastify instance as it is created (the real Fastify, only observed). The OpenAPI document is
 * generated from the REST route table and the binary uploads (src/rest/uploads.ts: bodies a
 * GraphQL operation cannot carry), so a REST endpoint registered outside those would be
 * undocumented, and the suite-wide response check (test/support/openapi-check.ts) would skip it.
 */
const mockRegistered: Array<{ method: string; url: string }> = [];
jest.mock('fastify', () => {
  const actual = jest.requireActual('fastify');
  const observed = (...args: unknown[]) => {
    const app = actual(...args);
    app.addHook('onRoute', (route: { method: string | string[]; url: string }) => {
      for (const method of ([] as string[]).concat(route.method)) mockRegistered.push({ method, url: route.url });
    });
    return app;
  };
  return Object.assign(observed, actual, { default: observed, fastify: observed });
});

/** Routes that are not part of the REST API, each with the reason it is not in the route table. */
const NOT_REST: Record<string, string> = {
  'GET /graphql': 'GraphQL over HTTP (GET), and the explorer page for browsers',
  'POST /graphql': 'GraphQL over HTTP',
  'OPTIONS /graphql': 'the GraphQL server’s own route (preflight)',
  'GET /graphql/explorer/assets/:hash/:name': 'the explorer’s static assets',
  'GET /openapi.json': 'the OpenAPI document itself',
  'GET /docs': 'the API reference page rendered from it',
  'GET /metrics': 'Prometheus scrape endpoint',
  'GET /healthz': 'liveness probe (the Dockerfile HEALTHCHECK)',
  'GET /readyz': 'readiness probe',
  'POST /billing/webhooks/stripe': 'payment provider webhook, authenticated by its signature, not a bearer token',
  'GET /billing/sandbox/checkout/:id': 'sandbox hosted checkout page (HTML)',
  'POST /billing/sandbox/checkout/:id/pay': 'sandbox checkout form post (HTML)',
  'POST /billing/sandbox/checkout/:id/cancel': 'sandbox checkout form post (HTML)',
};

const key = (method: string, url: string) => `${method} ${url}`;

describe('the REST route table and the uploads cover every REST route the server registers', () => {
  let t: TestGateway;
  let registered: string[];

  beforeAll(async () => {
    t = await startGateway();
    const all = mockRegistered.map((r) => key(r.method, r.url));
    // Fastify adds a HEAD route for every GET by itself (exposeHeadRoutes).
    registered = all.filter((k) => !(k.startsWith('HEAD ') && all.includes(`GET ${k.slice('HEAD '.length)}`)));
  });
  afterAll(() => t.stop());

  it('records the routes of the running gateway (the observation works)', async () => {
    expect(registered).toContain('GET /healthz');
    expect(registered).toContain(key(routes[0].method, routes[0].path));
    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(200);
  });

  it('every registered route is a row of the route table, an upload or on the explicit non-API list, once', () => {
    expect(registered.length).toBe(new Set(registered).size);
    const table = [...routes, ...uploads].map((r) => key(r.method, r.path));
    expect(table.length).toBe(new Set(table).size);
    const rest = registered.filter((k) => !(k in NOT_REST));
    expect(rest.sort()).toEqual([...table].sort());
  });

  it('the non-API list names only routes that exist, none of them in the route table or the OpenAPI document', async () => {
    for (const k of Object.keys(NOT_REST)) expect([k, registered.includes(k)]).toEqual([k, true]);
    const table = new Set([...routes, ...uploads].map((r) => key(r.method, r.path)));
    for (const k of Object.keys(NOT_REST)) expect([k, table.has(k)]).toEqual([k, false]);
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, methods]) =>
      Object.keys(methods).map((m) => key(m.toUpperCase(), p.replace(/\{(\w+)\}/g, ':$1'))),
    );
    for (const k of Object.keys(NOT_REST)) expect([k, documented.includes(k)]).toEqual([k, false]);
    expect(documented.sort()).toEqual([...table].sort());
  });
});
