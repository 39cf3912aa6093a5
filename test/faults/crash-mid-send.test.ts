import { DataSource } from 'typeorm';
import { systemClock } from '../../src/clock';
import { createDataSource } from '../../src/data-source';
import { loadConfig } from '../../src/config';
import { AccountsService } from '../../src/modules/accounts/accounts.service';
import { createTestDatabase, TestDatabase } from '../support/db';
import { CreateAppDocument } from '../../src/client/generated';
import { gqlOk, rest } from '../support/gateway';
import { expectSigned, Receiver } from '../webhooks/helpers';
import { ChildGateway, childEnv, spawnGateway, until } from './helpers';

/**
 * The one place where a crash may make something happen twice, by design: a gateway process
 * killed (SIGKILL) while a webhook request is on the wire, before the receiver has answered.
 * The gateway cannot know whether the receiver acted on it, so the delivery stays claimed until
 * its lease lapses (HATCHERY_WEBHOOK_TIMEOUT_MS + HATCHERY_LEASE_MS after the claim), and then
 * another gateway sends it again: the same `webhook-id` and the same body, freshly signed, so a
 * receiver that drops repeats by `webhook-id` (as Standard Webhooks asks) acts once. Nothing is
 * lost, nothing is stuck, and nothing else is sent twice.
 */
describe('crash: SIGKILL while a webhook request is on the wire', () => {
  const PATH = '/mid-send';
  const TIMEOUT_MS = 5000; // A kill comes right after the request arrives; this only has to outlast that, on a busy machine too.
  const LEASE_MS = 1000;
  let db: TestDatabase;
  let ds: DataSource;
  let receiver: Receiver;
  const procs: ChildGateway[] = [];

  const common = () => ({
    HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    HATCHERY_WEBHOOK_CA_FILE: receiver.certFile,
    HATCHERY_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    HATCHERY_LEASE_MS: String(LEASE_MS),
    HATCHERY_RATE_LIMIT_PER_MIN: '1000000',
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource(db.url);
    await ds.initialize();
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    for (const p of procs) await p.kill('SIGKILL');
    await ds?.destroy();
    await receiver?.stop();
    await db?.drop();
  }, 30_000);

  it('sends the interrupted delivery again after its lease, with the same webhook-id and body, once more only', async () => {
    const token = (await new AccountsService(ds, systemClock, loadConfig({}).limits).createUser(`mid-send-${Date.now()}@example.com`)).token;
    // Gateway A sends webhooks; its builds take a minute, so the only event is BUILDING.
    const a = await spawnGateway(childEnv(db.url, { ...common(), HATCHERY_SIM_BUILD_MS: '60000' }));
    procs.push(a);
    const slug = (await gqlOk(a.url, token, CreateAppDocument, { slug: `mid-${Date.now().toString(36)}` })).createApp.slug;
    const created = await rest(a.url, token, 'POST', `/v1/apps/${slug}/webhooks`, { url: receiver.url(PATH), events: ['deploy'] });
    expect(created.status).toBe(201);
    const hook = { id: created.body.id as string, secret: created.body.secret as string };

    // The receiver takes the request and never answers; A is killed with the request open.
    receiver.reply(PATH, 'hang');
    const dep = await rest(a.url, token, 'POST', '/deploy', { project: slug });
    expect(dep.status).toBe(201);
    const [first] = await receiver.waitFor(PATH, 1);
    expect(await a.kill('SIGKILL')).toBe('SIGKILL');
    expectSigned(hook.secret, first);
    expect(first.json.data.deployment).toMatchObject({ id: dep.body.id, status: 'building' });

    // Claimed, attempted, never recorded: still pending, held by A's lease.
    const [held]: Array<{ id: string; message_id: string; status: string; attempts: number; lease_until: Date | null; payload: string }> = await ds.query(
      `SELECT id, message_id, status, attempts, lease_until, payload FROM webhook_deliveries WHERE webhook_id = $1`,
      [hook.id],
    );
    expect(held).toMatchObject({ status: 'pending', attempts: 0, message_id: first.headers['webhook-id'], payload: first.body });
    expect(held.lease_until).toBeInstanceOf(Date);
    const leaseEnd = held.lease_until!.getTime();
    // The lease is the send timeout plus HATCHERY_LEASE_MS from the claim, which came before the request arrived.
    expect(leaseEnd).toBeLessThanOrEqual(first.at + TIMEOUT_MS + LEASE_MS);
    expect(leaseEnd).toBeGreaterThan(first.at);

    // The receiver answers from now on. Gateway B starts once the lease has lapsed; its builds are quick.
    receiver.reply(PATH, { status: 204 });
    await until(
      'the lease of the dead sender to lapse',
      async () => (await ds.query(`SELECT lease_until < now() AS lapsed FROM webhook_deliveries WHERE id = $1`, [held.id]))[0].lapsed,
      1000,
      20,
    );
    const b = await spawnGateway(childEnv(db.url, { ...common(), HATCHERY_SIM_BUILD_MS: '200' }));
    procs.push(b);

    // The interrupted delivery arrives again (and the LIVE event of the resumed build, once).
    await receiver.waitFor(PATH, 3);
    await until('every delivery to be recorded', async () => {
      const rows: Array<{ status: string }> = await ds.query(`SELECT status FROM webhook_deliveries WHERE webhook_id = $1`, [hook.id]);
      return rows.length === 2 && rows.every((r) => r.status !== 'pending');
    });
    const got = receiver.received(PATH);
    for (const r of got) expectSigned(hook.secret, r);
    const building = got.filter((r) => r.json.data.deployment.status === 'building');
    expect(building).toHaveLength(2);
    const again = building[1];
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(again.body).toBe(first.body);
    expect(again.at).toBeGreaterThanOrEqual(leaseEnd);
    expect(got.filter((r) => r.json.data.deployment.status === 'live')).toHaveLength(1);
    expect(got).toHaveLength(3);

    // Recorded once each: the repeat counts as the delivery's first recorded attempt.
    const rows: Array<{ message_id: string; status: string; attempts: number; response_status: number; lease_until: Date | null }> = await ds.query(
      `SELECT message_id, status, attempts, response_status, lease_until FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id`,
      [hook.id],
    );
    expect(rows.map((r) => [r.message_id === first.headers['webhook-id'], r.status, r.attempts, r.response_status, r.lease_until])).toEqual([
      [true, 'succeeded', 1, 204, null],
      [false, 'succeeded', 1, 204, null],
    ]);
    // A receiver deduplicating by webhook-id sees each event once.
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(2);
    expect(b.output()).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});
