import { AppLogDrainsDocument, CreateLogDrainDocument, DeleteLogDrainDocument, LogDrainsDocument } from '../../src/client/generated';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeEggWithPeople, makeUser, TestUser, unique, ISO_MS } from '../support/factories';
import { expectInvalid, expectProblem } from '../rest/problem';
import { deleteDrain, DRAIN_ID, listDrains, postDrain } from './helpers';

/**
 * Registration only: this gateway never ships (HATCHERY_LOG_DRAIN_WORKER off), so the public and
 * allow-listed URLs below are validated, never contacted. 127.0.0.1 is NOT allow-listed here.
 */
const ALLOWED = 'drains.invalid,10.9.8.7';

const REJECTED: Array<[string, unknown, string]> = [
  ['plain http', { url: 'http://93.184.216.34/logs' }, 'url'],
  ['ftp', { url: 'ftp://93.184.216.34/logs' }, 'url'],
  ['not a URL', { url: 'not a url' }, 'url'],
  ['empty URL', { url: '' }, 'url'],
  ['credentials', { url: 'https://user:pw@93.184.216.34/logs' }, 'url'],
  ['loopback', { url: 'https://127.0.0.1/logs' }, 'url'],
  ['loopback, hex', { url: 'https://0x7f000001/logs' }, 'url'],
  ['IPv6 loopback', { url: 'https://[::1]/logs' }, 'url'],
  ['IPv4-mapped private', { url: 'https://[::ffff:10.0.0.1]/logs' }, 'url'],
  ['private 10/8', { url: 'https://10.0.0.1/logs' }, 'url'],
  ['private 192.168/16', { url: 'https://192.168.1.1/logs' }, 'url'],
  ['link-local metadata', { url: 'https://169.254.169.254/latest/meta-data/' }, 'url'],
  ['a name resolving to loopback', { url: 'https://localhost/logs' }, 'url'],
  ['syslog to loopback', { url: 'syslog+tls://127.0.0.1:6514' }, 'url'],
  ['syslog to loopback, short form', { url: 'syslog+tls://127.1:6514' }, 'url'],
  ['syslog to loopback, hex', { url: 'syslog+tls://0x7f.1:6514' }, 'url'],
  ['syslog to private', { url: 'syslog+tls://10.1.2.3:6514' }, 'url'],
  ['syslog to IPv6 loopback', { url: 'syslog+tls://[::1]:6514' }, 'url'],
  ['syslog to localhost', { url: 'syslog+tls://localhost:6514' }, 'url'],
  ['plain syslog (no TLS)', { url: 'syslog://93.184.216.34:514' }, 'url'],
  ['syslog with a path', { url: 'syslog+tls://drains.invalid:6514/x' }, 'url'],
  ['syslog format with an https URL', { url: 'https://drains.invalid/logs', format: 'syslog' }, 'url'],
  ['ndjson format with a syslog URL', { url: 'syslog+tls://drains.invalid:6514', format: 'ndjson' }, 'url'],
  ['unknown format', { url: 'https://drains.invalid/logs', format: 'gelf' }, 'format'],
  ['format not a string', { url: 'https://drains.invalid/logs', format: 3 }, 'format'],
  ['missing url', { format: 'ndjson' }, 'url'],
  ['url not a string', { url: 42 }, 'url'],
  ['unknown field', { url: 'https://drains.invalid/logs', events: ['deploy'] }, 'events'],
];

