import { DeploymentLogStreamDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { Client as WsClient } from 'graphql-ws';
import { collect, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { untilListening, waitForItem } from './helpers';

interface Row {
  seq: number;
  timestamp: string;
  type: 'BUILD' | 'RUNTIME';
  message: string;
}

describe('deploymentStatus and deploymentLogs subscriptions', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;
  let client: WsClient;

  /** The deployment's stored lines as the stream sends them. */
  const storedLines = async (id: string, type?: 'build' | 'runtime'): Promise<Row[]> => {
    const rows: Array<{ seq: number; timestamp: Date; type: string; message: string }> = await t.gateway.ds.query(
      `SELECT seq, timestamp, type, message FROM log_lines WHERE deployment_id = $1 ${type ? 'AND type = $2' : ''} ORDER BY seq`,
      type ? [id, type] : [id],
    );
    return rows.map((r) => ({ seq: r.seq, timestamp: r.timestamp.toISOString(), type: r.type.toUpperCase() as Row['type'], message: r.message }));
  };

  beforeAll(async () => {
    // Long enough to subscribe while the build runs.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '600' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    client = wsClient(t.url, owner.token);
  });
  afterAll(async () => {
    await client.dispose();
    await t.stop();
  });

  describe('deploymentStatus', () => {
    it('sends the current state at once, then LIVE', async () => {
      const d = await deploy(t.url, owner, slug);
      const status = collect(client, DeploymentStatusDocument, { id: d.id });
      const [first] = await status.waitFor(1);
      expect(first.deploymentStatus).toMatchObject({ id: d.id, status: 'BUILDING', finishedAt: null, failureReason: null });
      const items = await waitForItem(status, (i) => i.deploymentStatus.status !== 'BUILDING');
      expect(items.map((i) => i.deploymentStatus.status)).toEqual(['BUILDING', 'LIVE']);
      expect(items[1].deploymentStatus.finishedAt).not.toBeNull();
      status.unsubscribe();

      // Subscribing later sends the current state, LIVE, straight away.
      const later = collect(client, DeploymentStatusDocument, { id: d.id });
      const [now] = await later.waitFor(1);
      expect(now.deploymentStatus).toMatchObject({ id: d.id, status: 'LIVE', finishedAt: items[1].deploymentStatus.finishedAt });
      later.unsubscribe();
    });

    it('reports FAILED with its reason', async () => {
      const d = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      const status = collect(client, DeploymentStatusDocument, { id: d.id });
      const items = await waitForItem(status, (i) => i.deploymentStatus.status !== 'BUILDING');
      expect(items.map((i) => i.deploymentStatus.status)).toEqual(['BUILDING', 'FAILED']);
      expect(items[1].deploymentStatus.failureReason).toEqual(expect.any(String));
      expect(items[1].deploymentStatus.failureReason!.length).toBeGreaterThan(0);
      status.unsubscribe();
    });

    it('deploymentStatus and deploymentLogs are NOT_FOUND for a deployment of an egg the caller cannot see', async () => {
      const d = await deploy(t.url, owner, slug);
      const stranger = await makeUser(t.gateway);
      const theirs = wsClient(t.url, stranger.token);
      try {
        for (const stream of [collect(theirs, DeploymentStatusDocument, { id: d.id }), collect(theirs, DeploymentLogStreamDocument, { id: d.id })]) {
          const err = await stream.done.then(
            () => stream.errors,
            (e: unknown) => e,
          );
          expect((err as Array<{ extensions?: { code?: string } }>).map((e) => e.extensions?.code)).toContain('NOT_FOUND');
          expect(stream.items).toEqual([]);
        }
      } finally {
        await theirs.dispose();
      }
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    });
  });

  describe('deploymentLogs', () => {
    it('type BUILD streams the build lines and completes when the build ends', async () => {
      const d = await deploy(t.url, owner, slug);
      const build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
      await build.done;
      const lines = build.items.map((i) => i.deploymentLogs);
      expect(lines.length).toBeGreaterThan(1);
      expect(lines.every((l) => l.type === 'BUILD')).toBe(true);
      expect(lines.at(-1)!.message).toBe('==> Build succeeded');
      expect(lines).toEqual(await storedLines(d.id, 'build'));
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');

      // After the build, a BUILD stream replays the build and completes at once.
      const replay = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
      await replay.done;
      expect(replay.items.map((i) => i.deploymentLogs)).toEqual(lines);
    });

    it('type BUILD also completes when the build fails', async () => {
      const d = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      const build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
      await build.done;
      const messages = build.items.map((i) => i.deploymentLogs.message);
      expect(messages.at(-1)).toMatch(/fail/i);
      expect(build.items.map((i) => i.deploymentLogs)).toEqual(await storedLines(d.id, 'build'));
    });

    it('without type, continues with RUNTIME lines once the deployment is live', async () => {
      const d = await deploy(t.url, owner, slug);
      const all = collect(client, DeploymentLogStreamDocument, { id: d.id });
      let completed = false;
      void all.done.then(() => (completed = true));
      const items = await waitForItem(all, (i) => i.deploymentLogs.message === 'Listening on port 8080');
      const lines = items.map((i) => i.deploymentLogs);
      const types = lines.map((l) => l.type);
      expect(types[0]).toBe('BUILD');
      expect(types.slice(-2)).toEqual(['RUNTIME', 'RUNTIME']);
      expect(types.indexOf('RUNTIME')).toBe(types.lastIndexOf('BUILD') + 1);
      expect(lines.at(-2)!.message).toMatch(/^Starting /);
      expect(lines).toEqual(await storedLines(d.id));
      expect(completed).toBe(false);

      // Later lines keep arriving on the open stream.
      const writer = t.gateway.services.deployments.writer;
      await writer.open(d.id);
      writer.append(d.id, LogType.RUNTIME, 'GET / 200 1ms');
      const more = await waitForItem(all, (i) => i.deploymentLogs.message === 'GET / 200 1ms');
      expect(more.at(-1)!.deploymentLogs).toMatchObject({ seq: lines.at(-1)!.seq + 1, type: 'RUNTIME' });
      all.unsubscribe();

      const runtime = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'RUNTIME' });
      const runtimeItems = await runtime.waitFor(3);
      expect(runtimeItems.map((i) => i.deploymentLogs)).toEqual(await storedLines(d.id, 'runtime'));
      runtime.unsubscribe();
    });

    it('with since, replays only the lines after it, then live lines', async () => {
      const d = await deploy(t.url, owner, slug);
      await untilListening(t.url, owner, d.id);
      const stored = await storedLines(d.id);
      const since = stored[1].timestamp;
      const expected = stored.filter((l) => Date.parse(l.timestamp) > Date.parse(since));
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(stored.length - 1);

      const after = collect(client, DeploymentLogStreamDocument, { id: d.id, since });
      const replayed = await after.waitFor(expected.length);
      expect(replayed.map((i) => i.deploymentLogs)).toEqual(expected);
      after.unsubscribe();

      // Since the last stored line: nothing is replayed, and a new line is the first item.
      const tail = collect(client, DeploymentLogStreamDocument, { id: d.id, since: stored.at(-1)!.timestamp });
      const writer = t.gateway.services.deployments.writer;
      await writer.open(d.id);
      writer.append(d.id, LogType.RUNTIME, 'after since');
      const [first] = await tail.waitFor(1);
      expect(first.deploymentLogs).toMatchObject({ message: 'after since', seq: stored.at(-1)!.seq + 1 });
      tail.unsubscribe();
    });
  });
});
