import { buildApp } from '../../src/app';
import { AppLogDrainsDocument, LogDrainsDocument } from '../../src/client/generated';
import { gqlOk, TestGateway } from '../support/gateway';
import {
  anotherGateway,
  drainWhen,
  expectInOrderNoGaps,
  liveEgg,
  listDrains,
  names,
  NdjsonReceiver,
  postDrain,
  startDrainGateway,
  verifySigned,
  writeLines,
} from './helpers';

jest.setTimeout(60_000);

/**
 * NDJSON drains against a real https receiver on 127.0.0.1 (self-signed, trusted through
 * HATCHERY_WEBHOOK_CA_FILE). The safety-net poll is slow (60 s): lines arrive because the log
 * writer's `stored` events wake the shipper.
 */
describe('NDJSON log drains', () => {
  let receiver: NdjsonReceiver;
  let t: TestGateway;

  beforeEach(async () => {
    receiver = await NdjsonReceiver.start();
    t = await startDrainGateway(receiver.cert.certFile, {
      HATCHERY_LOG_DRAIN_POLL_MS: '60000',
      HATCHERY_LOG_DRAIN_BATCH_LINES: '100',
      HATCHERY_LOG_DRAIN_DISABLE_AFTER: '100000',
    });
  });
  afterEach(async () => {
    await t.stop();
    await receiver.stop();
  });

  it('ships every line written after its creation, signed, as NDJSON, in order per deployment; none written before', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    await writeLines(t.gateway, deploymentId, names('before', 20));

    const created = await postDrain(t, owner.token, slug, { url: receiver.url(), format: 'ndjson' });
    expect(created.status).toBe(201);
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^whsec_/);

    const after = names('after', 450);
    for (let i = 0; i < after.length; i += 50) await writeLines(t.gateway, deploymentId, after.slice(i, i + 50));
    await receiver.untilMessages(after);

    for (const r of receiver.requests) {
      expect(r.headers['content-type']).toBe('application/x-ndjson');
      expect(r.headers['webhook-id']).toEqual(expect.any(String));
      expect(r.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
      verifySigned(secret, r);
      // Not vacuous: another secret or a changed body does not verify.
      expect(() => verifySigned(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, r)).toThrow();
      expect(() => verifySigned(secret, { ...r, body: r.body + ' ' })).toThrow();
      expect(r.body.endsWith('\n')).toBe(true);
      // Batches are bounded (HATCHERY_LOG_DRAIN_BATCH_LINES=100).
      expect(r.body.split('\n').filter(Boolean).length).toBeLessThanOrEqual(100);
    }
    expect(receiver.requests.length).toBeGreaterThanOrEqual(5);
    for (const l of receiver.lines) {
      expect(Object.keys(l).sort()).toEqual(expect.arrayContaining(['deployment', 'message', 'seq', 'timestamp', 'type']));
      expect(Object.keys(l).filter((k) => !['deployment', 'message', 'seq', 'timestamp', 'type', 'stream'].includes(k))).toEqual([]);
      expect(l.deployment).toBe(deploymentId);
      expect(l.type).toBe('runtime');
      expect(l.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    const messages = receiver.lines.map((l) => l.message);
    expect(messages.filter((m) => m.startsWith('before-'))).toEqual([]);
    // Every line after creation, in the order written.
    expect(messages.filter((m) => m.startsWith('after-'))).toEqual(after);
    const seqs = expectInOrderNoGaps(receiver.lines).get(deploymentId)!;
    const [{ max }] = await t.gateway.ds.query('SELECT max(seq)::int AS max FROM log_lines WHERE deployment_id = $1', [deploymentId]);
    expect(seqs[seqs.length - 1]).toBe(max);

    const listed = (await listDrains(t, owner.token, slug)).body.data[0];
    expect(listed).toMatchObject({ id: created.body.id, status: 'active', last_error: null, disabled_reason: null, format: 'ndjson' });
    expect(listed.last_delivered_at).toEqual(expect.any(String));
  });

  it('resumes from the last acknowledged line after the receiver failed (503), losing nothing', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    const { body } = await postDrain(t, owner.token, slug, { url: receiver.url() });
    const first = names('first', 120);
    await writeLines(t.gateway, deploymentId, first);
    await receiver.untilMessages(first);

    receiver.status = 503;
    const during = names('during', 150);
    await writeLines(t.gateway, deploymentId, during);
    await receiver.until((r) => r.requests.filter((q) => q.status === 503).length >= 3);
    const failing = await drainWhen(t, owner.token, slug, body.id, (d) => d.last_error !== null);
    expect(failing).toMatchObject({ status: 'active', last_error: 'HTTP 503' });

    receiver.status = 200;
    const later = names('later', 30);
    await writeLines(t.gateway, deploymentId, later);
    await receiver.untilMessages([...during, ...later]);
    const messages = receiver.lines.map((l) => l.message).filter((m) => /^(first|during|later)-/.test(m));
    // Nothing lost, nothing out of order; the first lines were acknowledged and not sent again.
    expect(messages).toEqual([...first, ...during, ...later]);
    expectInOrderNoGaps(receiver.lines);
    const healthy = await drainWhen(t, owner.token, slug, body.id, (d) => d.last_error === null);
    expect(healthy.status).toBe('active');
  });

  it('a new gateway on the same database resumes from the cursor: acknowledged lines are not sent again, the backlog is', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    await postDrain(t, owner.token, slug, { url: receiver.url() });
    const acked = names('acked', 80);
    await writeLines(t.gateway, deploymentId, acked);
    await receiver.untilMessages(acked);

    // The receiver is down while these are written and while the gateway stops.
    receiver.status = 503;
    const backlog = names('backlog', 90);
    await writeLines(t.gateway, deploymentId, backlog);
    await receiver.until((r) => r.requests.some((q) => q.status === 503));
    await t.gateway.stop();
    receiver.status = 200;
    const accepted = receiver.lines.length;

    const restarted = await anotherGateway(t);
    try {
      await receiver.untilMessages(backlog);
      const shippedAfterRestart = receiver.lines.slice(accepted).map((l) => l.message);
      expect(shippedAfterRestart.filter((m) => m.startsWith('acked-'))).toEqual([]);
      expect(shippedAfterRestart.filter((m) => m.startsWith('backlog-'))).toEqual(backlog);
      expectInOrderNoGaps(receiver.lines);
      // And the new gateway ships new lines too (its own writer continues the sequence).
      const fresh = names('fresh', 10);
      await writeLines(restarted.gateway, deploymentId, fresh);
      await receiver.untilMessages(fresh);
      expectInOrderNoGaps(receiver.lines);
    } finally {
      await restarted.gateway.stop();
    }
  });
});

