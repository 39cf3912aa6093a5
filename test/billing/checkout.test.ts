import { CreateEnergyPackCheckoutDocument } from '../../src/client/generated';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { ISO_MS, makeUser, TestUser } from '../support/factories';
import { expectProblem } from '../rest/problem';
import { energyOf, WEBHOOK_SECRET } from '../energy/helpers';

describe('POST /billing/energy-pack/checkout (sandbox provider)', () => {
  let t: TestGateway;
  let user: TestUser;

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
    user = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const sessionsOf = async (u: TestUser): Promise<number> =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE user_id = $1', [u.id]))[0].n;

  it('answers 201 {checkout_url, session_id, expires_at} and credits nothing by itself', async () => {
    const started = Date.now();
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(res.status).toBe(201);
    expect(res.headers.get('api-version')).toBe('2026-09-01');
    expect(Object.keys(res.body).sort()).toEqual(['checkout_url', 'expires_at', 'session_id']);
    expect(res.body.session_id).toMatch(/^chk_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
    expect(new URL(res.body.checkout_url).protocol).toMatch(/^https?:$/);
    expect(res.body.expires_at).toMatch(ISO_MS);
    expect(Date.parse(res.body.expires_at)).toBeGreaterThan(started);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
  });

  it('gives every checkout its own session', async () => {
    const a = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    const b = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout', {});
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.session_id).not.toBe(b.body.session_id);
    expect(a.body.checkout_url).not.toBe(b.body.checkout_url);
  });

  it('is there with API-Version 2026-09-01', async () => {
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout', undefined, { 'API-Version': '2026-09-01' });
    expect(res.status).toBe(201);
    expect(res.headers.get('api-version')).toBe('2026-09-01');
  });

  it('is 404 with API-Version 2026-01-15, and no session is made', async () => {
    const other = await makeUser(t.gateway);
    const res = await rest(t.url, other.token, 'POST', '/billing/energy-pack/checkout', undefined, { 'API-Version': '2026-01-15' });
    expectProblem(res, 404, 'not_found');
    expect(res.headers.get('api-version')).toBe('2026-01-15');
    expect(await sessionsOf(other)).toBe(0);
  });

  it('answers 400 for an unknown API-Version', async () => {
    const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout', undefined, { 'API-Version': '2026-05-01' });
    expectProblem(res, 400, 'bad_request');
  });

  it.each([
    ['no token', null],
    ['an unknown token', 'hatch_notatoken'],
  ])('answers 401 with %s', async (_label, token) => {
    const before = (await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions'))[0].n;
    const res = await rest(t.url, token, 'POST', '/billing/energy-pack/checkout');
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions'))[0].n).toBe(before);
  });

  it('answers 422 for a body field it does not take', async () => {
    const other = await makeUser(t.gateway);
    const res = await rest(t.url, other.token, 'POST', '/billing/energy-pack/checkout', { minutes: 5000 });
    expectProblem(res, 422, 'validation_failed');
    expect(res.body.errors).toEqual([expect.objectContaining({ field: 'minutes' })]);
    expect(await sessionsOf(other)).toBe(0);
  });

  it('has a GraphQL twin, createEnergyPackCheckout', async () => {
    const { createEnergyPackCheckout: c } = await gqlOk(t.url, user.token, CreateEnergyPackCheckoutDocument, {});
    expect(c.sessionId).toMatch(/^chk_/);
    expect(new URL(c.checkoutUrl).pathname).toContain(c.sessionId);
    expect(c.expiresAt).toMatch(ISO_MS);
    expect(Date.parse(c.expiresAt)).toBeGreaterThan(Date.now());

    const anonymous = await gql(t.url, null, CreateEnergyPackCheckoutDocument, {});
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
