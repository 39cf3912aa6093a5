import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { expectProblem } from '../rest/problem';
import { energyOf, WEBHOOK_SECRET } from '../energy/helpers';

const CHECKOUT = '/billing/energy-pack/checkout';

/** CONTRACT.md status table for the checkout route: bodies that are not a JSON object are refused, nothing is made. */
describe('POST /billing/energy-pack/checkout refuses bodies it cannot read', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET });
  });
  afterAll(() => t.stop());

  const sessionsOf = async (u: TestUser): Promise<number> =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE user_id = $1', [u.id]))[0].n;
  const allSessions = async (): Promise<number> => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions'))[0].n;

  it.each([
    ['malformed JSON', '{"x":'],
    ['a JSON array', '[]'],
    ['a JSON string', '"checkout"'],
  ])('%s as application/json → 400 bad_request; no session is made', async (_label, body) => {
    const user = await makeUser(t.gateway);
    const before = await allSessions();
    const res = await rest(t.url, user.token, 'POST', CHECKOUT, body, { 'content-type': 'application/json' });
    expectProblem(res, 400, 'bad_request');
    expect(await sessionsOf(user)).toBe(0);
    expect(await allSessions()).toBe(before);
    expect(await energyOf(t.url, user.token)).toMatchObject({ pack: 0 });
  });

  it.each([
    ['application/x-www-form-urlencoded', 'a=b'],
    ['text/plain', '{}'],
  ])('a body sent as %s → 415 unsupported_media_type; no session is made', async (type, body) => {
    const user = await makeUser(t.gateway);
    const before = await allSessions();
    const res = await rest(t.url, user.token, 'POST', CHECKOUT, body, { 'content-type': type });
    expectProblem(res, 415, 'unsupported_media_type');
    expect(await sessionsOf(user)).toBe(0);
    expect(await allSessions()).toBe(before);
  });

  it('the same account’s well-formed request right after the refusals still makes its one session', async () => {
    const user = await makeUser(t.gateway);
    expectProblem(await rest(t.url, user.token, 'POST', CHECKOUT, '{"x":', { 'content-type': 'application/json' }), 400, 'bad_request');
    expectProblem(
      await rest(t.url, user.token, 'POST', CHECKOUT, 'a=b', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'unsupported_media_type',
    );
    const ok = await rest(t.url, user.token, 'POST', CHECKOUT, '{}', { 'content-type': 'application/json' });
    expect(ok.status).toBe(201);
    expect(await sessionsOf(user)).toBe(1);
  });
});
