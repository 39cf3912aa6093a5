import {
  DeploymentDocument,
  DeploymentLogsDocument,
  DeploymentLogsQueryVariables,
  DeploymentsDocument,
  DeploymentsQuery,
  DeploymentsQueryVariables,
} from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { restDeployment, restList, restLogLine, untilListening } from './helpers';

/** Every REST endpoint is its GraphQL twin's data in REST shape: snake_case names, lower-case enums. */
describe('REST and GraphQL agree on deployments and logs', () => {
  let t: TestGateway;
  let owner: TestUser;
  let eggA: string;
  let eggB: string;
  const ids: string[] = [];
  let failedId: string;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    eggA = (await makeApp(t.url, owner)).slug;
    eggB = (await makeApp(t.url, owner)).slug;
    for (const [slug, env] of [
      [eggA, { A: '1' }],
      [eggB, undefined],
      [eggA, { HATCHERY_SIMULATE: 'fail' }],
      [eggA, { B: '2', C: '3' }],
      [eggB, { D: '4' }],
    ] as const) {
      const d = await deploy(t.url, owner, slug, env);
      ids.push(d.id);
      const status = await settle(t.url, owner, d.id);
      if (status === 'FAILED') failedId = d.id;
      // Wait for the go-live lines, so nothing changes between the two reads.
      else await untilListening(t.url, owner, d.id);
    }
    expect(failedId).toBeDefined();
  });
  afterAll(() => t.stop());

  it('GET /deployments/:id equals deployment(id)', async () => {
    for (const id of ids) {
      const viaRest = await rest(t.url, owner.token, 'GET', `/deployments/${id}`);
      const viaGraphql = await gqlOk(t.url, owner.token, DeploymentDocument, { id });
      expect(viaRest.status).toBe(200);
      expect(viaRest.body).toEqual(restDeployment(viaGraphql.deployment));
    }
    const failed = await rest(t.url, owner.token, 'GET', `/deployments/${failedId}`);
    expect(failed.body.status).toBe('failed');
    expect(failed.body.failure_reason).toEqual(expect.any(String));
  });

  it('GET /deployments equals deployments(…) page for page', async () => {
    const cases: Array<[string, DeploymentsQueryVariables]> = [
      ['', {}],
      ['?limit=2', { first: 2 }],
      [`?project=${eggA}`, { project: eggA }],
      ['?status=live', { status: 'LIVE' }],
      [`?project=${eggA}&status=failed`, { project: eggA, status: 'FAILED' }],
    ];
    for (const [query, vars] of cases) {
      const viaRest = await rest(t.url, owner.token, 'GET', `/deployments${query}`);
      const viaGraphql = await gqlOk(t.url, owner.token, DeploymentsDocument, vars);
      expect(viaRest.status).toBe(200);
      expect({ query, body: viaRest.body }).toEqual({ query, body: restList(viaGraphql.deployments, restDeployment) });
    }

    // Following the cursors of both, page by page.
    let cursor: string | null = null;
    let after: string | null = null;
    for (let page = 0; page < ids.length; page++) {
      const q: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const viaRest = await rest(t.url, owner.token, 'GET', `/deployments${q}`);
      const viaGraphql: DeploymentsQuery = await gqlOk(t.url, owner.token, DeploymentsDocument, { first: 2, after });
      expect(viaRest.body).toEqual(restList(viaGraphql.deployments, restDeployment));
      if (!viaRest.body.has_more) break;
      cursor = viaRest.body.next_cursor;
      after = viaGraphql.deployments.pageInfo.endCursor;
    }
    expect(cursor).not.toBeNull();
  });

  it('GET /deployments/:id/logs equals deployment(id).logs(…)', async () => {
    const id = ids.at(-1)!;
    const all = await gqlOk(t.url, owner.token, DeploymentLogsDocument, { id });
    const second = all.deployment.logs.nodes[1].timestamp;
    const cases: Array<[string, Omit<DeploymentLogsQueryVariables, 'id'>]> = [
      ['', {}],
      ['?type=build', { type: 'BUILD' }],
      ['?type=runtime', { type: 'RUNTIME' }],
      [`?since=${encodeURIComponent(second)}`, { since: second }],
      ['?limit=3', { first: 3 }],
    ];
    for (const [query, vars] of cases) {
      const viaRest = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs${query}`);
      const viaGraphql = await gqlOk(t.url, owner.token, DeploymentLogsDocument, { id, ...vars });
      expect(viaRest.status).toBe(200);
      expect({ query, body: viaRest.body }).toEqual({ query, body: restList(viaGraphql.deployment.logs, restLogLine) });
    }

    const firstPage = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?limit=3`);
    const nextRest = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?limit=3&cursor=${encodeURIComponent(firstPage.body.next_cursor)}`);
    const firstGraphql = await gqlOk(t.url, owner.token, DeploymentLogsDocument, { id, first: 3 });
    const nextGraphql = await gqlOk(t.url, owner.token, DeploymentLogsDocument, {
      id,
      first: 3,
      after: firstGraphql.deployment.logs.pageInfo.endCursor,
    });
    expect(nextRest.body).toEqual(restList(nextGraphql.deployment.logs, restLogLine));
    expect(nextRest.body.data.length).toBeGreaterThan(0);
  });
});
