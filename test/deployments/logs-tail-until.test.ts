import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { untilListening } from './helpers';

interface Line {
  timestamp: string;
  type: string;
  message: string;
}

type Page = { deployment: { logs: { nodes: Array<Line & { seq: number }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } };
const LOGS: TypedDocumentNode<Page, Record<string, unknown>> = parse(/* GraphQL */ `
  query Logs($id: ID!, $type: LogType, $since: DateTime, $until: DateTime, $tail: Int, $first: Int, $after: String) {
    deployment(id: $id) {
      logs(type: $type, since: $since, until: $until, tail: $tail, first: $first, after: $after) {
        nodes {
          seq
          timestamp
          type
          message
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

/** `tail` (the last N lines, oldest first) and `until` (exclusive) on a deployment's logs, REST and GraphQL. */
describe('logs: tail and until', () => {
  let t: TestGateway;
  let owner: TestUser;
  let id: string;
  /** Every line, oldest first, as stored: the build's and 40 runtime lines a second apart, an hour ahead. */
  let stored: Line[];
  const base = Date.now() + 3600_000;
  const at = (i: number) => new Date(base + i * 1000).toISOString();

  const get = (query = '') => rest(t.url, owner.token, 'GET', `/deployments/${id}/logs${query}`);

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    id = (await deploy(t.url, owner, slug)).id;
    await untilListening(t.url, owner, id);
    await t.gateway.ds.query(
      `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message)
       SELECT $1, (SELECT app_id FROM deployments WHERE id = $1), (SELECT max(seq) FROM log_lines WHERE deployment_id = $1) + i, $2::timestamptz + i * interval '1 second', 'runtime', 'line ' || i
         FROM generate_series(1, 40) AS i`,
      [id, new Date(base).toISOString()],
    );
    const rows: Array<{ timestamp: Date; type: string; message: string }> = await t.gateway.ds.query(
      'SELECT timestamp, type, message FROM log_lines WHERE deployment_id = $1 ORDER BY seq',
      [id],
    );
    stored = rows.map((r) => ({ timestamp: r.timestamp.toISOString(), type: r.type, message: r.message }));
  });
  afterAll(() => t.stop());

  it('tail=N: the last N lines, oldest first; nothing after them', async () => {
    const res = await get('?tail=5');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: stored.slice(-5), has_more: false, next_cursor: null });
    expect((await get('?tail=1000')).body.data).toEqual(stored);
  });

  it('tail with a type: the last N lines of that type', async () => {
    const build = stored.filter((l) => l.type === 'build');
    expect((await get('?type=build&tail=2')).body.data).toEqual(build.slice(-2));
  });

  it('until is exclusive: only lines strictly before it; with since, a window; with tail, the last N before it', async () => {
    expect((await get(`?until=${encodeURIComponent(at(1))}`)).body.data).toEqual(stored.filter((l) => l.timestamp < at(1)));
    expect((await get(`?since=${encodeURIComponent(at(10))}&until=${encodeURIComponent(at(14))}`)).body.data.map((l: Line) => l.message)).toEqual([
      'line 11',
      'line 12',
      'line 13',
    ]);
    expect((await get(`?until=${encodeURIComponent(at(20))}&tail=3`)).body.data.map((l: Line) => l.message)).toEqual(['line 17', 'line 18', 'line 19']);
    // An empty window is no error.
    expect((await get(`?since=${encodeURIComponent(at(20))}&until=${encodeURIComponent(at(5))}`)).body.data).toEqual([]);
  });

  it('GraphQL: the same; tail’s endCursor continues forward with after', async () => {
    const { deployment } = await gqlOk(t.url, owner.token, LOGS, { id, tail: 3 });
    expect(deployment.logs.nodes.map((l) => l.message)).toEqual(['line 38', 'line 39', 'line 40']);
    expect(deployment.logs.pageInfo.hasNextPage).toBe(false);
    const lastSeq = deployment.logs.nodes.at(-1)!.seq;
    await t.gateway.ds.query(
      `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message) VALUES ($1, (SELECT app_id FROM deployments WHERE id = $1), $2, $3, 'runtime', 'line 41')`,
      [id, lastSeq + 1, at(41)],
    );
    const next = await gqlOk(t.url, owner.token, LOGS, { id, after: deployment.logs.pageInfo.endCursor });
    expect(next.deployment.logs.nodes.map((l) => l.message)).toEqual(['line 41']);
    const window = await gqlOk(t.url, owner.token, LOGS, { id, since: at(1), until: at(4) });
    expect(window.deployment.logs.nodes.map((l) => l.message)).toEqual(['line 2', 'line 3']);
  });

  it('rejects a bad tail or until with 422 naming it, and tail with limit or cursor', async () => {
    const page = await get('?limit=2');
    for (const [query, field] of [
      ['?tail=0', 'tail'],
      ['?tail=1001', 'tail'],
      ['?tail=abc', 'tail'],
      ['?until=tomorrow', 'until'],
      ['?tail=5&limit=5', 'tail'],
      [`?tail=5&cursor=${encodeURIComponent(page.body.next_cursor)}`, 'tail'],
    ]) {
      const res = await get(query);
      expect({ query, status: res.status, code: res.body.code }).toEqual({ query, status: 422, code: 'validation_failed' });
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });
});
