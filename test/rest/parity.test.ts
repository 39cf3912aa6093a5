import { presentResponse, routes, Route } from '../../src/rest/routes';
import { UploadRoute, uploads } from '../../src/rest/uploads';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { RunCronNowDocument } from '../../src/client/generated';
import { helloEgg, upload } from '../sources/helpers';

/**
 * Walks the REST route table: every row has a sample request here (a new route without one
 * fails), and its REST answer equals its GraphQL operation's answer run through the row's
 * presenter (`presentResponse`). The binary uploads (src/rest/uploads.ts) have no GraphQL twin
 * (GraphQL has no binary upload): each one's answer must equal what its reader query answers for
 * the record it stored, presented the same way.
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
  let sourceId: string;
  const samples: Record<string, () => Sample | Promise<Sample>> = {
    'POST /deploy': () => ({
      path: '/deploy',
      body: { project: slug, env: { A: '1' }, source: sourceId },
      variables: { input: { project: slug, env: { A: '1' }, source: sourceId } },
      compare: (r, g) => {
        expect(Object.keys(r).sort()).toEqual(Object.keys(g).sort());
        expect({ ...r, id: 0, url: 0, created_at: 0, updated_at: 0 }).toEqual({ ...g, id: 0, url: 0, created_at: 0, updated_at: 0 });
        expect({ source: r.source, image: r.image }).toEqual({ source: sourceId, image: null });
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
    'GET /v1/apps/:slug/logs': () => ({ path: `/v1/apps/${slug}/logs?type=build&q=build`, variables: { slug, type: 'BUILD', q: 'build' } }),
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
    'POST /v1/apps/:slug/crons/:id/runs/:run/cancel': async () => {
      // Two runs in progress (commands last an hour here): REST cancels one, its twin the other.
      const started = async () => {
        const c = await rest(t.url, user.token, 'POST', `/v1/apps/${slug}/crons`, { schedule: '0 * * * *', command: 'sleep on it' });
        const run = (await gqlOk(t.url, user.token, RunCronNowDocument, { app: slug, id: c.body.id })).runCronNow;
        return { cron: c.body.id as string, run: run.id };
      };
      const [a, b] = [await started(), await started()];
      return {
        path: `/v1/apps/${slug}/crons/${a.cron}/runs/${a.run}/cancel`,
        variables: { slug, id: b.cron, run: b.run },
        compare: (r, g) => {
          expect(Object.keys(r).sort()).toEqual(['exit_code', 'finished_at', 'id', 'scheduled_at', 'started_at', 'status']);
          expect({ status: r.status, exit_code: r.exit_code }).toEqual({ status: 'failed', exit_code: null });
          expect({ status: g.status, exit_code: g.exit_code }).toEqual({ status: 'failed', exit_code: null });
          expect([r.id, g.id]).toEqual([a.run, b.run]);
        },
      };
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
    'POST /v1/apps/:slug/log-drains': async () => {
      const other = (await makeApp(t.url, user)).slug;
      return {
        path: `/v1/apps/${slug}/log-drains`,
        body: { url: 'https://hooks.invalid/logs', format: 'ndjson' },
        variables: { slug: other, input: { url: 'https://hooks.invalid/logs', format: 'NDJSON' } },
        compare: (r, g) => {
          expect({ ...r, id: 0, secret: 0, created_at: 0 }).toEqual({ ...g, id: 0, secret: 0, created_at: 0 });
          expect([r.secret, g.secret]).toEqual([expect.stringMatching(/^whsec_/), expect.stringMatching(/^whsec_/)]);
        },
      };
    },
    'GET /v1/apps/:slug/log-drains': () => ({ path: `/v1/apps/${slug}/log-drains`, variables: { slug } }),
    'DELETE /v1/apps/:slug/log-drains/:id': async () => {
      const other = (await makeApp(t.url, user)).slug;
      const body = { url: 'syslog+tls://hooks.invalid:6514' };
      const a = await rest(t.url, user.token, 'POST', `/v1/apps/${other}/log-drains`, body);
      const b = await rest(t.url, user.token, 'POST', `/v1/apps/${other}/log-drains`, body);
      return {
        path: `/v1/apps/${other}/log-drains/${a.body.id}`,
        variables: { slug: other, id: b.body.id },
        compare: (r, g) => expect([r, g]).toEqual([undefined, undefined]),
      };
    },
    'DELETE /deployments/:id': async () => {
      const a = await deploy(t.url, user, slug);
      const b = await deploy(t.url, user, slug);
      return { path: `/deployments/${a.id}`, variables: { id: b.id }, compare: (r, g) => expect([r, g]).toEqual([undefined, undefined]) };
    },
  };

  beforeAll(async () => {
    // Cron commands last an hour: the cancel sample cancels runs still in progress.
    t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid', HATCHERY_SIM_COMMAND_MS: '3600000' });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
    sourceId = (await upload(t, user.token, slug, helloEgg('parity'))).body.id;
    liveId = (await deploy(t.url, user, slug)).id;
    expect(await settle(t.url, user, liveId)).toBe('LIVE');
  });
  afterAll(() => t.stop());

  /** Per upload: a request to send, whose stored record the reader query then reads. */
  const uploadSamples: Record<string, () => { path: Record<string, string>; send(): Promise<{ status: number; body: any }> }> = {
    'POST /v1/apps/:slug/sources': () => ({ path: { slug }, send: () => upload(t, user.token, slug, helloEgg('parity upload')) }),
  };

  it('has a sample for every route and every upload', () => {
    expect(routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(Object.keys(samples).sort());
    expect(uploads.map((u) => `${u.method} ${u.path}`).sort()).toEqual(Object.keys(uploadSamples).sort());
  });

  it.each(uploads.map((u) => [`${u.method} ${u.path}`, u] as [string, UploadRoute]))(
    '%s (no GraphQL twin) answers what its reader query reads of the stored record, also when it was stored already',
    async (key, route) => {
      const sample = uploadSamples[key]();
      for (const expected of [201, 200]) {
        const viaRest = await sample.send();
        expect(viaRest.status).toBe(expected);
        const res = await fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
          body: JSON.stringify({ query: route.reader, variables: route.readerVariables(sample.path, viaRest.body) }),
        });
        const read = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
        expect(read.errors).toBeUndefined();
        const [record] = Object.values(read.data!);
        expect(viaRest.body).toEqual(JSON.parse(JSON.stringify(route.response.present(record))));
      }
    },
  );

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
