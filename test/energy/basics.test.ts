import { ManualClock } from '../../src/clock';
import { AddCollaboratorDocument, EnergyDocument } from '../../src/client/generated';
import { gql, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerOf } from './helpers';

// A Wednesday afternoon; the next daily reset is Thursday 00:00, the next weekly Monday 23 Nov.
const WEDNESDAY = '2026-11-18T15:00:00.000Z';
const THURSDAY_MIDNIGHT = '2026-11-19T00:00:00.000Z';
const NEXT_MONDAY = '2026-11-23T00:00:00.000Z';
const MINUTE = 60_000;

describe('energy of a new account', () => {
  let t: TestGateway;
  const clock = new ManualClock(WEDNESDAY);

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());
  beforeEach(() => clock.set(WEDNESDAY));

  it('starts with the free allowances: daily 120, weekly 600, bonus 0, pack 0, total 720, not depleted', async () => {
    const user = await makeUser(t.gateway);
    expect(await energyOf(t.url, user.token)).toEqual({
      daily: 120,
      weekly: 600,
      bonus: 0,
      pack: 0,
      total: 720,
      depleted: false,
      dailyResetsAt: THURSDAY_MIDNIGHT,
      weeklyResetsAt: NEXT_MONDAY,
    });
    // The service agrees with GraphQL.
    expect(await t.gateway.services.energy.balanceOf(user.id)).toMatchObject({ daily: 120, weekly: 600, bonus: 0, pack: 0, total: 720, depleted: false });
  });

  it('lists the first allowance as GRANT entries, once, however often the balance is read', async () => {
    const user = await makeUser(t.gateway);
    await energyOf(t.url, user.token);
    await energyOf(t.url, user.token);
    const ledger = await ledgerOf(t.url, user.token);
    expect(ledger).toHaveLength(2);
    expect(
      ledger
        .map(({ bucket, delta, balanceAfter, reason, ref }) => ({ bucket, delta, balanceAfter, reason, ref }))
        .sort((a, b) => a.bucket.localeCompare(b.bucket)),
    ).toEqual([
      { bucket: 'DAILY', delta: 120, balanceAfter: 120, reason: 'GRANT', ref: null },
      { bucket: 'WEEKLY', delta: 600, balanceAfter: 600, reason: 'GRANT', ref: null },
    ]);
    for (const entry of ledger) {
      expect(entry.id).toMatch(/^led_/);
      expect(entry.createdAt).toBe(WEDNESDAY);
    }
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('shows each caller only their own ledger', async () => {
    const a = await makeUser(t.gateway);
    const b = await makeUser(t.gateway);
    await energyOf(t.url, a.token);
    await t.gateway.services.energy.setBuckets(b.email, { bonus: 7 });
    const ledgerA = await ledgerOf(t.url, a.token);
    expect(ledgerA.map((e) => e.reason)).toEqual(['GRANT', 'GRANT']);
    const ledgerB = await ledgerOf(t.url, b.token);
    expect(ledgerB.filter((e) => e.reason === 'OPERATOR')).toEqual([expect.objectContaining({ bucket: 'BONUS', delta: 7, balanceAfter: 7 })]);
  });

  it.each([
    ['on a Monday at 00:00 exactly', '2026-11-23T00:00:00.000Z', '2026-11-24T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ['on a Sunday just before midnight', '2026-11-22T23:59:59.999Z', '2026-11-23T00:00:00.000Z', '2026-11-23T00:00:00.000Z'],
    ['on a Saturday', '2026-11-21T08:30:00.000Z', '2026-11-22T00:00:00.000Z', '2026-11-23T00:00:00.000Z'],
    ['at the end of a month and year', '2026-12-31T12:00:00.000Z', '2027-01-01T00:00:00.000Z', '2027-01-04T00:00:00.000Z'],
  ])('reports the next 00:00 UTC and the next Monday 00:00 UTC %s', async (_label, now, daily, weekly) => {
    clock.set(now);
    const user = await makeUser(t.gateway);
    expect(await energyOf(t.url, user.token)).toMatchObject({ dailyResetsAt: daily, weeklyResetsAt: weekly });
  });

  it('gives an account that owns an always_on egg 1440 daily and 5000 weekly from its next resets', async () => {
    const user = await makeUser(t.gateway);
    await energyOf(t.url, user.token); // the account starts on the free allowance
    const { slug } = await makeApp(t.url, user);
    await t.gateway.services.apps.setTier(slug, 'always_on');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 120, weekly: 600 });

    clock.set(new Date(Date.parse(THURSDAY_MIDNIGHT) + MINUTE));
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 1440, weekly: 600, total: 2040 });

    clock.set(new Date(Date.parse(NEXT_MONDAY) + MINUTE));
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 1440, weekly: 5000, total: 6440, weeklyResetsAt: '2026-11-30T00:00:00.000Z' });

    const ledger = await ledgerOf(t.url, user.token);
    expect(ledger.filter((e) => e.reason === 'DAILY_RESET').map((e) => [e.bucket, e.delta, e.balanceAfter])).toEqual([['DAILY', 1320, 1440]]);
    expect(ledger.filter((e) => e.reason === 'WEEKLY_RESET').map((e) => [e.bucket, e.delta, e.balanceAfter])).toEqual([['WEEKLY', 4400, 5000]]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('starts a new account that already owns an always_on egg with 1440 / 5000', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    await t.gateway.services.apps.setTier(slug, 'always_on');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 1440, weekly: 5000, bonus: 0, pack: 0, total: 6440, depleted: false });
  });

  it('a collaborator on an always_on egg keeps the free allowance (the tier counts for its owner)', async () => {
    const owner = await makeUser(t.gateway);
    const collaborator = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    await t.gateway.services.apps.setTier(slug, 'always_on');
    const added = await gql(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
    expect(added.errors).toBeUndefined();
    expect(await energyOf(t.url, collaborator.token)).toMatchObject({ daily: 120, weekly: 600 });
  });

  it('needs a token', async () => {
    const res = await gql(t.url, null, EnergyDocument, {});
    expect(res.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(res.data?.energy ?? null).toBeNull();
  });
});
