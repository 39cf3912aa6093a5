import WebSocket from 'ws';
import { makeUser } from '../support/factories';
import { startGateway, TestGateway } from '../support/gateway';
import { wsText } from '../support/ws-text';

describe('graphql-ws keep-alive', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WS_KEEPALIVE_MS: '1000' });
  });
  afterAll(() => t.stop());

  it('pings idle connections so proxies keep them open', async () => {
    const user = await makeUser(t.gateway);
    const ws = new WebSocket(t.url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws');
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } }));
    const ack = await new Promise<string>((resolve) => ws.once('message', (m) => resolve(wsText(m))));
    expect(JSON.parse(ack).type).toBe('connection_ack');
    await new Promise<void>((resolve) => ws.once('ping', () => resolve()));
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });
});
