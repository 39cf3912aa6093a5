import { ManualClock } from '../../src/clock';
import { EnergyReason } from '../../src/modules/energy/energy.entity';
import { startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerRows } from './helpers';

const WEDNESDAY = '2026-11-18T15:00:00.000Z';

describe('daily and weekly resets', () => {
  let t: TestGateway;
  const clock = new ManualClock(WEDNESDAY);

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());
  beforeEach(() => clock.set(WEDNESDAY));

  const consume = (user: TestUser, minutes: number) =>
    t.gateway.ds.transaction((tx) => t.gateway.services.energy.consume(tx, user.id, minutes, EnergyReason.CRON_RUN, null));
  const resetRows = async (user: TestUser) =>
    (await ledgerRows(t.gateway.ds, user.id))
      .filter((r) => r.reason === 'daily_reset' || r.reason === 'weekly_reset')
      .map((r) => [r.reason, r.bucket, r.delta, r.balance_after]);

  it('refills daily at 00:00 UTC but not weekly; refills weekly on Monday 00:00 UTC; bonus and pack are untouched', async () => {
    const user = await makeUser(t.gateway);
    expect((await consume(user, 150)).taken).toBe(150); // daily 0, weekly 570
    await t.gateway.services.energy.setBuckets(user.email, { bonus: 5, pack: 7 });

    clock.set('2026-11-18T23:59:59.999Z');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 570, bonus: 5, pack: 7, dailyResetsAt: '2026-11-19T00:00:00.000Z' });
    expect(await resetRows(user)).toEqual([]);

    clock.set('2026-11-19T00:00:00.000Z');
    expect(await energyOf(t.url, user.token)).toMatchObject({
      daily: 120,
      weekly: 570,
      bonus: 5,
      pack: 7,
      dailyResetsAt: '2026-11-20T00:00:00.000Z',
      weeklyResetsAt: '2026-11-23T00:00:00.000Z',
    });
    expect(await resetRows(user)).toEqual([['daily_reset', 'daily', 120, 120]]);

    expect((await consume(user, 130)).taken).toBe(130); // daily 0, weekly 560
    clock.set('2026-11-22T23:59:59.999Z'); // Sunday night: a new day, still the same week
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 120, weekly: 560, bonus: 5, pack: 7, weeklyResetsAt: '2026-11-23T00:00:00.000Z' });
    // Several days passed, one refill.
    expect(await resetRows(user)).toEqual([
      ['daily_reset', 'daily', 120, 120],
      ['daily_reset', 'daily', 120, 120],
    ]);

    clock.set('2026-11-23T00:00:00.001Z');
    expect(await energyOf(t.url, user.token)).toMatchObject({
      daily: 120,
      weekly: 600,
      bonus: 5,
      pack: 7,
      total: 732,
      weeklyResetsAt: '2026-11-30T00:00:00.000Z',
    });
    // Daily was already full: no zero row for it.
    expect((await resetRows(user)).slice(2)).toEqual([['weekly_reset', 'weekly', 40, 600]]);

    const bonusAndPack = (await ledgerRows(t.gateway.ds, user.id)).filter((r) => r.bucket === 'bonus' || r.bucket === 'pack');
    expect(bonusAndPack.map((r) => [r.bucket, r.reason, r.delta])).toEqual([
      ['bonus', 'operator', 5],
      ['pack', 'operator', 7],
    ]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('brings a daily bucket above the allowance back down to it', async () => {
    const user = await makeUser(t.gateway);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 500 });
    clock.set('2026-11-19T08:00:00.000Z');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 120 });
    expect(await resetRows(user)).toEqual([['daily_reset', 'daily', -380, 120]]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('after weeks without use, refills once and schedules the next Monday after now', async () => {
    const user = await makeUser(t.gateway);
    expect((await consume(user, 700)).taken).toBe(700); // daily 0, weekly 20
    clock.set('2026-12-10T12:00:00.000Z'); // a Thursday three weeks on
    expect(await energyOf(t.url, user.token)).toMatchObject({
      daily: 120,
      weekly: 600,
      dailyResetsAt: '2026-12-11T00:00:00.000Z',
      weeklyResetsAt: '2026-12-14T00:00:00.000Z',
    });
    expect(await resetRows(user)).toEqual([
      ['daily_reset', 'daily', 120, 120],
      ['weekly_reset', 'weekly', 580, 600],
    ]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('a consume right after midnight uses the refilled daily bucket first', async () => {
    const user = await makeUser(t.gateway);
    expect((await consume(user, 130)).taken).toBe(130); // daily 0, weekly 590
    clock.set('2026-11-19T00:00:05.000Z');
    expect(await consume(user, 10)).toEqual({ taken: 10, depleted: false });
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 110, weekly: 590 });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });
});
