import { AppResourcesDocument, DeploymentLogStreamDocument } from '../../src/client/generated';
import { collect, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, settle } from '../support/factories';
import { waitForItem } from '../deployments/helpers';
import { eggWithPeople } from './helpers';

/** Eggs serve a request every 100 ms; a free egg sleeps after 200 ms awake and wakes on the next request. */
describe('a sleeping egg wakes with the memory it has then', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_RUNTIME_LOG_MS: '100', HATCHERY_SIM_SLEEP_AFTER_MS: '200' });
  });
  afterAll(() => t.stop());

  it('a free egg sleeps; after a PATCH it wakes with the new memory, and the deployment reports it', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const d = await deploy(t.url, owner, slug);
    expect(d.memoryMb).toBe(256);
    const client = wsClient(t.url, owner.token);
    try {
      const logs = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'RUNTIME' });
      expect(await settle(t.url, owner, d.id)).toBe('LIVE');
      const message = (i: (typeof logs.items)[number]) => i.deploymentLogs.message;

      /** Waits for the n-th line matching `match`, counting from the start of the stream. */
      const nth = (n: number, match: (m: string) => boolean) => {
        let seen = 0;
        return waitForItem(logs, (i) => match(message(i)) && ++seen >= n);
      };
      const sleeping = (m: string) => m === `Sleeping: ${slug} was idle`;

      await nth(1, (m) => m === `Starting ${slug} with 256 MB of memory`);
      await nth(1, sleeping);
      // Without a change it wakes with what it had, and goes to sleep again.
      await nth(1, (m) => m.startsWith(`Waking ${slug}`));
      await nth(2, sleeping);
      expect((await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).body.memory_mb).toBe(256);

      const beforePatch = logs.items.length;
      const patched = await rest(t.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { memory_mb: 320 });
      expect(patched.status).toBe(200);
      const wakesBefore = logs.items
        .slice(0, beforePatch)
        .map(message)
        .filter((m) => m.startsWith('Waking '));
      expect(wakesBefore.length).toBeGreaterThan(0);
      expect(wakesBefore.every((m) => m === `Waking ${slug} with 256 MB of memory`)).toBe(true);

      const items = await waitForItem(logs, (i) => message(i) === `Waking ${slug} with 320 MB of memory`);
      const wakes = items.map(message).filter((m) => m.startsWith('Waking '));
      expect(wakes.every((m) => /^Waking .* with (256|320) MB of memory$/.test(m))).toBe(true);
      logs.unsubscribe();
    } finally {
      await client.dispose();
    }

    const res = await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: d.id, status: 'live', memory_mb: 320 });
    const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
    expect(app.currentDeployment).toEqual({ id: d.id, memoryMb: 320 });
  });

  it('an always_on egg never sleeps', async () => {
    const { owner, slug } = await eggWithPeople(t, { tier: 'always_on' });
    const d = await deploy(t.url, owner, slug);
    const client = wsClient(t.url, owner.token);
    try {
      const logs = collect(client, DeploymentLogStreamDocument, { id: d.id, type: 'RUNTIME' });
      let healthz = 0;
      const items = await waitForItem(logs, (i) => i.deploymentLogs.message.startsWith('GET /healthz') && ++healthz >= 10);
      const messages = items.map((i) => i.deploymentLogs.message);
      expect(messages[0]).toBe(`Starting ${slug} with 512 MB of memory`);
      expect(messages.filter((m) => m.startsWith('Sleeping') || m.startsWith('Waking'))).toEqual([]);
      logs.unsubscribe();
    } finally {
      await client.dispose();
    }
  });
});
