import { CreateAppDocument, DeploymentDocument, ViewerDocument } from '../../src/client/generated';
import { collect, startGateway, TestGateway, wsClient } from '../support/gateway';
import { makeUser, TestUser, unique } from '../support/factories';
import { Scrape, scrape } from './prom';

const HTTP = 'hatchery_http_requests_total';
const OPS = 'hatchery_graphql_operations_total';
const ACTIVE = 'hatchery_graphql_subscriptions_active';

const gained = (before: Scrape, after: Scrape, name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);

describe('GET /metrics: queries and mutations sent over graphql-ws', () => {
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  it('counts a query and a mutation sent over graphql-ws by name, type, transport and outcome; none is an active subscription', async () => {
    const before = await scrape(t.url);
    const client = wsClient(t.url, owner.token);
    try {
      // Each single-result operation completes after its one result.
      const viewer = collect(client, ViewerDocument, {});
      await viewer.done;
      expect(viewer.items).toEqual([{ viewer: expect.objectContaining({ id: owner.id, email: owner.email }) }]);
      const slug = unique('ws-egg');
      const created = collect(client, CreateAppDocument, { slug });
      await created.done;
      expect(created.items).toEqual([{ createApp: expect.objectContaining({ slug }) }]);
      const missing = collect(client, DeploymentDocument, { id: 'dep_00000000000000000000000000' });
      await missing.done;
      expect(missing.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'NOT_FOUND' }) })]);

      const after = await scrape(t.url);
      expect(gained(before, after, OPS, { operation: 'Viewer', type: 'query', transport: 'ws', outcome: 'success' })).toBe(1);
      expect(gained(before, after, OPS, { operation: 'CreateApp', type: 'mutation', transport: 'ws', outcome: 'success' })).toBe(1);
      expect(gained(before, after, OPS, { operation: 'Deployment', type: 'query', transport: 'ws', outcome: 'error' })).toBe(1);
      // Counted once, as ws: nothing went over HTTP, and nothing under the other outcome.
      expect(gained(before, after, OPS, { operation: 'Viewer', type: 'query', transport: 'http', outcome: 'success' })).toBe(0);
      expect(gained(before, after, OPS, { operation: 'Viewer', type: 'query', transport: 'ws', outcome: 'error' })).toBe(0);
      expect(gained(before, after, HTTP, { method: 'POST', route: '/graphql', status_class: '2xx' })).toBe(0);
      // Their latency is observed too, once each; the subscription-less queries are not streams.
      const DURATION = 'hatchery_graphql_operation_duration_seconds_count';
      expect(gained(before, after, DURATION, { operation: 'Viewer', type: 'query' })).toBe(1);
      expect(gained(before, after, DURATION, { operation: 'CreateApp', type: 'mutation' })).toBe(1);
      expect(after.value(ACTIVE)).toBe(0);
    } finally {
      await client.dispose();
    }
  });
});
