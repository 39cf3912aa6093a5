import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { AddCollaboratorDocument, CreateWebhookDocument, DeleteWebhookDocument, SetWebhookActiveDocument, WebhooksDocument } from '../../src/client/generated';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { expectInvalid, expectProblem, expectUnauthorized } from '../rest/problem';
import { deleteWebhook, ISO_MS, listWebhooks, postWebhook, WEBHOOK_ID } from './helpers';

/**
 * Registration only: this gateway never sends (HATCHERY_WEBHOOK_WORKER off), nothing here is
 * deployed and no test ping is sent, so the public-looking and allow-listed URLs below are only
 * validated, never contacted. 127.0.0.1 is NOT allow-listed here.
 */
const ALLOWED = 'hooks.invalid,10.9.8.7';

/** URLs every webhook registration must refuse with 422 naming `url`. */
const REJECTED: Array<[string, string]> = [
  ['plain http', 'http://93.184.216.34/hook'],
  ['another scheme', 'ftp://93.184.216.34/hook'],
  ['not a URL', 'not a url'],
  ['a relative path', '/hooks/deploy'],
  ['empty', ''],
  ['credentials in the URL', 'https://user:pw@93.184.216.34/hook'],
  ['loopback', 'https://127.0.0.1/hook'],
  ['loopback with a port', 'https://127.0.0.1:8443/hook'],
  ['loopback, elsewhere in 127/8', 'https://127.255.0.9/hook'],
  ['loopback, short form 127.1', 'https://127.1/hook'],
  ['loopback, hex', 'https://0x7f000001/hook'],
  ['loopback, decimal', 'https://2130706433/hook'],
  ['loopback, octal', 'https://0177.0.0.1/hook'],
  ['loopback, hex first octet', 'https://0x7f.1/hook'],
  ['loopback, trailing dot', 'https://127.0.0.1./hook'],
  ['loopback, percent-encoded', 'https://%31%32%37.0.0.1/hook'],
  ['loopback, full-width digits', 'https://１２７.０.０.１/hook'],
  ['IPv6 loopback', 'https://[::1]/hook'],
  ['IPv6 loopback, long form', 'https://[0:0:0:0:0:0:0:1]/hook'],
  ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook'],
  ['IPv4-mapped loopback, hex', 'https://[::ffff:7f00:1]/hook'],
  ['IPv4-mapped loopback, long form', 'https://[0:0:0:0:0:ffff:7f00:1]/hook'],
  ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/hook'],
  ['IPv4-mapped metadata', 'https://[::ffff:a9fe:a9fe]/hook'],
  ['unspecified', 'https://0.0.0.0/hook'],
  ['unspecified, short form', 'https://0/hook'],
  ['IPv6 unspecified', 'https://[::]/hook'],
  ['private 10/8', 'https://10.0.0.1/hook'],
  ['private 10/8, hex octet', 'https://0x0a.0.0.1/hook'],
  ['private 10/8, octal octet', 'https://012.0.0.1/hook'],
  ['private, next to an allow-listed address', 'https://10.9.8.6/hook'],
  ['private 172.16/12', 'https://172.16.0.1/hook'],
  ['private 172.16/12, upper end', 'https://172.31.255.254/hook'],
  ['private 192.168/16', 'https://192.168.1.1/hook'],
  ['private 192.168/16, decimal', 'https://3232235777/hook'],
  ['private 192.168/16, short form', 'https://192.168.1/hook'],
  ['link-local metadata endpoint', 'https://169.254.169.254/latest/meta-data/'],
  ['link-local', 'https://169.254.1.1/hook'],
  ['IPv6 link-local', 'https://[fe80::1]/hook'],
  ['IPv6 link-local, upper case', 'https://[FE80::ABCD]/hook'],
  ['CGNAT', 'https://100.64.0.1/hook'],
  ['CGNAT, upper end', 'https://100.127.255.254/hook'],
  ['unique-local fc00::/7', 'https://[fc00::1]/hook'],
  ['unique-local fd00::/8', 'https://[fd12:3456:789a::1]/hook'],
  ['multicast', 'https://224.0.0.1/hook'],
  ['multicast SSDP', 'https://239.255.255.250/hook'],
  ['IPv6 multicast', 'https://[ff02::1]/hook'],
  ['broadcast', 'https://255.255.255.255/hook'],
  ['a host name resolving to loopback', 'https://localhost/hook'],
  ['a host name resolving to loopback, upper case with port', 'https://LOCALHOST:8443/hook'],
  ['an allow-listed host over http', 'http://hooks.invalid/hook'],
];

