import {
  CreateAppDocument,
  DeleteDeploymentDocument,
  DeploymentDocument,
  DeploymentLogStreamDocument,
  DeploymentStatusDocument,
  ViewerDocument,
} from '../../src/client/generated';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser, unique } from '../support/factories';
import { createWebhook, Receiver, testWebhook } from '../webhooks/helpers';
import { Scrape, scrape, scrapeUntil } from './prom';

const HTTP = 'hatchery_http_requests_total';
const HTTP_SECONDS = 'hatchery_http_request_duration_seconds';
const OPS = 'hatchery_graphql_operations_total';
const OP_SECONDS = 'hatchery_graphql_operation_duration_seconds';
const ACTIVE = 'hatchery_graphql_subscriptions_active';
const LOG_LINES = 'hatchery_log_lines_total';
const WEBHOOKS = 'hatchery_webhook_deliveries_total';

/** What a counter (or a histogram's _count) gained between two scrapes. */
const gained = (before: Scrape, after: Scrape, name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);

describe('GET /metrics', () => {
  let receiver: Receiver;
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startGateway({
      HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      HATCHERY_WEBHOOK_CA_FILE: receiver.certFile,
      HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m,20m',
    });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(async () => {
    await t.stop();
    await receiver.stop();
  });

  /** A scrape once no subscription is left (earlier connections close on the server's own time). */
  const idle = () => scrapeUntil(t.url, (s) => s.value(ACTIVE) === 0, 'no active subscription');

  it('answers without a token in the Prometheus text format, with types, help and process metrics', async () => {
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4; charset=utf-8$/);
    const s = new Scrape(await res.text());
    expect(s.types).toMatchObject({
      [HTTP]: 'counter',
      [HTTP_SECONDS]: 'histogram',
      [OPS]: 'counter',
      [OP_SECONDS]: 'histogram',
      [ACTIVE]: 'gauge',
      [LOG_LINES]: 'counter',
      [WEBHOOKS]: 'counter',
      hatchery_job_failures_total: 'counter',
      hatchery_job_queue_depth: 'gauge',
    });
    expect(s.text).toMatch(/^# HELP hatchery_http_requests_total \S/m);
    expect(s.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(s.value(ACTIVE)).toBe(0);
    // Counters a dashboard rates exist from the start, at 0.
    for (const type of ['build', 'runtime']) expect(s.find(LOG_LINES, { type })).toEqual([{ name: LOG_LINES, labels: { type }, value: 0 }]);
    for (const outcome of ['succeeded', 'failed', 'retry']) expect(s.find(WEBHOOKS, { outcome, event: 'deploy' })).toHaveLength(1);
    // Jobs are off here: no queue is read, and none is made up.
    expect(s.find('hatchery_job_queue_depth')).toEqual([]);
  });

  it('counts REST requests per route template and status class, with their latency', async () => {
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE'); // its build writes no more lines later
    const before = await scrape(t.url);
    expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).status).toBe(200);
    expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).status).toBe(200);
    expect((await rest(t.url, owner.token, 'GET', '/deployments/dep_00000000000000000000000000')).status).toBe(404);
    expect((await rest(t.url, null, 'GET', `/deployments/${d.id}`)).status).toBe(401);
    expect((await rest(t.url, owner.token, 'GET', `/deployments?project=${slug}&limit=500`)).status).toBe(422);
    expect((await rest(t.url, owner.token, 'GET', `/no/such/${unique('path')}`)).status).toBe(404);
    const after = await scrape(t.url);

    const ok = { method: 'GET', route: '/deployments/:id', status_class: '2xx' };
    const missing = { method: 'GET', route: '/deployments/:id', status_class: '4xx' };
    expect(gained(before, after, HTTP, ok)).toBe(2);
    expect(gained(before, after, HTTP, missing)).toBe(2);
    expect(gained(before, after, HTTP, { method: 'GET', route: '/deployments', status_class: '4xx' })).toBe(1);
    // Unknown paths share one series: a client cannot mint new ones.
    expect(gained(before, after, HTTP, { method: 'GET', route: 'unmatched', status_class: '4xx' })).toBe(1);
    expect(after.find(HTTP).some((x) => x.labels.route.includes(d.id) || x.labels.route.includes('/no/such'))).toBe(false);

    expect(gained(before, after, `${HTTP_SECONDS}_count`, ok)).toBe(2);
    expect(after.value(`${HTTP_SECONDS}_sum`, ok)).toBeGreaterThan(before.value(`${HTTP_SECONDS}_sum`, ok));
    const buckets = after.find(`${HTTP_SECONDS}_bucket`, ok);
    expect(buckets.find((b) => b.labels.le === '+Inf')!.value).toBe(after.value(`${HTTP_SECONDS}_count`, ok));
    const counts = buckets.map((b) => b.value);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
  });

  it('counts GraphQL operations over HTTP by name (or anonymous), type and outcome, with their latency', async () => {
    const before = await scrape(t.url);
    await gqlOk(t.url, owner.token, ViewerDocument);
    await gqlOk(t.url, owner.token, CreateAppDocument, { slug: unique('egg') });
    const missing = await gql(t.url, owner.token, DeploymentDocument, { id: 'dep_00000000000000000000000000' });
    expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const anonymous = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ query: '{ viewer { id } }' }),
    });
    expect(anonymous.status).toBe(200);
    const after = await scrape(t.url);

    const viewer = { operation: 'Viewer', type: 'query' };
    expect(gained(before, after, OPS, { ...viewer, transport: 'http', outcome: 'success' })).toBe(1);
    expect(gained(before, after, OPS, { operation: 'CreateApp', type: 'mutation', transport: 'http', outcome: 'success' })).toBe(1);
    expect(gained(before, after, OPS, { operation: 'Deployment', type: 'query', transport: 'http', outcome: 'error' })).toBe(1);
    expect(gained(before, after, OPS, { operation: 'anonymous', type: 'query', transport: 'http', outcome: 'success' })).toBe(1);
    expect(gained(before, after, `${OP_SECONDS}_count`, viewer)).toBe(1);
    expect(after.value(`${OP_SECONDS}_sum`, viewer)).toBeGreaterThan(before.value(`${OP_SECONDS}_sum`, viewer));
    // The same requests, as HTTP requests to the GraphQL endpoint.
    expect(gained(before, after, HTTP, { method: 'POST', route: '/graphql', status_class: '2xx' })).toBe(4);
  });

  it('stores build log lines and counts each one', async () => {
    const before = await scrape(t.url);
    const d = await deploy(t.url, owner, slug);
    const client = wsClient(t.url, owner.token);
    try {
      const build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
      await build.done; // every build line is stored (and so counted) before it is streamed
      expect(build.items.length).toBeGreaterThan(0);
      const after = await scrape(t.url);
      expect(gained(before, after, LOG_LINES, { type: 'build' })).toBe(build.items.length);
      const [{ n }] = await t.gateway.ds.query(`SELECT count(*)::int AS n FROM log_lines WHERE deployment_id = $1 AND type = 'build'`, [d.id]);
      expect(n).toBe(build.items.length);
    } finally {
      await client.dispose();
    }
  });

  it('counts graphql-ws operations and keeps the number of active subscriptions', async () => {
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const before = await idle();
    const client = wsClient(t.url, owner.token);
    try {
      const first = collect(client, DeploymentStatusDocument, { id: d.id });
      const second = collect(client, DeploymentStatusDocument, { id: d.id });
      await first.waitFor(1);
      await second.waitFor(1);
      const streaming = await scrape(t.url);
      expect(streaming.value(ACTIVE)).toBe(2);
      expect(gained(before, streaming, OPS, { operation: 'DeploymentStatus', type: 'subscription', transport: 'ws', outcome: 'success' })).toBe(2);
      // graphql-ws operations have no HTTP request, and subscriptions no latency.
      expect(gained(before, streaming, `${OP_SECONDS}_count`, { operation: 'DeploymentStatus', type: 'subscription' })).toBe(0);

      // The server completes both when the deployment goes; the gauge drops before the client hears of it.
      await gqlOk(t.url, owner.token, DeleteDeploymentDocument, { id: d.id });
      await first.done;
      await second.done;
      expect((await scrape(t.url)).value(ACTIVE)).toBe(0);

      // A subscription to an unknown deployment is an operation that failed, and never active.
      const unknown = collect(client, DeploymentStatusDocument, { id: 'dep_00000000000000000000000000' });
      await unknown.done.catch(() => undefined);
      const failed = await scrape(t.url);
      expect(gained(before, failed, OPS, { operation: 'DeploymentStatus', type: 'subscription', transport: 'ws', outcome: 'error' })).toBe(1);
      expect(failed.value(ACTIVE)).toBe(0);
    } finally {
      await client.dispose();
    }
  });

  it('drops a subscription when its client unsubscribes or its connection closes, while it waits for events', async () => {
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    await idle();
    const client = wsClient(t.url, owner.token);
    const kept = collect(client, DeploymentStatusDocument, { id: d.id });
    const dropped = collect(client, DeploymentStatusDocument, { id: d.id });
    await kept.waitFor(1);
    await dropped.waitFor(1);
    expect((await scrape(t.url)).value(ACTIVE)).toBe(2);
    // The server hears of both on its own time: there is nothing to await but the gauge itself.
    dropped.unsubscribe();
    await scrapeUntil(t.url, (s) => s.value(ACTIVE) === 1, 'the unsubscribed stream ending');
    await client.dispose();
    await idle();
  });

  it('counts webhook deliveries by outcome: succeeded, failed, and retry when another attempt is scheduled', async () => {
    const good = await createWebhook(t, owner.token, slug, receiver.url('/metrics-ok'));
    const bad = await createWebhook(t, owner.token, slug, receiver.url('/metrics-500'));
    receiver.reply('/metrics-500', { status: 500 });
    const before = await scrape(t.url);

    const pinged = await testWebhook(t, owner.token, slug, good.id);
    expect(pinged.body).toMatchObject({ status: 'succeeded', response_status: 200 });
    const refused = await testWebhook(t, owner.token, slug, bad.id);
    expect(refused.body).toMatchObject({ status: 'failed', response_status: 500 });
    const pings = await scrape(t.url);
    expect(gained(before, pings, WEBHOOKS, { outcome: 'succeeded', event: 'ping' })).toBe(1);
    expect(gained(before, pings, WEBHOOKS, { outcome: 'failed', event: 'ping' })).toBe(1);
    expect(gained(before, pings, WEBHOOKS, { outcome: 'retry', event: 'ping' })).toBe(0);

    // A deploy sends `building` and `live` to both: the good one takes them, the bad one will be retried.
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    await receiver.waitFor('/metrics-500', 3);
    const after = await scrapeUntil(
      t.url,
      (s) =>
        gained(pings, s, WEBHOOKS, { outcome: 'retry', event: 'deploy' }) >= 2 && gained(pings, s, WEBHOOKS, { outcome: 'succeeded', event: 'deploy' }) >= 2,
      'the deploy events’ outcomes',
    );
    expect(gained(pings, after, WEBHOOKS, { outcome: 'retry', event: 'deploy' })).toBe(2);
    expect(gained(pings, after, WEBHOOKS, { outcome: 'succeeded', event: 'deploy' })).toBe(2);
    expect(gained(pings, after, WEBHOOKS, { outcome: 'failed', event: 'deploy' })).toBe(0);
  });

  it('bounds the operation names clients can mint: past 200 distinct names, new ones count as `other`', async () => {
    const before = await scrape(t.url);
    const known = new Set(before.find(OPS).map((x) => x.labels.operation));
    const post = (query: string) =>
      fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
        body: JSON.stringify({ query }),
      });
    for (let i = 0; i < 220; i++) expect((await post(`query Minted${i} { viewer { id } }`)).status).toBe(200);
    await gqlOk(t.url, owner.token, ViewerDocument);
    const after = await scrape(t.url);

    const names = new Set(after.find(OPS).map((x) => x.labels.operation));
    expect(names.size).toBe(202); // 200 names, `anonymous` and `other`
    const minted = [...names].filter((n) => n.startsWith('Minted'));
    expect(minted.length).toBe(200 - [...known].filter((n) => n !== 'anonymous' && n !== 'other').length);
    const other = { operation: 'other', type: 'query', transport: 'http', outcome: 'success' };
    expect(gained(before, after, OPS, other)).toBe(220 - minted.length);
    // A name seen before the limit keeps its own series.
    expect(gained(before, after, OPS, { operation: 'Viewer', type: 'query', transport: 'http', outcome: 'success' })).toBe(1);
  });
});
