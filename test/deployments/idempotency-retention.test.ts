import { ManualClock } from '../../src/clock';
import { DeployDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser, unique } from '../support/factories';

const DAY_MS = 24 * 3600 * 1000;

/**
 * An Idempotency-Key is kept 24 h (CONTRACT.md "Deployments"): within that a retry replays the
 * first response; after it the key is free again and the same request deploys anew.
 */
describe('Idempotency-Key retention (24 h)', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const rowsOf = async (slug: string): Promise<string[]> =>
    (await t.gateway.ds.query('SELECT d.id FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1 ORDER BY d.id', [slug])).map(
      (r: { id: string }) => r.id,
    );
  const keyRows = async (key: string): Promise<Array<{ created_at: Date }>> =>
    t.gateway.ds.query('SELECT created_at FROM idempotency_keys WHERE user_id = $1 AND key = $2', [owner.id, key]);
  const post = (body: unknown, key: string) => rest(t.url, owner.token, 'POST', '/deploy', body, { 'Idempotency-Key': key });

  it('POST /deploy: at 24 h − 1 ms a retry replays the first response; at 24 h + 1 ms it makes a new deployment', async () => {
    const { slug } = await makeApp(t.url, owner);
    const key = unique('key');
    const body = { project: slug, env: { A: '1' } };
    const first = await post(body, key);
    expect(first.status).toBe(201);
    expect(await settle(t.url, owner, first.body.id)).toBe('LIVE');

    clock.advance(DAY_MS - 1);
    const replay = await post(body, key);
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    expect(await rowsOf(slug)).toEqual([first.body.id]);

    clock.advance(2); // 24 h + 1 ms after the first request
    const fresh = await post(body, key);
    expect(fresh.status).toBe(201);
    expect(fresh.body.id).not.toBe(first.body.id);
    expect(fresh.body.status).toBe('building');
    expect(fresh.body.created_at).toBe(clock.now().toISOString());
    expect(await rowsOf(slug)).toEqual([first.body.id, fresh.body.id].sort());
    // The key now belongs to the new request, from now.
    expect((await keyRows(key)).map((r) => r.created_at.toISOString())).toEqual([clock.now().toISOString()]);
    expect(await settle(t.url, owner, fresh.body.id)).toBe('LIVE');

    // …and replays the new response from now on.
    clock.advance(DAY_MS - 1);
    const again = await post(body, key);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(fresh.body.id);
    expect(await rowsOf(slug)).toHaveLength(2);
  });

  it('POST /deploy: within 24 h another body is a 422; after 24 h the key takes the new body', async () => {
    const { slug } = await makeApp(t.url, owner);
    const key = unique('key');
    const first = await post({ project: slug }, key);
    expect(first.status).toBe(201);
    expect(await settle(t.url, owner, first.body.id)).toBe('LIVE');

    clock.advance(DAY_MS - 1);
    const clash = await post({ project: slug, env: { B: '2' } }, key);
    expect(clash.status).toBe(422);
    expect(clash.body.code).toBe('validation_failed');
    expect(clash.body.errors.map((e: { field: string }) => e.field)).toEqual(['Idempotency-Key']);
    expect(await rowsOf(slug)).toEqual([first.body.id]);

    clock.advance(2);
    const fresh = await post({ project: slug, env: { B: '2' } }, key);
    expect(fresh.status).toBe(201);
    expect(fresh.body.id).not.toBe(first.body.id);
    expect(fresh.body.env_keys).toEqual(['B']);
    expect(await rowsOf(slug)).toHaveLength(2);
    expect(await settle(t.url, owner, fresh.body.id)).toBe('LIVE');
  });

  it('deploy(idempotencyKey:) keeps keys for the same 24 h', async () => {
    const { slug } = await makeApp(t.url, owner);
    const key = unique('key');
    const input = { project: slug };
    const first = (await gqlOk(t.url, owner.token, DeployDocument, { input, idempotencyKey: key })).deploy;
    expect(await settle(t.url, owner, first.id)).toBe('LIVE');

    clock.advance(DAY_MS - 1);
    const replay = (await gqlOk(t.url, owner.token, DeployDocument, { input, idempotencyKey: key })).deploy;
    expect(replay.id).toBe(first.id);
    expect(await rowsOf(slug)).toEqual([first.id]);

    clock.advance(2);
    const fresh = (await gqlOk(t.url, owner.token, DeployDocument, { input, idempotencyKey: key })).deploy;
    expect(fresh.id).not.toBe(first.id);
    expect(fresh.status).toBe('BUILDING');
    expect(await rowsOf(slug)).toEqual([first.id, fresh.id].sort());
    expect(await settle(t.url, owner, fresh.id)).toBe('LIVE');
  });
});