const WebhookSecretFieldDocument = parse(`query WebhookSecret($app: String!) { webhooks(app: $app) { id secret } }`) as TypedDocumentNode<
  { webhooks: Array<{ id: string; secret: string }> },
  { app: string }
>;

describe('webhook registration', () => {
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WEBHOOK_WORKER: 'off', HATCHERY_WEBHOOK_ALLOW_HOSTS: ALLOWED });
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const storedFor = async (slug: string): Promise<Array<Record<string, unknown>>> =>
    t.gateway.ds.query('SELECT w.* FROM webhooks w JOIN apps a ON a.id = w.app_id WHERE a.slug = $1 ORDER BY w.id', [slug]);

  describe('refused targets (127.0.0.1 not allow-listed)', () => {
    let slug: string;
    beforeAll(async () => {
      ({ slug } = await makeApp(t.url, owner));
    });

    it('the table holds at least 30 refused URLs', () => {
      expect(REJECTED.length).toBeGreaterThanOrEqual(30);
    });

    it.each(REJECTED)('%s (%s) → 422 validation_failed naming url, nothing stored', async (_what, url) => {
      const res = await postWebhook(t, owner.token, slug, { url, events: ['deploy'] });
      expectInvalid(res, 'url');
      expect(await storedFor(slug)).toEqual([]);
    });

    it.each([
      ['https://127.1/hook'],
      ['https://[::ffff:127.0.0.1]/hook'],
      ['https://169.254.169.254/latest/meta-data/'],
      ['https://localhost/hook'],
      ['http://93.184.216.34/hook'],
    ])('GraphQL createWebhook(%s) → BAD_USER_INPUT naming url', async (url) => {
      const res = await gql(t.url, owner.token, CreateWebhookDocument, { app: slug, url, events: ['deploy'] });
      expect(res.data ?? null).toBeNull();
      expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('url');
      expect(await storedFor(slug)).toEqual([]);
    });

    it('a URL longer than 2048 characters → 422 url', async () => {
      expectInvalid(await postWebhook(t, owner.token, slug, { url: `https://hooks.invalid/${'a'.repeat(2100)}`, events: ['deploy'] }), 'url');
    });
  });

  describe('accepted targets', () => {
    it('a public IP literal and allow-listed hosts (name in any case, IP in any notation) → 201', async () => {
      const { slug } = await makeApp(t.url, owner);
      for (const url of ['https://93.184.216.34/hook', 'https://hooks.invalid/deploys?x=1', 'https://HOOKS.Invalid:8443/x']) {
        const res = await postWebhook(t, owner.token, slug, { url, events: ['deploy'] });
        expect(res.status).toBe(201);
      }
      const other = await makeApp(t.url, owner);
      // 10.9.8.7 is allow-listed; the exemption follows the address, not the spelling.
      for (const url of ['https://10.9.8.7/hook', 'https://0x0a090807/hook', 'https://168364039/hook']) {
        const res = await postWebhook(t, owner.token, other.slug, { url, events: ['deploy'] });
        expect(res.status).toBe(201);
      }
      expect(await storedFor(slug)).toHaveLength(3);
      expect(await storedFor(other.slug)).toHaveLength(3);
    });
  });

  describe('events', () => {
    let slug: string;
    beforeAll(async () => {
      ({ slug } = await makeApp(t.url, owner));
    });

    it.each<[string, unknown]>([
      ['empty', []],
      ['unknown', ['push']],
      ['one known, one unknown', ['deploy', 'push']],
      ['ping is sent, not subscribed to', ['ping']],
      ['wrong case', ['DEPLOY']],
      ['missing', undefined],
      ['null', null],
      ['a number in the list', [1]],
      ['an object', { deploy: true }],
    ])('%s → 422 naming events', async (_what, events) => {
      const body: Record<string, unknown> = { url: 'https://hooks.invalid/e' };
      if (events !== undefined) body.events = events;
      const res = await postWebhook(t, owner.token, slug, body);
      expectProblem(res, 422, 'validation_failed');
      expect(res.body.errors.map((e: { field: string }) => e.field).some((f: string) => /^events/.test(f))).toBe(true);
      expect(await storedFor(slug)).toEqual([]);
    });

    it('GraphQL with an empty or unknown event list → BAD_USER_INPUT naming events', async () => {
      for (const events of [[], ['push']]) {
        const res = await gql(t.url, owner.token, CreateWebhookDocument, { app: slug, url: 'https://hooks.invalid/e', events });
        expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
        expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('events');
      }
      expect(await storedFor(slug)).toEqual([]);
    });

    it('url missing → 422 url; an unknown field → 422; a body that is not JSON → 400; not application/json → 415', async () => {
      expectInvalid(await postWebhook(t, owner.token, slug, { events: ['deploy'] }), 'url');
      expectInvalid(await postWebhook(t, owner.token, slug, { url: 42, events: ['deploy'] }), 'url');
      expectInvalid(await postWebhook(t, owner.token, slug, { url: 'https://hooks.invalid/e', events: ['deploy'], secret: 'whsec_mine' }), 'secret');
      expectProblem(await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, '{"url":', { 'content-type': 'application/json' }), 400, 'bad_request');
      expectProblem(
        await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, 'url=https://hooks.invalid/e', { 'content-type': 'text/plain' }),
        415,
        'unsupported_media_type',
      );
      expect(await storedFor(slug)).toEqual([]);
    });
  });

  describe('at most 3 per egg', () => {
    it('3 → 201; the 4th → 422 limit_exceeded (GraphQL LIMIT_EXCEEDED); after deleting one a new one → 201; another egg has its own 3', async () => {
      const { slug } = await makeApp(t.url, owner);
      const ids: string[] = [];
      for (const n of [1, 2, 3]) {
        const res = await postWebhook(t, owner.token, slug, { url: `https://hooks.invalid/${n}`, events: ['deploy'] });
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
      const fourth = await postWebhook(t, owner.token, slug, { url: 'https://hooks.invalid/4', events: ['deploy'] });
      expectProblem(fourth, 422, 'limit_exceeded');
      const gqlFourth = await gql(t.url, owner.token, CreateWebhookDocument, { app: slug, url: 'https://hooks.invalid/4', events: ['deploy'] });
      expect(gqlFourth.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
      expect(gqlFourth.data ?? null).toBeNull();
      expect((await storedFor(slug)).map((w) => w.id)).toEqual(ids);

      const other = await makeApp(t.url, owner);
      for (const n of [1, 2, 3])
        expect((await postWebhook(t, owner.token, other.slug, { url: `https://hooks.invalid/o${n}`, events: ['deploy'] })).status).toBe(201);

      expect((await deleteWebhook(t, owner.token, slug, ids[1])).status).toBe(204);
      const again = await postWebhook(t, owner.token, slug, { url: 'https://hooks.invalid/5', events: ['deploy'] });
      expect(again.status).toBe(201);
      expect((await listWebhooks(t, owner.token, slug)).body.data.map((w: { url: string }) => w.url)).toEqual([
        'https://hooks.invalid/5',
        'https://hooks.invalid/3',
        'https://hooks.invalid/1',
      ]);
    });

    it('race: 10 concurrent registrations on a fresh egg → exactly 3 × 201 and 7 × 422 limit_exceeded; 3 stored', async () => {
      const { slug } = await makeApp(t.url, owner);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => postWebhook(t, owner.token, slug, { url: `https://hooks.invalid/race-${i}`, events: ['deploy'] })),
      );
      const created = results.filter((r) => r.status === 201);
      const refused = results.filter((r) => r.status !== 201);
      expect(created).toHaveLength(3);
      expect(refused).toHaveLength(7);
      for (const r of refused) expectProblem(r, 422, 'limit_exceeded');
      const stored = await storedFor(slug);
      expect(stored.map((w) => w.id).sort()).toEqual(created.map((r) => r.body.id).sort());
    });
  });

  describe('the signing secret', () => {
    it('201 carries {id, url, events, active, secret, created_at} with a whsec_ secret; lists (REST and GraphQL) never show it; it is encrypted at rest', async () => {
      const { slug } = await makeApp(t.url, owner);
      const res = await postWebhook(t, owner.token, slug, { url: 'https://hooks.invalid/secret', events: ['deploy'] });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(['active', 'created_at', 'events', 'id', 'secret', 'url']);
      expect(res.body).toEqual({
        id: expect.stringMatching(WEBHOOK_ID),
        url: 'https://hooks.invalid/secret',
        events: ['deploy'],
        active: true,
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+={0,2}$/),
        created_at: expect.stringMatching(ISO_MS),
      });
      const secret: string = res.body.secret;
      const secretBody = secret.slice('whsec_'.length);
      expect(Buffer.from(secretBody, 'base64').length).toBeGreaterThanOrEqual(24);

      // A second webhook gets its own secret.
      const second = await postWebhook(t, owner.token, slug, { url: 'https://hooks.invalid/secret-2', events: ['deploy'] });
      expect(second.body.secret).not.toBe(secret);

      const list = await listWebhooks(t, owner.token, slug);
      expect(list.status).toBe(200);
      expect(list.body.has_more).toBe(false);
      expect(list.body.next_cursor).toBeNull();
      expect(list.body.data).toHaveLength(2);
      for (const w of list.body.data) expect(Object.keys(w).sort()).toEqual(['active', 'created_at', 'events', 'id', 'last_delivery', 'url']);
      expect(list.body.data[1]).toEqual({
        id: res.body.id,
        url: 'https://hooks.invalid/secret',
        events: ['deploy'],
        active: true,
        last_delivery: null,
        created_at: res.body.created_at,
      });
      expect(JSON.stringify(list.body)).not.toContain(secretBody);

      const graph = await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug });
      expect(graph.webhooks.map((w) => w.id)).toEqual([second.body.id, res.body.id]);
      expect(JSON.stringify(graph)).not.toContain(secretBody);
      // There is no field to read it back.
      const asked = await gql(t.url, owner.token, WebhookSecretFieldDocument, { app: slug });
      expect(asked.data ?? null).toBeNull();
      expect(asked.errors?.[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');

      // At rest: no column of the webhooks table holds the secret (or its key material) in the clear.
      const raw: Array<{ row: string }> = await t.gateway.ds.query('SELECT row_to_json(w)::text AS row FROM webhooks w');
      expect(raw.length).toBeGreaterThanOrEqual(2);
      for (const { row } of raw) {
        expect(row).not.toContain(secretBody);
        expect(row).not.toContain(secretBody.slice(0, 16));
        expect(row).not.toContain(Buffer.from(secretBody, 'base64').toString('hex'));
      }
      const sealed: Array<{ secret_sealed: string }> = await t.gateway.ds.query('SELECT secret_sealed FROM webhooks WHERE id = $1', [res.body.id]);
      expect(sealed[0].secret_sealed.length).toBeGreaterThan(0);
      expect(sealed[0].secret_sealed).not.toBe(secret);
    });

    it('GraphQL createWebhook returns the secret once; the webhook it returns is the one listed', async () => {
      const { slug } = await makeApp(t.url, owner);
      const { createWebhook } = await gqlOk(t.url, owner.token, CreateWebhookDocument, {
        app: slug,
        url: 'https://hooks.invalid/g',
        events: ['deploy', 'deploy'],
      });
      expect(createWebhook.secret).toMatch(/^whsec_/);
      expect(createWebhook.webhook).toMatchObject({
        url: 'https://hooks.invalid/g',
        events: ['deploy'],
        active: true,
        disabledReason: null,
        lastDelivery: null,
      });
      const graph = await gqlOk(t.url, owner.token, WebhooksDocument, { app: slug });
      expect(graph.webhooks).toEqual([createWebhook.webhook]);
      expect(JSON.stringify(graph)).not.toContain(createWebhook.secret.slice('whsec_'.length));
    });
  });

  describe('access', () => {
    let slug: string;
    let hookId: string;
    let stranger: TestUser;

    beforeAll(async () => {
      ({ slug } = await makeApp(t.url, owner));
      stranger = await makeUser(t.gateway);
      const res = await postWebhook(t, owner.token, slug, { url: 'https://hooks.invalid/access', events: ['deploy'] });
      hookId = res.body.id;
    });

    it('a stranger gets 404 for the egg’s webhooks (list, create, delete) and changes nothing', async () => {
      expectProblem(await listWebhooks(t, stranger.token, slug), 404, 'not_found');
      expectProblem(await postWebhook(t, stranger.token, slug, { url: 'https://hooks.invalid/s', events: ['deploy'] }), 404, 'not_found');
      // Even with an invalid body the egg is not revealed.
      expectProblem(await postWebhook(t, stranger.token, slug, { url: 'https://127.0.0.1/s', events: ['deploy'] }), 404, 'not_found');
      expectProblem(await deleteWebhook(t, stranger.token, slug, hookId), 404, 'not_found');
      const g = await gql(t.url, stranger.token, WebhooksDocument, { app: slug });
      expect(g.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      const gd = await gql(t.url, stranger.token, DeleteWebhookDocument, { app: slug, id: hookId });
      expect(gd.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      const ga = await gql(t.url, stranger.token, SetWebhookActiveDocument, { app: slug, id: hookId, active: false });
      expect(ga.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect((await listWebhooks(t, owner.token, slug)).body.data[0].active).toBe(true);
      expect((await storedFor(slug)).map((w) => w.id)).toEqual([hookId]);
      // Their own egg does not open another egg's webhook either.
      const theirs = await makeApp(t.url, stranger);
      expectProblem(await deleteWebhook(t, stranger.token, theirs.slug, hookId), 404, 'not_found');
    });

    it('without a token → 401; unknown egg → 404; unknown webhook id → 404', async () => {
      expectUnauthorized(await listWebhooks(t, null, slug));
      expectUnauthorized(await postWebhook(t, null, slug, { url: 'https://hooks.invalid/x', events: ['deploy'] }));
      expectUnauthorized(await deleteWebhook(t, null, slug, hookId));
      expectProblem(await listWebhooks(t, owner.token, 'no-such-egg-here'), 404, 'not_found');
      expectProblem(await deleteWebhook(t, owner.token, slug, 'wh_01kzzzzzzzzzzzzzzzzzzzzzzz'), 404, 'not_found');
      expect((await storedFor(slug)).map((w) => w.id)).toEqual([hookId]);
    });

    it('a collaborator may register, list and delete webhooks', async () => {
      const collaborator = await makeUser(t.gateway);
      await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
      const res = await postWebhook(t, collaborator.token, slug, { url: 'https://hooks.invalid/collab', events: ['deploy'] });
      expect(res.status).toBe(201);
      expect((await listWebhooks(t, collaborator.token, slug)).body.data.map((w: { id: string }) => w.id)).toEqual([res.body.id, hookId]);
      expect((await deleteWebhook(t, collaborator.token, slug, res.body.id)).status).toBe(204);
    });

    it('DELETE → 204 with no body; the webhook is gone from lists; deleting again → 404', async () => {
      const { slug: s } = await makeApp(t.url, owner);
      const created = await postWebhook(t, owner.token, s, { url: 'https://hooks.invalid/del', events: ['deploy'] });
      const del = await deleteWebhook(t, owner.token, s, created.body.id);
      expect(del.status).toBe(204);
      expect(del.body).toBeUndefined();
      expect((await listWebhooks(t, owner.token, s)).body.data).toEqual([]);
      expect(await storedFor(s)).toEqual([]);
      expectProblem(await deleteWebhook(t, owner.token, s, created.body.id), 404, 'not_found');
    });
  });
});