describe('log drain registration', () => {
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_LOG_DRAIN_WORKER: 'off', HATCHERY_WEBHOOK_ALLOW_HOSTS: ALLOWED });
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const stored = async (slug: string): Promise<Array<Record<string, unknown>>> =>
    t.gateway.ds.query('SELECT d.* FROM log_drains d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1 ORDER BY d.id', [slug]);

  it('REST: create (201, secret once), list (no secret), delete (204)', async () => {
    const egg = await makeEggWithPeople(t);
    const created = await postDrain(t, egg.owner.token, egg.slug, { url: 'https://drains.invalid/logs?token=abc', format: 'ndjson' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(DRAIN_ID),
      url: 'https://drains.invalid/logs?token=abc',
      format: 'ndjson',
      status: 'active',
      disabled_reason: null,
      last_error: null,
      last_delivered_at: null,
      created_at: expect.stringMatching(ISO_MS),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    // The format follows the scheme when not given; syslog has no secret; the port defaults to 6514.
    const syslog = await postDrain(t, egg.collaborator.token, egg.slug, { url: 'syslog+tls://DRAINS.invalid' });
    expect(syslog.status).toBe(201);
    expect(syslog.body).toMatchObject({ format: 'syslog', url: 'syslog+tls://drains.invalid:6514', secret: null });

    const listed = await listDrains(t, egg.owner.token, egg.slug);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ data: [expect.any(Object), expect.any(Object)], has_more: false, next_cursor: null });
    expect(listed.body.data.map((d: { id: string }) => d.id)).toEqual([syslog.body.id, created.body.id]); // newest first
    const { secret: _secret, ...record } = created.body;
    expect(listed.body.data[1]).toEqual(record);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    // The secret is stored sealed, never as it was shown.
    expect(JSON.stringify(await stored(egg.slug))).not.toContain(created.body.secret);

    const del = await deleteDrain(t, egg.collaborator.token, egg.slug, created.body.id);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expect((await listDrains(t, egg.owner.token, egg.slug)).body.data.map((d: { id: string }) => d.id)).toEqual([syslog.body.id]);
    expectProblem(await deleteDrain(t, egg.owner.token, egg.slug, created.body.id), 404, 'not_found');
  });

  it('a 4th drain → 422 limit_exceeded and nothing stored; also when the requests race', async () => {
    const egg = await makeEggWithPeople(t);
    for (let i = 0; i < 3; i++) expect((await postDrain(t, egg.owner.token, egg.slug, { url: `https://drains.invalid/${i}` })).status).toBe(201);
    const fourth = await postDrain(t, egg.owner.token, egg.slug, { url: 'https://drains.invalid/4' });
    expectProblem(fourth, 422, 'limit_exceeded');
    expect(fourth.body.errors[0].field).toBe('url');
    expect(await stored(egg.slug)).toHaveLength(3);

    const raced = await makeEggWithPeople(t);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => postDrain(t, raced.owner.token, raced.slug, { url: `https://drains.invalid/r${i}` })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 422, 422, 422]);
    for (const r of results.filter((x) => x.status === 422)) expectProblem(r, 422, 'limit_exceeded');
    expect(await stored(raced.slug)).toHaveLength(3);
  });

  it.each(REJECTED)('%s → 422 validation_failed naming the field, nothing stored', async (_what, body, field) => {
    const egg = await makeEggWithPeople(t);
    const res = await postDrain(t, egg.owner.token, egg.slug, body);
    expectInvalid(res, field);
    expect(await stored(egg.slug)).toEqual([]);
  });

  it('allow-listed hosts (any case, IP in any notation) and public addresses are accepted', async () => {
    const egg = await makeEggWithPeople(t);
    for (const url of ['https://93.184.216.34/logs', 'https://0x0a090807/logs', 'syslog+tls://10.9.8.7:6514']) {
      expect((await postDrain(t, egg.owner.token, egg.slug, { url })).status).toBe(201);
    }
  });

  it('unknown egg and another user’s egg → 404 (list, create, delete), nothing changed', async () => {
    const egg = await makeEggWithPeople(t);
    const { body } = await postDrain(t, egg.owner.token, egg.slug, { url: 'https://drains.invalid/mine' });
    const before = await stored(egg.slug);
    const missing = unique('nope');
    expectProblem(await listDrains(t, owner.token, missing), 404, 'not_found');
    expectProblem(await postDrain(t, owner.token, missing, { url: 'https://drains.invalid/x' }), 404, 'not_found');
    expectProblem(await listDrains(t, egg.stranger.token, egg.slug), 404, 'not_found');
    expectProblem(await postDrain(t, egg.stranger.token, egg.slug, { url: 'https://drains.invalid/x' }), 404, 'not_found');
    // Before the URL is even looked at: a stranger learns nothing from a bad URL either.
    expectProblem(await postDrain(t, egg.stranger.token, egg.slug, { url: 'https://127.0.0.1/x' }), 404, 'not_found');
    expectProblem(await deleteDrain(t, egg.stranger.token, egg.slug, body.id), 404, 'not_found');
    // Another egg's drain id through one's own egg is not found either.
    const mine = await makeEggWithPeople(t);
    expectProblem(await deleteDrain(t, mine.owner.token, mine.slug, body.id), 404, 'not_found');
    expect(await stored(egg.slug)).toEqual(before);
    expect((await listDrains(t, owner.token, egg.slug)).status).toBe(404);
  });

  it('GraphQL: createLogDrain, logDrains, App.logDrains, deleteLogDrain, and the same refusals', async () => {
    const egg = await makeEggWithPeople(t);
    const { createLogDrain } = await gqlOk(t.url, egg.owner.token, CreateLogDrainDocument, { app: egg.slug, url: 'https://drains.invalid/gql' });
    expect(createLogDrain.secret).toMatch(/^whsec_/);
    expect(createLogDrain.logDrain).toMatchObject({ format: 'NDJSON', status: 'ACTIVE', disabledReason: null, lastError: null, lastDeliveredAt: null });
    const { logDrains } = await gqlOk(t.url, egg.collaborator.token, LogDrainsDocument, { app: egg.slug });
    expect(logDrains).toEqual([createLogDrain.logDrain]);
    const { app } = await gqlOk(t.url, egg.owner.token, AppLogDrainsDocument, { app: egg.slug });
    expect(app.logDrains).toEqual(logDrains);

    const refused = await gql(t.url, egg.owner.token, CreateLogDrainDocument, { app: egg.slug, url: 'syslog+tls://127.0.0.1:6514' });
    expect(refused.errors?.[0].extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      errors: [{ field: 'url', message: expect.stringContaining('not an allowed address') }],
    });
    const hidden = await gql(t.url, egg.stranger.token, LogDrainsDocument, { app: egg.slug });
    expect(hidden.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    const hiddenCreate = await gql(t.url, egg.stranger.token, CreateLogDrainDocument, { app: egg.slug, url: 'https://drains.invalid/x' });
    expect(hiddenCreate.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    for (let i = 0; i < 2; i++) await gqlOk(t.url, egg.owner.token, CreateLogDrainDocument, { app: egg.slug, url: `https://drains.invalid/${i}` });
    const limited = await gql(t.url, egg.owner.token, CreateLogDrainDocument, { app: egg.slug, url: 'https://drains.invalid/4' });
    expect(limited.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
    expect(await stored(egg.slug)).toHaveLength(3);

    const { deleteLogDrain } = await gqlOk(t.url, egg.owner.token, DeleteLogDrainDocument, { app: egg.slug, id: createLogDrain.logDrain.id });
    expect(deleteLogDrain).toBe(createLogDrain.logDrain.id);
    const again = await gql(t.url, egg.owner.token, DeleteLogDrainDocument, { app: egg.slug, id: createLogDrain.logDrain.id });
    expect(again.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expect(await stored(egg.slug)).toHaveLength(2);
  });
});
