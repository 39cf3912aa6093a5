import { EnergyReason } from '../../src/modules/energy/energy.entity';
import { startGateway, TestGateway } from '../support/gateway';
import { makeUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerRows } from './helpers';

describe('concurrent consumption', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  const consumeConcurrently = (userId: string, n: number, minutes: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        t.gateway.ds.transaction((tx) => t.gateway.services.energy.consume(tx, userId, minutes, EnergyReason.CRON_RUN, `run_${i}`)),
      ),
    );

  it('20 concurrent consumes of 10 against exactly 100 minutes take exactly 100, and nothing goes negative', async () => {
    const user = await makeUser(t.gateway);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 30, weekly: 30, bonus: 20, pack: 20 });
    expect(await energyOf(t.url, user.token)).toMatchObject({ total: 100 });

    const results = await consumeConcurrently(user.id, 20, 10);
    expect(results.reduce((sum, r) => sum + r.taken, 0)).toBe(100);
    expect(results.filter((r) => r.taken === 10)).toHaveLength(10);
    expect(results.filter((r) => r.taken === 0)).toHaveLength(10);

    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 0, bonus: 0, pack: 0, total: 0, depleted: true });
    const rows = await ledgerRows(t.gateway.ds, user.id);
    expect(rows.filter((r) => r.reason === 'cron_run').reduce((sum, r) => sum + r.delta, 0)).toBe(-100);
    expect(rows.every((r) => r.balance_after >= 0)).toBe(true);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('concurrent first touches of a new account grant its allowance once', async () => {
    const user = await makeUser(t.gateway);
    const results = await consumeConcurrently(user.id, 20, 10);
    expect(results.every((r) => r.taken === 10)).toBe(true);
    const rows = await ledgerRows(t.gateway.ds, user.id);
    expect(
      rows
        .filter((r) => r.reason === 'grant')
        .map((r) => [r.bucket, r.delta])
        .sort(),
    ).toEqual([
      ['daily', 120],
      ['weekly', 600],
    ]);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 520, total: 520 });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });
});
