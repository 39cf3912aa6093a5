import { presentResponse, routes, Route } from '../../src/rest/routes';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { rest, startGateway, TestGateway } from '../support/gateway';

/**
 * Walks the REST route table: every row has a sample request here (a new route without one
 * fails), and its REST answer equals its GraphQL operation's answer run through the row's
 * presenter (`presentResponse`).
 */
interface Sample {
  path: string;
  body?: Record<string, unknown>;
  variables: Record<string, unknown>;
  /** For writes, which fields must agree (ids and times differ between two writes). */
  compare?: (restBody: any, twinBody: any) => void;
}

describe('REST ↔ GraphQL parity over the route table', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;
  let liveId: string;
  const samples: Record<string, () => Sample | Promise<Sample>> = {
    'POST /deploy': () => ({
      path: '/deploy',
      body: { project: slug, env: { A: '1' } },
      variables: { input: { project: slug, env: { A: '1' } } },
      compare: (r, g) => {
        expect(Object.keys(r).sort()).toEqual(Object.keys(g).sort());
        expect({ ...r, id: 0, url: 0, created_at: 0, updated_at: 0 }).toEqual({ ...g, id: 0, url: 0, created_at: 0, updated_at: 0 });
      },
    }),
    'GET /deployments': async () => {
      // The deploy sample's build must not finish between the REST read and its twin.
      const res = await fetch(`${t.url}/deployments?project=${slug}&limit=100`, { headers: { authorization: `Bearer ${user.token}` } });
      for (const d of ((await res.json()) as { data: Array<{ id: string }> }).data) await settle(t.url, user, d.id);
      return { path: `/deployments?project=${slug}&limit=5`, variables: { project: slug, limit: 5 } };
    },
    'GET /deployments/:id': () => ({ path: `/deployments/${liveId}`, variables: { id: liveId } }),
    'GET /deployments/:id/logs': () => ({ path: `/deployments/${liveId}/logs?type=build`, variables: { id: liveId, type: 'BUILD' } }),
    'PATCH /apps/:slug/resources': () => ({
      path: `/apps/${slug}/resources`,
      body: { memory_mb: 384 },
      variables: { slug, input: { memoryMb: 384 } },
    }),
    'POST /v1/apps/:slug/volume': async () => {
      const other = (await makeApp(t.url, user)).slug;
      return {
        path: `/v1/apps/${slug}/volume`,
        body: { size_mb: 100 },
        variables: { slug: other, input: { sizeMb: 100 } },
        compare: (r, g) => expect({ ...r, created_at: 0 }).toEqual({ ...g, created_at: 0 }),
      };
    },
    'GET /v1/apps/:slug/volume': () => ({ path: `/v1/apps/${slug}/volume`, variables: { slug } }),
    'DELETE /v1/apps/:slug/volume': async () => {
      const other = (await makeApp(t.url, user)).slug;
      await rest(t.url, user.token, 'POST', `/v1/apps/${other}/volume`, { size_mb: 100 });
      return {
        path: `/v1/apps/${slug}/volume`,
        variables: { slug: other },
        compare: (r, g) => expect({ ...r, created_at: 0, erase_at: 0 }).toEqual({ ...g, created_at: 0, erase_at: 0 }),
      };
    },
    'POST /v1/apps/:slug/previews': async () => {
      const other = (await makeApp(t.url, user)).slug;
      return {
        path: `/v1/apps/${slug}/previews`,
        body: { pr_number: 7 },
        variables: { slug: other, input: { prNumber: 7 } },
        compare: (r, g) => {
          expect({ ...r, slug: 0, url: 0, created_at: 0, expires_at: 0 }).toEqual({ ...g, slug: 0, url: 0, created_at: 0, expires_at: 0 });
          expect(r.slug).toBe(`${slug}-pr-7`);
          expect(g.slug).toBe(`${other}-pr-7`);
        },
      };
    },
    'GET /v1/apps/:slug/previews': () => ({
      path: `/v1/apps/${slug}/previews`,
      variables: { slug },
      // A preview build may finish between the two reads; everything but its status must agree.
      compare: (r, g) => {
        const strip = (b: { data: Array<Record<string, unknown>> }) => ({ ...b, data: b.data.map(({ status: _s, ...p }) => p) });
        expect(strip(r)).toEqual(strip(g));
      },
    }),
    'DELETE /v1/apps/:slug/previews/:pr': async () => {
      await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/previews`, { pr_number: 8 });
      return { path: `/v1/apps/${slug}/previews/7`, variables: { slug, pr: 8 }, compare: (r, g) => expect([r, g]).toEqual([undefined, undefined]) };
    },
    'POST /billing/energy-pack/checkout': () => ({
      path: '/billing/energy-pack/checkout',
      variables: {},
      compare: (r, g) => {
        expect(Object.keys(r).sort()).toEqual(['checkout_url', 'expires_at', 'session_id']);
        expect(Object.keys(g).sort()).toEqual(Object.keys(r).sort());
        expect(r.session_id).toMatch(/^chk_/);
        expect(r.checkout_url).toBe(`${t.url}/billing/sandbox/checkout/${r.session_id}`);
      },
    }),
    'POST /v1/apps/:slug/crons': async () => {
      const other = (await makeApp(t.url, user)).slug;
      return {
        path: `/v1/apps/${slug}/crons`,
        body: { schedule: '*/5 * * * *', command: 'echo hi' },
        variables: { slug: other, input: { schedule: '*/5 * * * *', command: 'echo hi' } },
        compare: (r, g) => {
          expect(Object.keys(r).sort()).toEqual(['command', 'created_at', 'enabled', 'id', 'next_run_at', 'schedule']);
          expect({ ...r, id: 0, created_at: 0 }).toEqual({ ...g, id: 0, created_at: 0 });
        },
      };
    },
    'GET /v1/apps/:slug/crons': () => ({ path: `/v1/apps/${slug}/crons?limit=5`, variables: { slug, limit: 5 } }),
    'DELETE /v1/apps/:slug/crons/:id': async () => {
      const a = await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 * * * *', command: 'a' });
      const b = await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 * * * *', command: 'b' });
      return {
        path: `/v1/apps/${slug}/crons/${a.body.id}`,
        variables: { slug, id: b.body.id },
        compare: (r, g) => expect([r, g]).toEqual([undefined, undefined]),
      };
    },
    'GET /v1/apps/:slug/crons/:id/runs': async () => {
      const c = await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 * * * *', command: 'exit 3' });
      return { path: `/v1/apps/${slug}/crons/${c.body.id}/runs`, variables: { slug, id: c.body.id } };
    },
    // Receivers on an allow-listed name that does not resolve: no delivery leaves the machine.
    'POST /v1/apps/:slug/webhooks': async () => {
      const other = (await makeApp(t.url, user)).slug;
      const input = { url: 'https://hooks.invalid/parity', events: ['deploy'] };
      return {
        path: `/v1/apps/${slug}/webhooks`,
        body: input,
        variables: { slug: other, input },
        compare: (r, g) => {
          expect(Object.keys(r).sort()).toEqual(['active', 'created_at', 'events', 'id', 'secret', 'url']);
          expect({ ...r, id: 0, secret: 0, created_at: 0 }).toEqual({ ...g, id: 0, secret: 0, created_at: 0 });
          expect(r.secret).toMatch(/^whsec_/);
        },
      };
    },
    'GET /v1/apps/:slug/webhooks': () => ({ path: `/v1/apps/${slug}/webhooks`, variables: { slug } }),
    'DELETE /v1/apps/:slug/webhooks/:id': async () => {
      const other = (await makeApp(t.url, user)).slug;
      const body = { url: 'https://hooks.invalid/x', events: ['deploy'] };
      const a = await rest(t.url, user.token, 'POST', `/v1/apps/${other}/webhooks`, body);
      const b = await rest(t.url, user.token, 'POST', `/v1/apps/${other}/webhooks`, body);
      return {
        path: `/v1/apps/${other}/webhooks/${a.body.id}`,
        variables: { slug: other, id: b.body.id },
        compare: (r, g) => expect([r, g]).toEqual([undefined, undefined]),
      };
    },
    'POST /v1/apps/:slug/webhooks/:id/test': async () => {
      const list = await rest(t.url, user.token, 'GET', `/v1/apps/${slug}/webhooks`);
      const id = list.body.data[0].id;
      return {
        path: `/v1/apps/${slug}/webhooks/${id}/test`,
        variables: { slug, id },
        compare: (r, g) => {
          expect({ ...r, delivery_id: 0, duration_ms: 0 }).toEqual({ ...g, delivery_id: 0, duration_ms: 0 });
          expect(r.status).toBe('failed');
        },
      };
    },
    'DELETE /deployments/:id': async () => {
      const a = await deploy(t.url, user, slug);
      const b = await deploy(t.url, user, slug);
      return { path: `/deployments/${a.id}`, variables: { id: b.id }, compare: (r, g) => expect([r, g]).toEqual([undefined, undefined]) };
    },
  };

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid' });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
    liveId = (await deploy(t.url, user, slug)).id;
    expect(await settle(t.url, user, liveId)).toBe('LIVE');
  });
  afterAll(() => t.stop());

  it('has a sample for every route', () => {
    expect(routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(Object.keys(samples).sort());
  });

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as [string, Route]))('%s agrees with its GraphQL twin', async (key, route) => {
    const sample = await samples[key]();
    const viaRest = await rest(t.url, user.token, route.method, sample.path, sample.body);

    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: JSON.stringify({ query: route.operation, variables: sample.variables }),
    });
    const twin = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
    expect(twin.errors).toBeUndefined();
    const expectedStatus = typeof route.status === 'function' ? route.status(twin.data!) : route.status;
    expect(viaRest.status).toBe(expectedStatus);
    const twinBody = route.response ? JSON.parse(JSON.stringify(presentResponse(route, twin.data!))) : undefined;
    if (sample.compare) sample.compare(viaRest.body, twinBody);
    else expect(viaRest.body).toEqual(twinBody);
  });
});
