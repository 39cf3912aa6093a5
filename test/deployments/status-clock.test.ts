import { ManualClock } from '../../src/clock';
import { DeploymentLogStreamDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { collect, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser } from '../support/factories';

/**
 * deploymentStatus sends "the current state at once, then every change". A change must reach the
 * stream however the clock moved: here the gateway's clock stands still, so BUILDING and LIVE
 * carry the same updatedAt (as after a clock step back, or two changes in one millisecond).
 */
describe('deploymentStatus with a clock that does not move', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({}, { clock: new ManualClock('2026-11-20T12:00:00.000Z') });
  });
  afterAll(() => t.stop());

  it('still delivers BUILDING → LIVE', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const d = await deploy(t.url, owner, slug);
    const client = wsClient(t.url, owner.token);
    try {
      const status = collect(client, DeploymentStatusDocument, { id: d.id });
      const build = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'BUILD' });
      const [first] = await status.waitFor(1);
      expect(first.deploymentStatus.status).toBe('BUILDING');
      // The BUILD stream completes when the build ends.
      await build.done;
      expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).body.status).toBe('live');

      // Deleting completes the status stream; the LIVE change precedes the deletion on it.
      expect((await rest(t.url, owner.token, 'DELETE', `/deployments/${d.id}`)).status).toBe(204);
      await status.done;
      expect(status.items.map((i) => i.deploymentStatus.status)).toEqual(['BUILDING', 'LIVE']);
    } finally {
      await client.dispose();
    }
  });
});
