import { ManualClock } from '../../src/clock';
import { EnergyReason } from '../../src/modules/energy/energy.entity';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { deliver, energyOf, expectLedgerConsistent, ledgerRows, sessionEvent, signature, storedBalances, WEBHOOK_SECRET } from './helpers';

const WEDNESDAY = '2026-11-18T15:00:00.000Z';

describe('energy consumption', () => {
  let t: TestGateway;
  const clock = new ManualClock(WEDNESDAY);

  beforeAll(async () => {
    t = await startGateway({ STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET }, { clock });
  });
  afterAll(() => t.stop());
  beforeEach(() => clock.set(WEDNESDAY));

  const consume = (user: TestUser, minutes: number, ref: string | null = null, reason = EnergyReason.CRON_RUN) =>
    t.gateway.ds.transaction((tx) => t.gateway.services.energy.consume(tx, user.id, minutes, reason, ref));
  const rowsFor = async (user: TestUser, ref: string) => (await ledgerRows(t.gateway.ds, user.id)).filter((r) => r.ref === ref);

  it('takes daily, then weekly, then bonus, then pack, and never below zero', async () => {
    const user = await makeUser(t.gateway);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 10, weekly: 20, bonus: 30, pack: 40 });

    expect(await consume(user, 15, 'run_a')).toEqual({ taken: 15, depleted: false });
    expect(await storedBalances(t.gateway.ds, user.id)).toEqual({ daily: 0, weekly: 15, bonus: 30, pack: 40 });
    expect((await rowsFor(user, 'run_a')).map((r) => [r.bucket, r.delta, r.balance_after, r.reason])).toEqual([
      ['daily', -10, 0, 'cron_run'],
      ['weekly', -5, 15, 'cron_run'],
    ]);

    expect(await consume(user, 50, 'run_b')).toEqual({ taken: 50, depleted: false });
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 0, bonus: 0, pack: 35, total: 35, depleted: false });
    expect((await rowsFor(user, 'run_b')).map((r) => [r.bucket, r.delta, r.balance_after])).toEqual([
      ['weekly', -15, 0],
      ['bonus', -30, 0],
      ['pack', -5, 35],
    ]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('does not take the remainder when everything is empty, and reports depleted', async () => {
    const user = await makeUser(t.gateway);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 3, weekly: 0, bonus: 2, pack: 1 });

    expect(await consume(user, 10, 'run_c')).toEqual({ taken: 6, depleted: true });
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 0, bonus: 0, pack: 0, total: 0, depleted: true });
    expect((await rowsFor(user, 'run_c')).map((r) => [r.bucket, r.delta])).toEqual([
      ['daily', -3],
      ['bonus', -2],
      ['pack', -1],
    ]);

    // Nothing left: nothing taken, nothing written.
    const before = (await ledgerRows(t.gateway.ds, user.id)).length;
    expect(await consume(user, 5, 'run_d')).toEqual({ taken: 0, depleted: true });
    expect(await ledgerRows(t.gateway.ds, user.id)).toHaveLength(before);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('taking exactly what is left empties the account and reports depleted', async () => {
    const user = await makeUser(t.gateway);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 4, weekly: 0, bonus: 0, pack: 6 });
    expect(await consume(user, 10)).toEqual({ taken: 10, depleted: true });
    expect(await energyOf(t.url, user.token)).toMatchObject({ total: 0, depleted: true });
  });

  it('is not depleted while any one bucket has minutes', async () => {
    const user = await makeUser(t.gateway);
    for (const bucket of ['daily', 'weekly', 'bonus', 'pack'] as const) {
      await t.gateway.services.energy.setBuckets(user.email, { daily: 0, weekly: 0, bonus: 0, pack: 0, [bucket]: 1 });
      expect(await energyOf(t.url, user.token)).toMatchObject({ total: 1, depleted: false, [bucket]: 1 });
    }
    await t.gateway.services.energy.setBuckets(user.email, { pack: 0 });
    expect(await energyOf(t.url, user.token)).toMatchObject({ total: 0, depleted: true });
  });

  it('after consumes, a checkout credit, set-energy and daily and weekly resets, the balances equal the ledger sums', async () => {
    const user = await makeUser(t.gateway);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 120, weekly: 600 });

    expect((await consume(user, 100, 'run_1')).taken).toBe(100); // daily 20
    const checkout = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
    expect(checkout.status).toBe(201);
    const payload = sessionEvent('checkout.session.completed', checkout.body.session_id);
    expect((await deliver(t.url, payload, signature(payload))).status).toBe(200); // pack 1000
    expect((await consume(user, 50, 'run_2')).taken).toBe(50); // daily 0, weekly 570
    await t.gateway.services.energy.setBuckets(user.email, { weekly: 10, bonus: 40 });
    expect((await consume(user, 30, 'run_3')).taken).toBe(30); // weekly 0, bonus 20
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 0, bonus: 20, pack: 1000 });

    clock.set('2026-11-19T00:00:01.000Z'); // past midnight: daily back to 120
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 120, weekly: 0, bonus: 20, pack: 1000 });
    expect((await consume(user, 150, 'run_4')).taken).toBe(150); // daily 0, bonus 0, pack 990

    clock.set('2026-11-23T00:00:01.000Z'); // past Monday: daily 120, weekly 600
    expect((await consume(user, 5, 'run_5')).taken).toBe(5);

    const expected = { daily: 115, weekly: 600, bonus: 0, pack: 990 };
    expect(await energyOf(t.url, user.token)).toMatchObject({ ...expected, total: 1705, depleted: false });
    expect(await expectLedgerConsistent(t.gateway.ds, user.id)).toEqual(expected);
    const reasons = new Set((await ledgerRows(t.gateway.ds, user.id)).map((r) => r.reason));
    expect([...reasons].sort()).toEqual(['cron_run', 'daily_reset', 'grant', 'operator', 'pack_purchase', 'weekly_reset']);
  });
});
