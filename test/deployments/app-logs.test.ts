import { request as httpRequest } from 'node:http';
import { AppLogsDocument, AppLogStreamDocument, AppLogStreamSubscription, DeploymentLogStreamDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { untilListening } from './helpers';

type AppLine = { deployment: string; seq: number; timestamp: string; type: string; stream: string | null; message: string };

/** A GET with `Accept: application/x-ndjson`: the status, content type and body as text. */
function download(url: string, token: string, path: string): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/x-ndjson' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('an egg’s logs across its deployments: GET /v1/apps/{slug}/logs, App.logs, appLogs', () => {
  let t: TestGateway;
  let owner: TestUser;
  let stranger: TestUser;
  let slug: string;
  let first: string;
  let second: string;
  const T = Date.parse('2100-01-01T00:00:00.000Z');
  const at = (s: number) => new Date(T + s * 1000);

  /** Appends lines to a deployment (opened for writing here, live or not) and waits until they are stored. */
  const write = async (id: string, lines: Array<[string, Date?, ('stdout' | 'stderr')?]>) => {
    const writer = t.gateway.services.deployments.writer;
    await writer.open(id);
    for (const [message, when, stream] of lines) writer.append(id, LogType.RUNTIME, message, when, stream);
    await writer.flush();
  };

  const page = async (query: string) => {
    const res = await rest(t.url, owner.token, 'GET', `/v1/apps/${slug}/logs?${query}`);
    expect(res.status).toBe(200);
    return res.body as { data: AppLine[]; has_more: boolean; next_cursor: string | null };
  };

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    stranger = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    first = (await deploy(t.url, owner, slug)).id;
    await untilListening(t.url, owner, first);
    second = (await deploy(t.url, owner, slug)).id;
    await untilListening(t.url, owner, second);
    // Written out of order across the two: the egg's log interleaves them by time.
    await write(first, [
      ['one a', at(1), 'stdout'],
      ['one c', at(3), 'stderr'],
    ]);
    await write(second, [
      ['two b', at(2), 'stdout'],
      ['two d', at(4), 'stdout'],
    ]);
  });
  afterAll(() => t.stop());

  it('interleaves the deployments’ lines by time, each saying its deployment, seq and stream; pages continue without repeats', async () => {
    const p1 = await page(`since=${at(0).toISOString()}&limit=3`);
    expect(p1.data.map((l) => l.message)).toEqual(['one a', 'two b', 'one c']);
    expect(p1.data.map((l) => l.deployment)).toEqual([first, second, first]);
    expect(Object.keys(p1.data[0]).sort()).toEqual(['deployment', 'message', 'seq', 'stream', 'timestamp', 'type']);
    expect(p1.data[2]).toMatchObject({ type: 'runtime', stream: 'stderr', timestamp: at(3).toISOString() });
    expect(p1.has_more).toBe(true);
    const p2 = await page(`since=${at(0).toISOString()}&limit=3&cursor=${p1.next_cursor}`);
    expect(p2.data.map((l) => l.message)).toEqual(['two d']);
    expect(p2).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('q takes @deployment:<id> and @stream; tail gives the newest lines, oldest first; until ends before', async () => {
    const since = `since=${at(0).toISOString()}`;
    expect((await page(`${since}&q=${encodeURIComponent(`@deployment:${first}`)}`)).data.map((l) => l.message)).toEqual(['one a', 'one c']);
    expect((await page(`${since}&q=${encodeURIComponent('@stream:stderr')}`)).data.map((l) => l.message)).toEqual(['one c']);
    expect((await page(`${since}&q=two`)).data.map((l) => l.message)).toEqual(['two b', 'two d']);
    expect((await page(`${since}&tail=2`)).data.map((l) => l.message)).toEqual(['one c', 'two d']);
    expect((await page(`${since}&until=${at(3).toISOString()}`)).data.map((l) => l.message)).toEqual(['one a', 'two b']);
  });

  it('GraphQL App.logs answers the same lines', async () => {
    const data = await gqlOk(t.url, owner.token, AppLogsDocument, { app: slug, since: at(0).toISOString(), q: '-"two d"' });
    expect(data.app.logs.nodes.map((l) => [l.deploymentId, l.message, l.stream])).toEqual([
      [first, 'one a', 'STDOUT'],
      [second, 'two b', 'STDOUT'],
      [first, 'one c', 'STDERR'],
    ]);
  });

  it('refuses bad input naming the field, and hides eggs the caller cannot see', async () => {
    const bad = async (query: string, field: string) => {
      const res = await rest(t.url, owner.token, 'GET', `/v1/apps/${slug}/logs?${query}`);
      expect(res.status).toBe(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
    };
    await bad(`q=${encodeURIComponent('@deployment:nope')}`, 'q');
    await bad(`q=${encodeURIComponent('@stream:stdin')}`, 'q');
    await bad('limit=501', 'limit');
    await bad('tail=0', 'tail');
    await bad('cursor=bm90LWEtY3Vyc29y', 'cursor');
    expect((await rest(t.url, stranger.token, 'GET', `/v1/apps/${slug}/logs`)).status).toBe(404);
    expect((await rest(t.url, owner.token, 'GET', '/v1/apps/no-such-egg/logs')).status).toBe(404);
    const res = await gql(t.url, owner.token, AppLogsDocument, { app: slug, q: '"open' });
    expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('Accept: application/x-ndjson downloads every matching line, past any page size, on both logs endpoints', async () => {
    const many = Array.from({ length: 1234 }, (_, i) => [`bulk ${i}`, new Date(T + 100_000 + i)] as [string, Date]);
    await write(second, many);
    const since = new Date(T + 99_999).toISOString();
    const egg = await download(t.url, owner.token, `/v1/apps/${slug}/logs?since=${since}&q=bulk`);
    expect(egg.status).toBe(200);
    expect(egg.type).toMatch(/^application\/x-ndjson/);
    const eggLines = egg.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as AppLine);
    expect(eggLines.map((l) => l.message)).toEqual(many.map(([m]) => m));
    expect(eggLines.every((l) => l.deployment === second)).toBe(true);

    const dep = await download(t.url, owner.token, `/deployments/${second}/logs?since=${since}`);
    expect(dep.status).toBe(200);
    const depLines = dep.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(depLines.map((l) => l.message)).toEqual(many.map(([m]) => m));
    expect(Object.keys(depLines[0]).sort()).toEqual(['message', 'timestamp', 'type']);

    // Refused before anything streams: a JSON problem, not NDJSON.
    const bad = await download(t.url, owner.token, `/v1/apps/${slug}/logs?q=${encodeURIComponent('"open')}`);
    expect(bad.status).toBe(422);
    expect(JSON.parse(bad.text).errors).toEqual([{ field: 'q', message: 'has a phrase with no closing quote at position 1' }]);
  });

  it('appLogs replays, then follows the live deployment across a redeploy, gapless, with q applied to both', async () => {
    const client = wsClient(t.url, owner.token);
    try {
      await write(second, [['follow old-1'], ['noise']]);
      const stream = collect(client, AppLogStreamDocument, { app: slug, q: 'follow' });
      const seen = (items: AppLogStreamSubscription[]) => items.map((i) => i.appLogs.message);
      expect(seen(await stream.waitFor(1))).toEqual(['follow old-1']);

      await write(second, [['follow old-2'], ['noise']]);
      const third = (await deploy(t.url, owner, slug)).id;
      await untilListening(t.url, owner, third);
      await write(third, [['follow new-1']]);
      // A line stored without its event (another writer's, say): the next live batch finds the gap and fills it from storage.
      await t.gateway.ds.query(
        `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message)
         SELECT $1, app_id, (SELECT max(seq) + 1 FROM log_lines WHERE deployment_id = $1), now(), 'runtime', 'follow silent' FROM deployments WHERE id = $1`,
        [third],
      );
      await t.gateway.services.deployments.writer.resume(third);
      await write(third, [['follow new-2'], ['noise']]);
      await write(second, [['follow old-3']]);

      const items = await waitForItem(stream, (i) => i.appLogs.message === 'follow old-3');
      expect(seen(items)).toEqual(['follow old-1', 'follow old-2', 'follow new-1', 'follow silent', 'follow new-2', 'follow old-3']);
      expect(items.map((i) => i.appLogs.deploymentId)).toEqual([second, second, third, third, third, second]);
      // Each deployment's lines in seq order, none twice.
      for (const id of [second, third]) {
        const seqs = items.filter((i) => i.appLogs.deploymentId === id).map((i) => i.appLogs.seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        expect(new Set(seqs).size).toBe(seqs.length);
      }
      stream.unsubscribe();
    } finally {
      await client.dispose();
    }
  });

  it('deploymentLogs takes q too, for stored and live lines; a bad q refuses the subscription', async () => {
    const client = wsClient(t.url, owner.token);
    try {
      await write(first, [['needle 1'], ['hay']]);
      const stream = collect(client, DeploymentLogStreamDocument, { id: first, q: 'needle' });
      await stream.waitFor(1);
      await write(first, [['hay'], ['needle 2']]);
      const items = await waitForItem(stream, (i) => i.deploymentLogs.message === 'needle 2');
      expect(items.map((i) => i.deploymentLogs.message)).toEqual(['needle 1', 'needle 2']);
      stream.unsubscribe();

      const bad = collect(client, AppLogStreamDocument, { app: slug, q: '@colour:red' });
      const outcome = await bad.done.then(
        () => bad.errors,
        (e: unknown) => e,
      );
      expect(outcome).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) })]);
    } finally {
      await client.dispose();
    }
  });
});
