import { buildApp, Gateway } from '../../src/app';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle } from '../support/factories';
import { createWebhook, deliveriesOf, expectSigned, listWebhooks, Receiver } from './helpers';

/**
 * The transactional outbox: deploy events are rows written with the status change. Gateway A
 * never sends (HATCHERY_WEBHOOK_WORKER off), like a gateway that crashed right after commit;
 * the gateways started after it on the same database send what it left, each event once.
 */
describe('webhook outbox survives a crash', () => {
  let receiver: Receiver;
  let t: TestGateway;
  let aStopped = false;
  const others: Gateway[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startGateway({
      HATCHERY_WEBHOOK_WORKER: 'off',
      HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      HATCHERY_WEBHOOK_CA_FILE: receiver.certFile,
      HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m',
    });
  });
  afterAll(async () => {
    for (const g of others) await g.stop();
    if (aStopped) await t.db.drop();
    else await t.stop();
    await receiver.stop();
  });

  it('events written by a gateway that never sent them are delivered by the next gateways, signed, each webhook-id once', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const path = '/outbox';
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');

    // Committed with the status changes: one pending row per change, never attempted, nothing sent.
    const rows: Array<{ id: string; message_id: string; payload: string; status: string; attempts: number; last_attempt_at: Date | null }> =
      await t.gateway.ds.query('SELECT * FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id', [hook.id]);
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r).toMatchObject({ status: 'pending', attempts: 0, last_attempt_at: null });
    expect(rows.map((r) => JSON.parse(r.payload).data.deployment.status).sort()).toEqual(['building', 'live']);
    expect(new Set(rows.map((r) => r.message_id)).size).toBe(2);
    expect((await deliveriesOf(t, owner.token, slug, hook.id)).map((x) => [x.status, x.attempts])).toEqual([
      ['PENDING', 0],
      ['PENDING', 0],
    ]);
    expect((await listWebhooks(t, owner.token, slug)).body.data[0].last_delivery).toBeNull();
    expect(receiver.received(path)).toEqual([]);

    // A goes away; two gateways start on the same database with their workers on, at once.
    await t.gateway.stop();
    aStopped = true;
    const config = { ...t.config, webhooks: { ...t.config.webhooks, worker: true } };
    const b = buildApp(config);
    const c = buildApp(config);
    others.push(b, c);
    await Promise.all([b.start(0), c.start(0)]);

    const got = await receiver.waitFor(path, 2);
    for (const r of got) expectSigned(hook.secret, r);
    expect(got.map((r) => r.headers['webhook-id']).sort()).toEqual(rows.map((r) => r.message_id).sort());
    expect(got.map((r) => r.body).sort()).toEqual(rows.map((r) => r.payload).sort());

    // Once both are recorded as delivered, nothing can send them again: each arrived exactly once.
    let after: Array<{ status: string; attempts: number }> = [];
    for (let i = 0; i < 400; i++) {
      after = await b.ds.query('SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = $1', [hook.id]);
      if (after.every((r) => r.status !== 'pending')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(after).toEqual([
      { status: 'succeeded', attempts: 1 },
      { status: 'succeeded', attempts: 1 },
    ]);
    expect(receiver.received(path)).toHaveLength(2);
    // A later sweep by either gateway finds nothing left to send.
    expect(await b.services.webhooks.deliverDue()).toBe(0);
    expect(await c.services.webhooks.deliverDue()).toBe(0);
    expect(receiver.received(path)).toHaveLength(2);
  });
});
