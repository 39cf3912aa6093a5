import { print } from 'graphql';
import { Client as WsClient } from 'graphql-ws';
import { DeleteDeploymentDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { openStream, runWs } from './helpers';

/** At most 3 operations at once per graphql-ws connection (HATCHERY_WS_MAX_SUBSCRIPTIONS). */
const MAX = 3;
const STATUS = print(DeploymentStatusDocument);

describe('concurrent operations per graphql-ws connection', () => {
  let t: TestGateway;
  let user: TestUser;
  let id: string;
  const clients: WsClient[] = [];
  const connect = () => {
    const c = wsClient(t.url, user.token);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WS_MAX_SUBSCRIPTIONS: String(MAX) });
    user = await makeUser(t.gateway);
    const app = await makeApp(t.url, user);
    id = (await deploy(t.url, user, app.slug)).id;
    await settle(t.url, user, id);
  });
  afterAll(async () => {
    await Promise.all(clients.map(async (c) => c.dispose()));
    await t?.stop();
  });

  it(`accepts ${MAX}, refuses the next with LIMIT_EXCEEDED while they run, and accepts again once one completes`, async () => {
    const client = connect();
    const streams = Array.from({ length: MAX }, () => openStream(client, STATUS, { id }));
    for (const s of streams) expect(await s.first).toMatchObject({ data: { deploymentStatus: { id, status: 'LIVE' } } });

    const refused = openStream(client, STATUS, { id });
    expect(await refused.ended).toEqual({
      errors: [
        {
          message: `At most ${MAX} operations run at once on one connection; complete one first`,
          extensions: { code: 'LIMIT_EXCEEDED', limit: 'subscriptions', max: MAX, requestId: expect.stringMatching(/^req_/) },
        },
      ],
    });
    // A query counts while it runs, too.
    expect((await runWs(client, '{ viewer { id } }')).errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');

    streams[0].unsubscribe();
    const again = openStream(client, STATUS, { id });
    expect(await again.first).toMatchObject({ data: { deploymentStatus: { id } } });
    expect((await runWs(client, '{ viewer { id } }')).errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');

    // Another connection has its own allowance.
    const other = connect();
    const elsewhere = openStream(other, STATUS, { id });
    expect(await elsewhere.first).toMatchObject({ data: { deploymentStatus: { id } } });
    elsewhere.unsubscribe();

    // The refused ones left the others streaming: deleting the deployment completes each of them.
    await gqlOk(t.url, user.token, DeleteDeploymentDocument, { id });
    for (const s of [streams[1], streams[2], again]) expect(await s.ended).toEqual({ completed: true });
    expect((await runWs(client, '{ viewer { id } }')).data).toEqual({ viewer: { id: user.id } });
  });
});
