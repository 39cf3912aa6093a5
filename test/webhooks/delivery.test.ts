import {
  RedeliverWebhookDeliveryDocument,
  SetWebhookActiveDocument,
  TestWebhookDocument,
  WebhookDeliveriesDocument,
  WebhooksDocument,
} from '../../src/client/generated';
import { gql, gqlOk, rest, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { expectProblem, expectUnauthorized } from '../rest/problem';
import {
  createWebhook,
  createWebhookGql,
  deleteWebhook,
  deliveriesOf,
  deliveriesWhen,
  deliveryRows,
  DELIVERY_ID,
  expectSigned,
  ISO_MS,
  listWebhooks,
  Received,
  Receiver,
  testWebhook,
  verifyDelivery,
  startDelivering,
} from './helpers';

/**
 * Deliveries to a real https receiver on 127.0.0.1 (allow-listed; its self-signed certificate
 * is the gateway's extra CA). The gateway runs on the wall clock with jobs off, so deliveries
 * go out in-process right after commit; retries are minutes away and never fire here.
 */
describe('webhook deliveries', () => {
  let receiver: Receiver;
  let t: TestGateway;
  let owner: TestUser;
  let n = 0;
  const nextPath = (what: string) => `/${what}-${++n}`;

  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ receiver, t, owner, stop } = await startDelivering({ HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m,20m' }));
  });
  afterAll(() => stop());

  const byStatus = (list: Received[]) => Object.fromEntries(list.map((r) => [r.json.data.deployment.status, r]));

  it('a successful deploy sends signed `deploy` events for building and live, with {type, timestamp, data: {deployment, project}}', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('deploys');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const got = await receiver.waitFor(path, 2);
    expect(got).toHaveLength(2);
    const record = (await rest(t.url, owner.token, 'GET', `/deployments/${d.id}`)).body;

    const events = byStatus(got);
    expect(Object.keys(events).sort()).toEqual(['building', 'live']);
    for (const status of ['building', 'live']) {
      const r = events[status];
      const payload = expectSigned(hook.secret, r);
      expect(Object.keys(payload).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(payload).toEqual({
        type: 'deploy',
        timestamp: expect.stringMatching(ISO_MS),
        data: { deployment: { id: d.id, status, url: record.url, created_at: record.created_at }, project: slug },
      });
    }
    expect(events.building.headers['webhook-id']).not.toBe(events.live.headers['webhook-id']);

    // The history: two deploy deliveries, each sent once with a 2xx, their webhook-ids as sent.
    const history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.status === 'SUCCEEDED'));
    for (const x of history) {
      expect(x).toEqual(
        expect.objectContaining({
          id: expect.stringMatching(DELIVERY_ID),
          event: 'deploy',
          status: 'SUCCEEDED',
          attempts: 1,
          responseStatus: 200,
          nextAttemptAt: null,
          error: null,
          lastAttemptAt: expect.stringMatching(ISO_MS),
          createdAt: expect.stringMatching(ISO_MS),
        }),
      );
      expect(x.durationMs).toEqual(expect.any(Number));
      expect(x.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(history.map((x) => x.messageId).sort()).toEqual(got.map((r) => r.headers['webhook-id']).sort());
    // Newest first.
    expect(history.map((x) => x.id)).toEqual(
      history
        .map((x) => x.id)
        .sort()
        .reverse(),
    );

    // REST list: last_delivery {status, response_status, at}.
    const list = await listWebhooks(t, owner.token, slug);
    expect(list.body.data).toEqual([
      expect.objectContaining({ id: hook.id, active: true, last_delivery: { status: 'succeeded', response_status: 200, at: expect.stringMatching(ISO_MS) } }),
    ]);
    const latest = history
      .map((x) => x.lastAttemptAt!)
      .sort()
      .pop();
    expect(list.body.data[0].last_delivery.at).toBe(latest);
    // Exactly these two were sent.
    expect(receiver.received(path)).toHaveLength(2);
  });

  it('a failing deploy sends building and failed', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('failing');
    const hook = await createWebhookGql(t, owner.token, slug, receiver.url(path));
    const d = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
    expect(await settle(t.url, owner, d.id)).toBe('FAILED');
    const got = await receiver.waitFor(path, 2);
    const events = byStatus(got);
    expect(Object.keys(events).sort()).toEqual(['building', 'failed']);
    for (const r of got) {
      const payload = expectSigned(hook.secret, r);
      expect(payload.data).toEqual({ deployment: expect.objectContaining({ id: d.id, url: d.url }), project: slug });
    }
    await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.status === 'SUCCEEDED'));
    expect(receiver.received(path)).toHaveLength(2);
  });

  it('each webhook of the egg gets its own signed copy; a disabled one and other eggs’ webhooks get nothing', async () => {
    const { slug } = await makeApp(t.url, owner);
    const [pa, pb, pOff, pOther] = [nextPath('a'), nextPath('b'), nextPath('off'), nextPath('other-egg')];
    const a = await createWebhook(t, owner.token, slug, receiver.url(pa));
    const b = await createWebhook(t, owner.token, slug, receiver.url(pb));
    const off = await createWebhook(t, owner.token, slug, receiver.url(pOff));
    const other = await makeApp(t.url, owner);
    await createWebhook(t, owner.token, other.slug, receiver.url(pOther));

    const disabled = await gqlOk(t.url, owner.token, SetWebhookActiveDocument, { app: slug, id: off.id, active: false });
    expect(disabled.setWebhookActive).toMatchObject({ id: off.id, active: false });
    expect((await listWebhooks(t, owner.token, slug)).body.data.find((w: { id: string }) => w.id === off.id).active).toBe(false);

    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const [gotA, gotB] = await Promise.all([receiver.waitFor(pa, 2), receiver.waitFor(pb, 2)]);
    for (const r of gotA) {
      expectSigned(a.secret, r);
      expect(() => verifyDelivery(b.secret, r)).toThrow();
    }
    for (const r of gotB) {
      expectSigned(b.secret, r);
      expect(() => verifyDelivery(a.secret, r)).toThrow();
    }
    // The same event, separately identified per webhook.
    expect(byStatus(gotA).live.json.data).toEqual(byStatus(gotB).live.json.data);
    expect(byStatus(gotA).live.headers['webhook-id']).not.toBe(byStatus(gotB).live.headers['webhook-id']);
    // Events are written in the deploy's transactions: the disabled webhook and the other egg's have none.
    expect(await deliveryRows(t, off.id)).toEqual([]);
    expect(receiver.received(pOff)).toEqual([]);
    expect(receiver.received(pOther)).toEqual([]);
  });

  describe('POST …/test (ping)', () => {
    let slug: string;
    let path: string;
    let hook: { id: string; secret: string };
    let stranger: TestUser;

    beforeAll(async () => {
      ({ slug } = await makeApp(t.url, owner));
      path = nextPath('ping');
      hook = await createWebhook(t, owner.token, slug, receiver.url(path));
      stranger = await makeUser(t.gateway);
    });

    it('sends a signed ping now → 200 {delivery_id, status: succeeded, response_status: 200, duration_ms}', async () => {
      expect((await listWebhooks(t, owner.token, slug)).body.data[0].last_delivery).toBeNull();
      const before = receiver.received(path).length;
      const res = await testWebhook(t, owner.token, slug, hook.id);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['delivery_id', 'duration_ms', 'response_status', 'status']);
      expect(res.body).toEqual({ delivery_id: expect.stringMatching(DELIVERY_ID), status: 'succeeded', response_status: 200, duration_ms: expect.any(Number) });
      expect(res.body.duration_ms).toBeGreaterThanOrEqual(0);
      // It was sent before the answer came back.
      const got = receiver.received(path);
      expect(got).toHaveLength(before + 1);
      const ping = got[got.length - 1];
      const payload = expectSigned(hook.secret, ping);
      expect(payload).toEqual(expect.objectContaining({ type: 'ping', timestamp: expect.stringMatching(ISO_MS), data: expect.any(Object) }));
      expect(ping.headers['webhook-id']).toBe(res.body.delivery_id);

      const [latest] = await deliveriesOf(t, owner.token, slug, hook.id);
      expect(latest).toMatchObject({ id: res.body.delivery_id, event: 'ping', status: 'SUCCEEDED', attempts: 1, responseStatus: 200, nextAttemptAt: null });
      const listed = (await listWebhooks(t, owner.token, slug)).body.data[0];
      expect(listed.last_delivery).toEqual({ status: 'succeeded', response_status: 200, at: latest.lastAttemptAt });

      // The GraphQL twin.
      const g = await gqlOk(t.url, owner.token, TestWebhookDocument, { app: slug, id: hook.id });
      expect(g.testWebhook).toEqual({
        deliveryId: expect.stringMatching(DELIVERY_ID),
        status: 'SUCCEEDED',
        responseStatus: 200,
        durationMs: expect.any(Number),
      });
      expect(g.testWebhook.deliveryId).not.toBe(res.body.delivery_id);
      expect(receiver.received(path)).toHaveLength(before + 2);
    });

    it('the receiver answering 500 → 200 {status: failed, response_status: 500}; a ping is not retried', async () => {
      receiver.reply(path, { status: 500 });
      try {
        const before = receiver.received(path).length;
        const res = await testWebhook(t, owner.token, slug, hook.id);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ delivery_id: expect.stringMatching(DELIVERY_ID), status: 'failed', response_status: 500, duration_ms: expect.any(Number) });
        expect(receiver.received(path)).toHaveLength(before + 1);
        expectSigned(hook.secret, receiver.received(path)[before]);
        const [latest] = await deliveriesOf(t, owner.token, slug, hook.id);
        expect(latest).toMatchObject({ id: res.body.delivery_id, event: 'ping', status: 'FAILED', attempts: 1, responseStatus: 500, nextAttemptAt: null });
        expect((await listWebhooks(t, owner.token, slug)).body.data[0].last_delivery).toEqual({
          status: 'failed',
          response_status: 500,
          at: latest.lastAttemptAt,
        });
        // A failed ping does not disable the webhook.
        expect((await listWebhooks(t, owner.token, slug)).body.data[0].active).toBe(true);
      } finally {
        receiver.reply(path, { status: 200 });
      }
    });

    it('any 2xx is a success: 204 → status succeeded, response_status 204', async () => {
      receiver.reply(path, { status: 204 });
      try {
        const res = await testWebhook(t, owner.token, slug, hook.id);
        expect(res.body).toMatchObject({ status: 'succeeded', response_status: 204 });
      } finally {
        receiver.reply(path, { status: 200 });
      }
    });

    it('a redirect is not followed: 302 → status failed, response_status 302; the Location target receives nothing', async () => {
      const target = nextPath('redirect-target');
      receiver.reply(path, { status: 302, headers: { location: receiver.url(target) } });
      try {
        const res = await testWebhook(t, owner.token, slug, hook.id);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ status: 'failed', response_status: 302 });
        expect(receiver.received(target)).toEqual([]);
      } finally {
        receiver.reply(path, { status: 200 });
      }
    });

    it('unknown webhook id → 404; unknown egg → 404; a stranger → 404; no token → 401; nothing is sent', async () => {
      const before = receiver.received(path).length;
      expectProblem(await testWebhook(t, owner.token, slug, 'wh_01kzzzzzzzzzzzzzzzzzzzzzzz'), 404, 'not_found');
      expectProblem(await testWebhook(t, owner.token, 'no-such-egg-x', hook.id), 404, 'not_found');
      expectProblem(await testWebhook(t, stranger.token, slug, hook.id), 404, 'not_found');
      const strangersEgg = await makeApp(t.url, stranger);
      expectProblem(await testWebhook(t, stranger.token, strangersEgg.slug, hook.id), 404, 'not_found');
      expectUnauthorized(await testWebhook(t, null, slug, hook.id));
      const g = await gql(t.url, stranger.token, TestWebhookDocument, { app: slug, id: hook.id });
      expect(g.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(receiver.received(path)).toHaveLength(before);
    });
  });

  it('redeliverWebhookDelivery resends a past delivery: same webhook-id and body, a new delivery id, signed again', async () => {
    const { slug } = await makeApp(t.url, owner);
    const path = nextPath('redeliver');
    const hook = await createWebhook(t, owner.token, slug, receiver.url(path));
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    const first = await receiver.waitFor(path, 2);
    const history = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 2 && l.every((x) => x.status === 'SUCCEEDED'));
    const live = byStatus(first).live;
    const past = history.find((x) => x.messageId === live.headers['webhook-id'])!;
    expect(past).toBeDefined();

    const { redeliverWebhookDelivery: again } = await gqlOk(t.url, owner.token, RedeliverWebhookDeliveryDocument, { app: slug, id: past.id });
    expect(again.id).toMatch(DELIVERY_ID);
    expect(again.id).not.toBe(past.id);
    expect(again.messageId).toBe(past.messageId);
    expect(again.event).toBe('deploy');

    const [, , resent] = await receiver.waitFor(path, 3);
    expect(resent.headers['webhook-id']).toBe(live.headers['webhook-id']);
    expect(resent.body).toBe(live.body);
    expectSigned(hook.secret, resent);
    const after = await deliveriesWhen(t, owner.token, slug, hook.id, (l) => l.length === 3 && l.every((x) => x.status === 'SUCCEEDED'));
    expect(after[0]).toMatchObject({ id: again.id, messageId: past.messageId, attempts: 1, responseStatus: 200 });
    // The original is left as it was.
    expect(after.find((x) => x.id === past.id)).toEqual(past);
    // The history pages newest first.
    const page1 = await gqlOk(t.url, owner.token, WebhookDeliveriesDocument, { app: slug, first: 2 });
    expect(page1.webhooks[0].deliveries.nodes.map((x) => x.id)).toEqual(after.slice(0, 2).map((x) => x.id));
    expect(page1.webhooks[0].deliveries.pageInfo.hasNextPage).toBe(true);
    const page2 = await gqlOk(t.url, owner.token, WebhookDeliveriesDocument, { app: slug, first: 2, after: page1.webhooks[0].deliveries.pageInfo.endCursor });
    expect(page2.webhooks[0].deliveries.nodes.map((x) => x.id)).toEqual([after[2].id]);
    expect(page2.webhooks[0].deliveries.pageInfo.hasNextPage).toBe(false);

    // Another egg's delivery, or an unknown one, is not found.
    const stranger = await makeUser(t.gateway);
    const strangers = await makeApp(t.url, stranger);
    for (const [token, app] of [
      [stranger.token, slug],
      [stranger.token, strangers.slug],
      [owner.token, 'no-such-egg-x'],
    ] as const) {
      const res = await gql(t.url, token, RedeliverWebhookDeliveryDocument, { app, id: past.id });
      expect(res.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    }
    const unknown = await gql(t.url, owner.token, RedeliverWebhookDeliveryDocument, { app: slug, id: 'whd_01kzzzzzzzzzzzzzzzzzzzzzzz' });
    expect(unknown.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expect(await deliveryRows(t, hook.id)).toHaveLength(3);
    expect(receiver.received(path)).toHaveLength(3);
  });

  it('DELETE → 204; later events go only to the remaining webhook, none to the deleted one', async () => {
    const { slug } = await makeApp(t.url, owner);
    const [gonePath, keptPath] = [nextPath('deleted'), nextPath('kept')];
    const gone = await createWebhook(t, owner.token, slug, receiver.url(gonePath));
    const kept = await createWebhook(t, owner.token, slug, receiver.url(keptPath));
    const d1 = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d1.id)).toBe('LIVE');
    await Promise.all([receiver.waitFor(gonePath, 2), receiver.waitFor(keptPath, 2)]);
    await deliveriesWhen(t, owner.token, slug, gone.id, (l) => l.length === 2 && l.every((x) => x.status === 'SUCCEEDED'));

    const del = await deleteWebhook(t, owner.token, slug, gone.id);
    expect(del.status).toBe(204);
    expect((await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug })).webhooks.map((w) => w.id)).toEqual([kept.id]);
    // Its history went with it.
    expect(await deliveryRows(t, gone.id)).toEqual([]);
    expectProblem(await testWebhook(t, owner.token, slug, gone.id), 404, 'not_found');

    const d2 = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d2.id)).toBe('LIVE');
    const kept4 = await receiver.waitFor(keptPath, 4);
    expect(kept4.slice(2).map((r) => r.json.data.deployment.id)).toEqual([d2.id, d2.id]);
    await deliveriesWhen(t, owner.token, slug, kept.id, (l) => l.length === 4 && l.every((x) => x.status === 'SUCCEEDED'));
    expect(receiver.received(gonePath)).toHaveLength(2);
    expect(await deliveryRows(t, gone.id)).toEqual([]);
  });
});
