import WebSocket from 'ws';
import { liveDeployment } from '../support/factories';
import { startGateway, TestGateway } from '../support/gateway';
import { wsText } from '../support/ws-text';

/**
 * graphql-ws 6 lost a subscription whose id the client completed and subscribed again at once (the
 * completed operation's `finally` deleted the new one's entry, and told the client "complete" for
 * it): src/http/ws-operation-ids.ts holds such a subscribe until the old operation has ended.
 */

/** graphql-ws messages as they arrive on one raw socket, awaited by predicate. */
function rawClient(url: string, token: string) {
  const socket = new WebSocket(url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
  const seen: Array<{ id?: string; type: string; payload?: any }> = [];
  const waiters: Array<() => void> = [];
  socket.on('message', (data) => {
    seen.push(JSON.parse(wsText(data)));
    for (const w of waiters.splice(0)) w();
  });
  const until = (what: string, test: (m: (typeof seen)[number]) => boolean, from = 0) =>
    new Promise<(typeof seen)[number]>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`no ${what} in 10 s; seen ${JSON.stringify(seen)}`)), 10_000);
      const look = () => {
        const found = seen.slice(from).find(test);
        if (found) {
          clearTimeout(timer);
          done(found);
        } else waiters.push(look);
      };
      look();
    });
  return {
    socket,
    seen,
    until,
    send: (...messages: object[]) => {
      for (const m of messages) socket.send(JSON.stringify(m));
    },
    open: async () => {
      await new Promise((done) => socket.once('open', done));
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }));
      await until('connection_ack', (m) => m.type === 'connection_ack');
    },
  };
}

describe('graphql-ws: an operation id completed and subscribed again at once', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('the new subscription under the old id runs (its first result arrives), however quickly it follows the complete', async () => {
    const { id, user } = await liveDeployment(t);
    const client = rawClient(t.url, user.token);
    await client.open();
    const subscribe = { id: '1', type: 'subscribe', payload: { query: `subscription { deploymentStatus(id: "${id}") { id status } }` } };
    try {
      for (let round = 0; round < 20; round++) {
        const from = client.seen.length;
        if (round === 0) client.send(subscribe);
        else client.send({ id: '1', type: 'complete' }, subscribe);
        const next = await client.until(`round ${round}'s first result`, (m) => m.id === '1' && m.type === 'next', from);
        expect(next.payload.data.deploymentStatus).toEqual({ id, status: 'LIVE' });
      }
      // The server never says "complete" for an operation the client completed itself (graphql-ws did, for the new one).
      expect(client.seen.filter((m) => m.type === 'complete')).toEqual([]);
    } finally {
      client.socket.close();
    }
  }, 60_000);

  it('what follows a subscribe that waits keeps its order: complete, subscribe, complete, subscribe and a ping in one burst', async () => {
    const { id, user } = await liveDeployment(t);
    const client = rawClient(t.url, user.token);
    await client.open();
    const subscribe = { id: 'a', type: 'subscribe', payload: { query: `subscription { deploymentStatus(id: "${id}") { status } }` } };
    try {
      client.send(subscribe);
      await client.until('the first result', (m) => m.id === 'a' && m.type === 'next');
      const from = client.seen.length;
      client.send({ id: 'a', type: 'complete' }, subscribe, { id: 'a', type: 'complete' }, subscribe, { type: 'ping' });
      await client.until('the pong, after the held messages', (m) => m.type === 'pong', from);
      await client.until('a result of the last subscription', (m) => m.id === 'a' && m.type === 'next', from);
      // The last one runs: completed and subscribed again, it answers again.
      const again = client.seen.length;
      client.send({ id: 'a', type: 'complete' }, subscribe);
      expect((await client.until('the next result', (m) => m.id === 'a' && m.type === 'next', again)).payload.data).toEqual({
        deploymentStatus: { status: 'LIVE' },
      });
      expect(client.seen.filter((m) => m.type === 'complete' || m.type === 'error')).toEqual([]);
      // Nothing refused as "Subscriber for a already exists" (4409): the socket is open.
      expect(client.socket.readyState).toBe(WebSocket.OPEN);
    } finally {
      client.socket.close();
    }
  }, 60_000);
});
