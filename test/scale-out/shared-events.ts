import { DeploymentLogStreamDocument, DeploymentLogStreamSubscription, DeploymentStatusDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { Collected, collect, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { Pair, seqsOf, startPair, waitForItem } from './helpers';

export interface TransportCase {
  /** Extra gateway env (REDIS_URL…). */
  env: Record<string, string>;
  /** How many gateways listen on the shared channel right now. */
  listeners(pair: Pair): Promise<number>;
  /** Cuts every gateway's listening connection, as a network fault or a server restart would. */
  cutListeners(pair: Pair): Promise<void>;
}

/**
 * A subscriber connected to gateway B gets what gateway A produces: status changes, log lines
 * (gapless at the replay/live seam), and events larger than a NOTIFY payload.
 */
export function describeSharedEvents(name: string, tc: TransportCase): void {
  describe(name, () => {
    let pair: Pair;
    let owner: TestUser;
    let slug: string;

    beforeAll(async () => {
      // Builds last long enough for B's subscribers to be there before they end.
      pair = await startPair({ HATCHERY_SIM_BUILD_MS: '1500', ...tc.env });
      owner = await makeUser(pair.a);
      slug = (await makeApp(pair.aUrl, owner)).slug;
    });
    afterAll(() => pair.stop());

    const stored = async (id: string): Promise<Array<{ seq: number; message: string }>> =>
      pair.a.ds.query('SELECT seq, message FROM log_lines WHERE deployment_id = $1 ORDER BY seq', [id]);

    /** A deployment whose build failed: nothing else writes its log, so the test's writes are the only ones. */
    const failedDeployment = async () => {
      const d = await deploy(pair.aUrl, owner, slug, { HATCHERY_SIMULATE: 'fail' });
      expect(await settle(pair.aUrl, owner, d.id)).toBe('FAILED');
      return d;
    };

    it('every gateway listens on the shared channel', async () => {
      expect(await tc.listeners(pair)).toBe(2);
    });

    it('a subscriber on B gets the status changes and log lines of a deployment deployed through A', async () => {
      const d = await deploy(pair.aUrl, owner, slug);
      const client = wsClient(pair.bUrl, owner.token);
      try {
        const status = collect(client, DeploymentStatusDocument, { id: d.id });
        const build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
        const all = collect(client, DeploymentLogStreamDocument, { id: d.id });
        expect((await status.waitFor(1))[0].deploymentStatus.status).toBe('BUILDING');

        // The BUILD stream ends with the build: B learns of that only from A's status event.
        await build.done;
        await waitForItem(status, (s) => s.deploymentStatus.status !== 'BUILDING');
        expect(status.items.map((s) => s.deploymentStatus.status)).toEqual(['BUILDING', 'LIVE']);
        const live = status.items[1].deploymentStatus;
        expect(live.finishedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(live.failureReason).toBeNull();

        // The egg's runtime goes on writing after the build; its lines reach B live too.
        await waitForItem(all, (i) => i.deploymentLogs.message === 'Listening on port 8080');
        const lines = await stored(d.id);
        const buildLines = (await pair.a.ds.query(`SELECT seq FROM log_lines WHERE deployment_id = $1 AND type = 'build' ORDER BY seq`, [d.id])).map(
          (r: { seq: number }) => r.seq,
        );
        expect(seqsOf(build)).toEqual(buildLines);
        expect(build.items.at(-1)!.deploymentLogs.message).toBe('==> Build succeeded');
        expect(all.items.map((i) => i.deploymentLogs.message)).toEqual(lines.slice(0, all.items.length).map((l) => l.message));
        for (const s of [status, build, all]) expect(s.errors).toEqual([]);
        status.unsubscribe();
        all.unsubscribe();
      } finally {
        await client.dispose();
      }
    });

    it('lines written through A while subscribers on B replay and go live: every seq exactly once, in order', async () => {
      const d = await failedDeployment();
      const writer = pair.a.services.deployments.writer;
      await writer.open(d.id);
      const client = wsClient(pair.bUrl, owner.token);
      try {
        const streams: Array<Collected<DeploymentLogStreamSubscription>> = [];
        const BATCHES = 24;
        for (let b = 0; b < BATCHES; b++) {
          // Subscribers join at several points, each with stored lines to replay and more coming.
          if (b % 8 === 1) streams.push(collect(client, DeploymentLogStreamDocument, { id: d.id }));
          for (let i = 0; i < 30; i++) writer.append(d.id, LogType.RUNTIME, `line ${b}.${i}`);
          if (b % 2 === 0) await writer.flush();
          else await new Promise((resolve) => setImmediate(resolve));
          // Keep writing until the first subscriber has started receiving: it straddles the seam.
          if (b === BATCHES - 1 && streams[0].items.length === 0) b--;
        }
        await writer.flush();
        streams.push(collect(client, DeploymentLogStreamDocument, { id: d.id }));

        const lines = await stored(d.id);
        expect(lines.length).toBeGreaterThanOrEqual(BATCHES * 30);
        expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: lines.length }, (_, i) => i + 1));
        for (const s of streams) {
          await s.waitFor(lines.length);
          expect(seqsOf(s)).toEqual(lines.map((l) => l.seq));
          expect(s.items.map((i) => i.deploymentLogs.message)).toEqual(lines.map((l) => l.message));
          expect(s.errors).toEqual([]);
        }

        // And the streams stay live: a line written now reaches every one of them, once.
        writer.append(d.id, LogType.RUNTIME, 'one more');
        await writer.flush();
        for (const s of streams) {
          const items = await s.waitFor(lines.length + 1);
          expect(items.at(-1)!.deploymentLogs).toMatchObject({ seq: lines.length + 1, message: 'one more', type: 'RUNTIME' });
        }
        for (const s of streams) s.unsubscribe();
        expect(streams.flatMap((s) => s.items).length).toBe(streams.length * (lines.length + 1));
      } finally {
        await client.dispose();
      }
    });

    it('what B missed while its listening connection was cut reaches its subscribers once it listens again', async () => {
      const d = await failedDeployment();
      const writer = pair.a.services.deployments.writer;
      await writer.open(d.id);
      const client = wsClient(pair.bUrl, owner.token);
      try {
        const logs = collect(client, DeploymentLogStreamDocument, { id: d.id });
        const status = collect(client, DeploymentStatusDocument, { id: d.id });
        writer.append(d.id, LogType.RUNTIME, 'heard');
        await writer.flush();
        await waitForItem(logs, (i) => i.deploymentLogs.message === 'heard');
        const [failed] = await status.waitFor(1);

        // What A sends before B listens again never reaches B as events: a status change and lines.
        await tc.cutListeners(pair);
        await pair.a.services.deployments.applyEffectiveMemory(d.id);
        for (let i = 0; i < 20; i++) writer.append(d.id, LogType.RUNTIME, `missed ${i}`);
        await writer.flush();

        // B's subscribers look at storage once B listens again, with nothing more sent.
        const lines = await stored(d.id);
        await logs.waitFor(lines.length);
        expect(seqsOf(logs)).toEqual(lines.map((l) => l.seq));
        expect(logs.items.map((i) => i.deploymentLogs.message)).toEqual(lines.map((l) => l.message));
        const [, changed] = await status.waitFor(2);
        expect(changed.deploymentStatus.status).toBe('FAILED');
        expect(new Date(changed.deploymentStatus.updatedAt).getTime()).toBeGreaterThan(new Date(failed.deploymentStatus.updatedAt).getTime());
        expect(await tc.listeners(pair)).toBe(2);

        // And live again, exactly once.
        writer.append(d.id, LogType.RUNTIME, 'heard again');
        await writer.flush();
        const items = await logs.waitFor(lines.length + 1);
        expect(items.at(-1)!.deploymentLogs).toMatchObject({ seq: lines.length + 1, message: 'heard again' });
        expect(status.items).toHaveLength(2);
        logs.unsubscribe();
        status.unsubscribe();
      } finally {
        await client.dispose();
      }
    });

    it('a 20 KB log line reaches B whole, in order with its neighbours; what travels is a reference to storage, not the line', async () => {
      const d = await failedDeployment();
      const writer = pair.a.services.deployments.writer;
      await writer.open(d.id);
      const before = (await stored(d.id)).length;
      const client = wsClient(pair.bUrl, owner.token);
      try {
        const stream = collect(client, DeploymentLogStreamDocument, { id: d.id });
        // Replayed everything stored: from here on it is live.
        await stream.waitFor(before);
        const marker = `big-${d.id}`;
        const big = `${marker} ${'é'.repeat(10_000)}`; // 20 KB in UTF-8, far beyond a notification
        writer.append(d.id, LogType.RUNTIME, 'before the big one');
        writer.append(d.id, LogType.RUNTIME, big);
        writer.append(d.id, LogType.RUNTIME, 'after the big one');
        await writer.flush();
        const items = await stream.waitFor(before + 3);
        expect(items.slice(before).map((i) => i.deploymentLogs)).toEqual([
          expect.objectContaining({ seq: before + 1, message: 'before the big one' }),
          expect.objectContaining({ seq: before + 2, message: big }),
          expect.objectContaining({ seq: before + 3, message: 'after the big one' }),
        ]);
        expect(Buffer.byteLength(items[before + 1].deploymentLogs.message)).toBeGreaterThan(20_000);
        // No copy of the line was stored for the trip (log_lines is where B read it).
        const copies: Array<{ n: number }> = await pair.a.ds.query(`SELECT count(*)::int AS n FROM event_payloads WHERE payload::text LIKE $1`, [
          `%${marker}%`,
        ]);
        expect(copies[0].n).toBe(0);
        stream.unsubscribe();
      } finally {
        await client.dispose();
      }
    });

    it('B reads a flushed batch from storage once for all its subscribers, and not at all without subscribers', async () => {
      const writer = pair.a.services.deployments.writer;
      /** B's reads of the lines `after < seq <= upTo` of a deployment (the expansion of a `stored` event). */
      const reads = (id: string, after: number, upTo: number) =>
        pair.bStatements.filter(
          ({ sql, parameters }) => /FROM "log_lines"/i.test(sql) && /"seq" <= /.test(sql) && JSON.stringify(parameters) === JSON.stringify([id, after, upTo]),
        ).length;

      // Nobody on B listens to this one: its batch costs B nothing.
      const unheard = await failedDeployment();
      await writer.open(unheard.id);
      const unheardBefore = (await stored(unheard.id)).length;
      writer.append(unheard.id, LogType.RUNTIME, 'unheard');
      await writer.flush();

      const d = await failedDeployment();
      await writer.open(d.id);
      const before = (await stored(d.id)).length;
      const client = wsClient(pair.bUrl, owner.token);
      try {
        const streams = [0, 1, 2].map(() => collect(client, DeploymentLogStreamDocument, { id: d.id }));
        for (const s of streams) await s.waitFor(before);
        writer.append(d.id, LogType.RUNTIME, 'one');
        writer.append(d.id, LogType.RUNTIME, 'two');
        await writer.flush();
        for (const s of streams) {
          const items = await s.waitFor(before + 2);
          expect(items.slice(before).map((i) => i.deploymentLogs.message)).toEqual(['one', 'two']);
        }
        expect(reads(d.id, before, before + 2)).toBe(1);
        // A sent the unheard batch's event first, so B has had it by now, and read nothing for it.
        expect(reads(unheard.id, unheardBefore, unheardBefore + 1)).toBe(0);
        for (const s of streams) s.unsubscribe();
      } finally {
        await client.dispose();
      }
    });
  });
}
