import { rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { ISO_MS, untilListening } from './helpers';

interface Line {
  timestamp: string;
  type: string;
  message: string;
}

describe('GET /deployments/:id/logs', () => {
  let t: TestGateway;
  let owner: TestUser;
  let id: string;
  /** Every line of the deployment, oldest first, as stored. */
  let stored: Line[];

  const get = (query = '') => rest(t.url, owner.token, 'GET', `/deployments/${id}/logs${query}`);
  const messages = (lines: Line[]) => lines.map((l) => l.message);

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    id = (await deploy(t.url, owner, slug)).id;
    await untilListening(t.url, owner, id);
    const rows: Array<{ timestamp: Date; type: string; message: string }> = await t.gateway.ds.query(
      'SELECT timestamp, type, message FROM log_lines WHERE deployment_id = $1 ORDER BY seq',
      [id],
    );
    stored = rows.map((r) => ({ timestamp: r.timestamp.toISOString(), type: r.type, message: r.message }));
  });
  afterAll(() => t.stop());

  it('returns {data: [{timestamp, type, message}], has_more, next_cursor}, oldest first', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'has_more', 'next_cursor']);
    expect(res.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(res.body.data).toEqual(stored);
    for (const line of res.body.data as Line[]) {
      expect(Object.keys(line).sort()).toEqual(['message', 'timestamp', 'type']);
      expect(line.timestamp).toMatch(ISO_MS);
      expect(['build', 'runtime']).toContain(line.type);
    }
    const times = (res.body.data as Line[]).map((l) => Date.parse(l.timestamp));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(res.body.data[0].message).toMatch(/Build started/);
    expect(messages(res.body.data).slice(-2)).toEqual([expect.stringMatching(/^Starting /), 'Listening on port 8080']);
  });

  it('filters by type=build and type=runtime', async () => {
    const build = await get('?type=build');
    expect(build.status).toBe(200);
    expect(build.body.data).toEqual(stored.filter((l) => l.type === 'build'));
    expect(build.body.data.length).toBeGreaterThanOrEqual(2);
    expect(messages(build.body.data).at(-1)).toBe('==> Build succeeded');

    const runtime = await get('?type=runtime');
    expect(runtime.status).toBe(200);
    expect(runtime.body.data).toEqual(stored.filter((l) => l.type === 'runtime'));
    expect(messages(runtime.body.data)).toEqual([expect.stringMatching(/^Starting /), 'Listening on port 8080']);
  });

  it('since is exclusive: only lines strictly after it', async () => {
    const second = stored[1];
    const res = await get(`?since=${encodeURIComponent(second.timestamp)}`);
    expect(res.status).toBe(200);
    const expected = stored.filter((l) => Date.parse(l.timestamp) > Date.parse(second.timestamp));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(stored.length - 1);
    expect(res.body.data).toEqual(expected);
    expect(messages(res.body.data)).not.toContain(second.message);
    expect(messages(res.body.data)).not.toContain(stored[0].message);

    const withType = await get(`?type=runtime&since=${encodeURIComponent(second.timestamp)}`);
    expect(withType.body.data).toEqual(expected.filter((l) => l.type === 'runtime'));

    const last = stored.at(-1)!;
    const none = await get(`?since=${encodeURIComponent(last.timestamp)}`);
    expect(none.body).toEqual({ data: [], has_more: false, next_cursor: null });
  });

  it('pages with limit and cursor, oldest first, without duplicates or gaps', async () => {
    const seen: Line[] = [];
    let cursor: string | null = null;
    for (let page = 0; ; page++) {
      expect(page).toBeLessThan(stored.length);
      const res = await get(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data);
      if (!res.body.has_more) {
        expect(res.body.next_cursor).toBeNull();
        break;
      }
      expect(res.body.data).toHaveLength(2);
      expect(typeof res.body.next_cursor).toBe('string');
      cursor = res.body.next_cursor;
    }
    expect(seen).toEqual(stored);

    const first = await get('?type=build&limit=1');
    expect(first.body.data).toEqual([stored[0]]);
    expect(first.body.has_more).toBe(true);
    const rest2 = await get(`?type=build&limit=100&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(rest2.body.data).toEqual(stored.filter((l) => l.type === 'build').slice(1));
  });

  it('rejects a bad type, since, limit or cursor with 422 naming the parameter', async () => {
    for (const [query, field] of [
      ['?type=stdout', 'type'],
      ['?since=yesterday', 'since'],
      ['?limit=0', 'limit'],
      ['?limit=abc', 'limit'],
      ['?cursor=garbage', 'cursor'],
      ['?colour=red', 'colour'],
    ]) {
      const res = await get(query);
      expect({ query, status: res.status, code: res.body.code }).toEqual({ query, status: 422, code: 'validation_failed' });
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  it('answers 404 to an account that cannot see the egg', async () => {
    const stranger = await makeUser(t.gateway);
    const res = await rest(t.url, stranger.token, 'GET', `/deployments/${id}/logs`);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect(JSON.stringify(res.body)).not.toContain('Build started');
  });
});
