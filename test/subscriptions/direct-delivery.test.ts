import { print } from 'graphql';
import WebSocket from 'ws';
import { DeploymentLogBatchStreamDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { collect, startGateway, TestGateway, wsClient } from '../support/gateway';
import { liveDeployment, makeUser, TestUser } from '../support/factories';
import { scrape } from '../metrics/prom';
import { wsText } from '../support/ws-text';

/**
 * Live log batches written straight to each subscriber's socket as they are stored (`DIRECT`,
 * src/bus/pubsub.ts), through a real gateway and real graphql-ws clients: every line reaches every
 * subscriber once and in order, whether it joined before the lines, during them or after some
 * were stored (a replay through graphql-ws first, then live lines directly); a subscription that
 * ends gets nothing more.
 */
const MESSAGES = 'hatchery_graphql_subscription_messages_total';

describe('direct delivery of live log batches over graphql-ws', () => {
  let t: TestGateway;
  let user: TestUser;
  beforeAll(async () => {
    t = await startGateway();
    user = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  /** A LIVE deployment of the user's, its writer opened. */
  async function following() {
    const { id } = await liveDeployment(t, user);
    await t.gateway.services.deployments.writer.open(id);
    return id;
  }

  /** Writes `n` runtime lines `tag 0` … in flushes of `per`, each flush stored (and published) before the next. */
  async function write(id: string, tag: string, n: number, per: number) {
    const writer = t.gateway.services.deployments.writer;
    for (let i = 0; i < n; i += per) {
      for (let j = i; j < Math.min(n, i + per); j++) writer.append(id, LogType.RUNTIME, `${tag} ${j}`);
      await writer.flush();
    }
  }

  /** The messages of `tag` a subscriber's batches carried, in order, and their seqs. */
  const tagged = (items: Array<{ deploymentLogBatches: Array<{ seq: number; message: string }> }>, tag: string) => {
    const lines = items.flatMap((i) => i.deploymentLogBatches);
    const seqs = lines.map((l) => l.seq);
    return { messages: lines.map((l) => l.message).filter((m) => m.startsWith(`${tag} `)), seqs };
  };

  it('every line to every subscriber once, in order: joined before, during and after the writing, directly once caught up', async () => {
    const id = await following();
    const before = await scrape(t.url);
    const clients = Array.from({ length: 4 }, () => wsClient(t.url, user.token));
    // One follows the runtime lines only (a filter every live line passes), the others every line.
    const early = [
      collect(clients[0], DeploymentLogBatchStreamDocument, { id, type: 'RUNTIME' }),
      collect(clients[1], DeploymentLogBatchStreamDocument, { id }),
    ];
    // Subscribed: the go-live lines ("Starting …", "Listening …") arrive first.
    for (const s of early) await s.waitFor(1);
    await write(id, 'first', 300, 10);
    // One more joins with 300 lines stored: its replay comes through graphql-ws, then it follows.
    const late = collect(clients[2], DeploymentLogBatchStreamDocument, { id });
    const joining = write(id, 'second', 300, 10);
    const during = collect(clients[3], DeploymentLogBatchStreamDocument, { id });
    await joining;
    const expected = [...Array.from({ length: 300 }, (_, i) => `first ${i}`), ...Array.from({ length: 300 }, (_, i) => `second ${i}`)];
    for (const s of [...early, late, during]) {
      for (;;) {
        const got = tagged(s.items, 'second');
        if (got.messages.length >= 300) break;
        await s.waitFor(s.items.length + 1);
      }
      if (s !== early[0]) {
        // Every seq from the first: nothing lost or repeated at the seam.
        const { seqs } = tagged(s.items, '');
        expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      }
      const all = s.items.flatMap((i) => i.deploymentLogBatches.map((l) => l.message)).filter((m) => /^(first|second) /.test(m));
      expect(all).toEqual(expected);
      expect(s.errors).toEqual([]);
    }
    const after = await scrape(t.url);
    // Most of the 60 flushes went to the early subscribers directly; the late one's replay did not.
    expect(after.value(MESSAGES, { delivery: 'direct' }) - before.value(MESSAGES, { delivery: 'direct' })).toBeGreaterThanOrEqual(60);
    expect(after.value(MESSAGES, { delivery: 'loop' }) - before.value(MESSAGES, { delivery: 'loop' })).toBeGreaterThanOrEqual(1);
    for (const s of [...early, late, during]) s.unsubscribe();
    for (const c of clients) await c.dispose();
  });

  it('a subscription that ends gets nothing more, while the connection follows another', async () => {
    const a = await following();
    const b = await following();
    const socket = new WebSocket(t.url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws');
    const messages: Array<{ id?: string; type: string; payload?: { data?: { deploymentLogBatches: Array<{ message: string }> } } }> = [];
    const arrived: Array<() => void> = [];
    socket.on('message', (m) => {
      messages.push(JSON.parse(wsText(m)));
      for (const wake of arrived.splice(0)) wake();
    });
    const until = async (cond: () => boolean) => {
      while (!cond()) await new Promise<void>((resolve) => arrived.push(resolve));
    };
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } }));
    await until(() => messages.some((m) => m.type === 'connection_ack'));
    const subscribe = (id: string, deployment: string) =>
      socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: print(DeploymentLogBatchStreamDocument), variables: { id: deployment } } }));
    const linesOf = (tag: string) =>
      messages.flatMap((m) => (m.type === 'next' ? (m.payload?.data?.deploymentLogBatches ?? []) : [])).filter((l) => l.message.startsWith(tag));

    subscribe('1', a);
    await write(a, 'a-before', 5, 5);
    await until(() => linesOf('a-before').length === 5);
    // Caught up: A's next batch is written directly.
    const direct = async () => (await scrape(t.url)).value(MESSAGES, { delivery: 'direct' });
    const before = await direct();
    await write(a, 'a-mid', 5, 5);
    await until(() => linesOf('a-mid').length === 5);
    expect(await direct()).toBe(before + 1);
    // End it, and follow B on the same connection.
    socket.send(JSON.stringify({ id: '1', type: 'complete' }));
    subscribe('2', b);
    await write(a, 'a-after', 20, 5);
    await write(b, 'b-lines', 20, 5);
    await until(() => linesOf('b-lines').length === 20);
    expect(linesOf('a-after')).toEqual([]);
    expect(linesOf('b-lines').map((l) => l.message)).toEqual(Array.from({ length: 20 }, (_, i) => `b-lines ${i}`));
    socket.close();
  });
});