describe('NDJSON log drain disabled after the retry limit', () => {
  let receiver: NdjsonReceiver;
  let t: TestGateway;

  beforeAll(async () => {
    receiver = await NdjsonReceiver.start();
    t = await startDrainGateway(receiver.cert.certFile, { HATCHERY_LOG_DRAIN_DISABLE_AFTER: '3', HATCHERY_LOG_DRAIN_POLL_MS: '60000' });
  });
  afterAll(async () => {
    await t.stop();
    await receiver.stop();
  });

  it('after 3 failed attempts in a row the drain is disabled, with the reason in REST and GraphQL, and nothing more is sent', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    receiver.status = 500;
    const { body } = await postDrain(t, owner.token, slug, { url: receiver.url() });
    await writeLines(t.gateway, deploymentId, names('doomed', 5));
    const disabled = await drainWhen(t, owner.token, slug, body.id, (d) => d.status === 'disabled');
    expect(disabled.disabled_reason).toBe('3 attempts in a row failed; the last: HTTP 500');
    expect(disabled.last_error).toBe('HTTP 500');
    expect(disabled.last_delivered_at).toBeNull();
    expect(receiver.requests).toHaveLength(3);

    const { logDrains } = await gqlOk(t.url, owner.token, LogDrainsDocument, { app: slug });
    expect(logDrains).toEqual([
      expect.objectContaining({ id: body.id, status: 'DISABLED', disabledReason: '3 attempts in a row failed; the last: HTTP 500', lastError: 'HTTP 500' }),
    ]);
    const { app } = await gqlOk(t.url, owner.token, AppLogDrainsDocument, { app: slug });
    expect(app.logDrains).toEqual(logDrains);

    // A disabled drain is not woken by new lines: the next poll (forced here) sends nothing either.
    receiver.status = 200;
    await writeLines(t.gateway, deploymentId, names('ignored', 5));
    t.gateway.services.drains.shipper.wake();
    await t.gateway.services.drains.shipper.settled();
    expect(receiver.requests).toHaveLength(3);
  });
});

describe('NDJSON log drains across gateways', () => {
  let receiver: NdjsonReceiver;
  let t: TestGateway;

  beforeAll(async () => {
    receiver = await NdjsonReceiver.start();
    // Gateway A (the test gateway, which runs the egg and writes its lines) does not ship drains.
    t = await startDrainGateway(receiver.cert.certFile, { HATCHERY_LOG_DRAIN_POLL_MS: '60000', HATCHERY_LOG_DRAIN_WORKER: 'off' });
  });
  afterAll(async () => {
    await t.stop();
    await receiver.stop();
  });

  it('another gateway holds the drain’s lease and ships the lines A writes, woken by A’s stored events', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    const b = buildApp({ ...t.config, logDrains: { ...t.config.logDrains, worker: true } });
    await b.start(0);
    try {
      const { body } = await postDrain(t, owner.token, slug, { url: receiver.url() });
      // B claims the new drain at its next poll (60 s away): the test asks it now, then waits for the claim.
      b.services.drains.shipper.wake();
      await b.services.drains.shipper.settled();
      const [row] = await t.gateway.ds.query('SELECT lease_holder FROM log_drains WHERE id = $1', [body.id]);
      expect(row.lease_holder).toEqual(expect.any(String));
      const lines = names('cross', 300);
      for (let i = 0; i < lines.length; i += 60) await writeLines(t.gateway, deploymentId, lines.slice(i, i + 60));
      await receiver.untilMessages(lines);
      expect(receiver.lines.map((l) => l.message).filter((m) => m.startsWith('cross-'))).toEqual(lines);
      expectInOrderNoGaps(receiver.lines);
    } finally {
      await b.stop();
    }
    // B let go of the drain when it stopped.
    const [row] = await t.gateway.ds.query('SELECT lease_holder FROM log_drains');
    expect(row.lease_holder).toBeNull();
  });
});
