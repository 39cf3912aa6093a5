import { DeploymentLogBatchStreamDocument, DeploymentLogBatchStreamSubscription } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { collect, Collected, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { storedLines } from './helpers';

type Batches = Collected<DeploymentLogBatchStreamSubscription>;

/** Resolves once the batches received hold a line matching `match`. */
async function waitForLine(s: Batches, match: (l: DeploymentLogBatchStreamSubscription['deploymentLogBatches'][number]) => boolean) {
  for (let n = 1; ; n++) {
    const items = await s.waitFor(n);
    if (items[n - 1].deploymentLogBatches.some(match)) return items;
  }
}

/** Resolves once the batches received hold `count` lines in all. */
async function waitForLines(s: Batches, count: number) {
  for (let n = 1; ; n++) {
    const items = await s.waitFor(n);
    if (items.reduce((sum, i) => sum + i.deploymentLogBatches.length, 0) >= count) return items;
  }
}

const flat = (s: Batches) => s.items.flatMap((i) => i.deploymentLogBatches);

/**
 * deploymentLogBatches: the stream of deploymentLogs, several lines per message. Same lines, same
 * order, same seam guarantee and the same endings; only the packaging differs.
 */
describe('deploymentLogBatches', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '1500' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  const stored = (id: string, type?: string) => storedLines(t, id, type);

  it('carries every stored line exactly once, in order, replay then live, several lines per message', async () => {
    const d = await deploy(t.url, owner, slug);
    const writer = t.gateway.services.deployments.writer;
    await writer.open(d.id);
    const client = wsClient(t.url, owner.token);
    try {
      const streams: Batches[] = [];
      let build: Batches | null = null;
      let runtime: Batches | null = null;
      for (let b = 0; b < 30; b++) {
        // Subscribe at several points: each has stored lines to replay while more are written.
        if (b % 10 === 3) streams.push(collect(client, DeploymentLogBatchStreamDocument, { id: d.id }));
        if (b === 4) build = collect(client, DeploymentLogBatchStreamDocument, { id: d.id, type: 'BUILD' });
        if (b === 12) runtime = collect(client, DeploymentLogBatchStreamDocument, { id: d.id, type: 'RUNTIME' });
        for (let i = 0; i < 40; i++) writer.append(d.id, LogType.RUNTIME, `batch line ${b}.${i}`);
        if (b % 2 === 0) await writer.flush();
        else await new Promise((resolve) => setImmediate(resolve));
      }
      await writer.flush();
      streams.push(collect(client, DeploymentLogBatchStreamDocument, { id: d.id }));

      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
      for (const s of streams) await waitForLine(s, (l) => l.message === 'Listening on port 8080');
      // A BUILD stream completes with the build, as deploymentLogs does.
      await build!.done;

      const all = await stored(d.id);
      expect(all.map((l) => l.seq)).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
      for (const s of streams) {
        await waitForLines(s, all.length);
        expect(flat(s).map((l) => l.seq)).toEqual(all.map((l) => l.seq));
        expect(flat(s).map((l) => l.message)).toEqual(all.map((l) => l.message));
        expect(s.errors).toEqual([]);
        // Batched: far fewer messages than lines, and no empty message.
        expect(s.items.length).toBeLessThan(all.length / 5);
        expect(s.items.every((i) => i.deploymentLogBatches.length > 0)).toBe(true);
      }
      expect(flat(build!).map((l) => l.seq)).toEqual((await stored(d.id, 'build')).map((l) => l.seq));
      expect(flat(build!).every((l) => l.type === 'BUILD')).toBe(true);
      const runtimeLines = await stored(d.id, 'runtime');
      await waitForLines(runtime!, runtimeLines.length);
      expect(flat(runtime!).map((l) => l.seq)).toEqual(runtimeLines.map((l) => l.seq));
      for (const s of [...streams, runtime!]) s.unsubscribe();
    } finally {
      await client.dispose();
    }
  }, 60_000);

  it('a replay longer than one page arrives in pages of at most 500 lines', async () => {
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const writer = t.gateway.services.deployments.writer;
    await writer.open(d.id);
    for (let i = 0; i < 1200; i++) writer.append(d.id, LogType.RUNTIME, `replayed ${i}`);
    await writer.flush();
    const all = await stored(d.id);
    const client = wsClient(t.url, owner.token);
    try {
      const s = collect(client, DeploymentLogBatchStreamDocument, { id: d.id });
      await waitForLines(s, all.length);
      // The running egg may have written more since: those follow.
      expect(
        flat(s)
          .map((l) => l.seq)
          .slice(0, all.length),
      ).toEqual(all.map((l) => l.seq));
      expect(Math.max(...s.items.map((i) => i.deploymentLogBatches.length))).toBe(500);
      s.unsubscribe();
    } finally {
      await client.dispose();
    }
  }, 60_000);

  it('ends when the deployment is deleted, and refuses what deploymentLogs refuses', async () => {
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const stranger = await makeUser(t.gateway);
    const client = wsClient(t.url, owner.token);
    const other = wsClient(t.url, stranger.token);
    try {
      const s = collect(client, DeploymentLogBatchStreamDocument, { id: d.id });
      await waitForLine(s, (l) => l.message === 'Listening on port 8080');
      const hidden = collect(other, DeploymentLogBatchStreamDocument, { id: d.id });
      await hidden.done;
      expect(hidden.items).toEqual([]);
      expect(hidden.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'NOT_FOUND' }) })]);
      expect((await rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`)).status).toBe(204);
      await s.done;
    } finally {
      await client.dispose();
      await other.dispose();
    }
  }, 60_000);
});
