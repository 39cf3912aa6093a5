import { rmSync } from 'node:fs';
import { WebhooksDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { Receiver } from '../webhooks/helpers';
import { CliEnv, CliResult, hatch, parseTable, stopAllClis, tempDir } from './helpers';

jest.setTimeout(60_000);

function ok(r: CliResult): CliResult {
  if (r.code !== 0) throw new Error(`hatch exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  expect(r.stdout).not.toMatch(/\x1b|\r/); // eslint-disable-line no-control-regex -- the escape codes a terminal gets are what is checked
  return r;
}

describe('hatch webhooks <app> --json', () => {
  let t: TestGateway;
  let receiver: Receiver;
  let configDir: string;

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid,127.0.0.1', HATCHERY_WEBHOOK_CA_FILE: receiver.certFile });
    configDir = tempDir();
  });
  afterEach(() => stopAllClis());
  afterAll(async () => {
    await t.stop();
    await receiver.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  it('prints the server’s webhooks as a JSON array (no secrets) that matches the table row for row', async () => {
    const user = await makeUser(t.gateway);
    const env: CliEnv = { apiUrl: t.url, token: user.token, configDir };
    const slug = (await makeApp(t.url, user)).slug;
    expect(JSON.parse(ok(await hatch(env, ['webhooks', slug, '--json'])).stdout)).toEqual([]);

    const pinged = JSON.parse(ok(await hatch(env, ['webhooks', 'create', slug, receiver.url('/json-ok'), '--json'])).stdout);
    const idle = JSON.parse(ok(await hatch(env, ['webhooks', 'create', slug, 'https://hooks.invalid/json', '--events', 'deploy', '--json'])).stdout);
    receiver.reply('/json-ok', { status: 204 });
    ok(await hatch(env, ['webhooks', 'test', slug, pinged.webhook.id]));

    const listed = JSON.parse(ok(await hatch(env, ['webhooks', slug, '--json'])).stdout) as Array<Record<string, any>>;
    // Exactly what the server has, field for field: ids, urls, events, state, last delivery.
    const { webhooks } = await gqlOk(t.url, user.token, WebhooksDocument, { app: slug });
    expect(listed).toEqual(webhooks);
    expect(listed.map((w) => w.id).sort()).toEqual([pinged.webhook.id, idle.webhook.id].sort());
    const byId = new Map(listed.map((w) => [w.id, w]));
    expect(byId.get(pinged.webhook.id)).toMatchObject({
      url: receiver.url('/json-ok'),
      events: ['deploy'],
      active: true,
      disabledReason: null,
      lastDelivery: { event: 'ping', status: 'SUCCEEDED', responseStatus: 204 },
    });
    expect(byId.get(idle.webhook.id)).toMatchObject({ url: 'https://hooks.invalid/json', events: ['deploy'], active: true, lastDelivery: null });
    // The signing secret is shown once, at creation; the listing never carries it.
    for (const w of listed) expect(Object.keys(w)).not.toContain('secret');
    expect(JSON.stringify(listed)).not.toContain(pinged.secret);

    // The table shows the same webhooks.
    const rows = parseTable(ok(await hatch(env, ['webhooks', slug])).stdout);
    expect(rows.map((r) => [r.ID, r.URL, r.EVENTS, r.ACTIVE]).sort()).toEqual(
      listed.map((w) => [w.id, w.url, w.events.join(','), w.active ? 'yes' : 'no']).sort(),
    );
    expect(rows.find((r) => r.ID === pinged.webhook.id)!['LAST DELIVERY']).toBe(`succeeded 204 ${byId.get(pinged.webhook.id)!.lastDelivery.lastAttemptAt}`);

    // `webhooks list <app> --json` is the same listing.
    expect(JSON.parse(ok(await hatch(env, ['webhooks', 'list', slug, '--json'])).stdout)).toEqual(listed);
  });
});
