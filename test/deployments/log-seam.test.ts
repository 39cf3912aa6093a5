import { DeploymentLogStreamDocument, DeploymentLogStreamSubscription } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { collect, Collected, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { storedLines, waitForItem } from './helpers';

/**
 * deploymentLogs replays stored lines and then goes live; lines written while it replays must
 * reach it exactly once, in order. We write thousands of lines while subscribing.
 */
describe('deploymentLogs: no line lost or repeated at the replay/live seam', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '1500' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  const storedSeqs = async (id: string, type?: string) => (await storedLines(t, id, type)).map((r) => r.seq);
  const seqsOf = (s: Collected<DeploymentLogStreamSubscription>) => s.items.map((i) => i.deploymentLogs.seq);

  it('every subscriber gets every seq exactly once, in order, with no gaps', async () => {
    const d = await deploy(t.url, owner, slug);
    const writer = t.gateway.services.deployments.writer;
    await writer.open(d.id);

    const client = wsClient(t.url, owner.token);
    try {
      const BATCHES = 40;
      const PER_BATCH = 50;
      const streams: Array<Collected<DeploymentLogStreamSubscription>> = [];
      let build: Collected<DeploymentLogStreamSubscription> | null = null;
      let runtime: Collected<DeploymentLogStreamSubscription> | null = null;
      for (let b = 0; b < BATCHES; b++) {
        // Subscribe at several points, each with stored lines to replay and more being written.
        if (b % 10 === 2) streams.push(collect(client, DeploymentLogStreamDocument, { id: d.id }));
        if (b === 5) build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
        if (b === 15) runtime = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'RUNTIME' });
        for (let i = 0; i < PER_BATCH; i++) writer.append(d.id, LogType.RUNTIME, `seam line ${b}.${i}`);
        // Half the batches are stored before the next one starts; the rest pile up behind them.
        if (b % 2 === 0) await writer.flush();
        else await new Promise((resolve) => setImmediate(resolve));
      }
      await writer.flush();
      const late = collect(client, DeploymentLogStreamDocument, { id: d.id });
      streams.push(late);

      // The build still runs; once it is live, the runtime writes its go-live lines and stops writing.
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
      for (const s of streams) await waitForItem(s, (i) => i.deploymentLogs.message === 'Listening on port 8080');
      await build!.done;

      const all = await storedSeqs(d.id);
      expect(all.length).toBeGreaterThanOrEqual(BATCHES * PER_BATCH + 7);
      expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
      for (const s of streams) {
        await s.waitFor(all.length);
        expect(seqsOf(s)).toEqual(all);
        expect(s.errors).toEqual([]);
      }

      expect(seqsOf(build!)).toEqual(await storedSeqs(d.id, 'build'));
      expect(build!.items.at(-1)!.deploymentLogs.message).toBe('==> Build succeeded');

      const runtimeSeqs = await storedSeqs(d.id, 'runtime');
      await runtime!.waitFor(runtimeSeqs.length);
      expect(seqsOf(runtime!)).toEqual(runtimeSeqs);

      // What the streams carried is what is stored, line for line.
      const messages = (await t.gateway.ds.query('SELECT message FROM log_lines WHERE deployment_id = $1 ORDER BY seq', [d.id])).map(
        (r: { message: string }) => r.message,
      );
      expect(streams[0].items.map((i) => i.deploymentLogs.message)).toEqual(messages);
      for (const s of [...streams, runtime!]) s.unsubscribe();
    } finally {
      await client.dispose();
    }
  });
});
