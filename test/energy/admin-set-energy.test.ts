import { admin, CLI_TIMEOUT_MS } from '../support/cli';
import { startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerRows, storedBalances } from './helpers';

jest.setTimeout(4 * CLI_TIMEOUT_MS);

describe('admin set-energy', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  const snapshot = async (user: TestUser) => ({
    balances: await storedBalances(t.gateway.ds, user.id),
    ledger: await ledgerRows(t.gateway.ds, user.id),
  });

  it('sets the given buckets, prints one JSON line with the balance, and writes OPERATOR ledger rows', async () => {
    const user = await makeUser(t.gateway);
    await energyOf(t.url, user.token);

    const res = await admin(t.db.url, 'set-energy', user.email, '--daily', '0', '--pack', '50');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^[^\n]+\n$/);
    expect(JSON.parse(res.stdout)).toEqual({ email: user.email, daily: 0, weekly: 600, bonus: 0, pack: 50, total: 650, depleted: false });

    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 600, bonus: 0, pack: 50, total: 650, depleted: false });
    const operator = (await ledgerRows(t.gateway.ds, user.id)).filter((r) => r.reason === 'operator');
    expect(operator.map((r) => [r.bucket, r.delta, r.balance_after])).toEqual([
      ['daily', -120, 0],
      ['pack', 50, 50],
    ]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('can deplete an account, and works for an account that never looked at its energy', async () => {
    const user = await makeUser(t.gateway);
    const res = await admin(t.db.url, 'set-energy', user.email, '--daily', '0', '--weekly', '0', '--bonus', '0', '--pack', '0');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ daily: 0, weekly: 0, bonus: 0, pack: 0, total: 0, depleted: true });
    expect(await energyOf(t.url, user.token)).toMatchObject({ total: 0, depleted: true });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it.each([
    ['an unknown flag', ['--foo', '1']],
    ['a negative value', ['--daily', '-1']],
    ['a value that is not a number', ['--daily', 'abc']],
    ['a fraction', ['--daily', '1.5']],
    ['a flag without a value', ['--daily']],
    ['no flags', []],
    ['a flag given twice', ['--daily', '5', '--daily', '6']],
    ['a valid flag followed by a bad one', ['--pack', '5', '--bogus', '1']],
  ])('refuses %s: exits non-zero, prints an error, changes nothing', async (_label, flags) => {
    const user = await makeUser(t.gateway);
    await energyOf(t.url, user.token);
    const before = await snapshot(user);

    const res = await admin(t.db.url, 'set-energy', user.email, ...flags);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(JSON.parse(res.stderr.trim().split('\n').at(-1)!)).toHaveProperty('error');
    expect(await snapshot(user)).toEqual(before);
  });

  it('refuses an unknown email: exits non-zero and creates nothing', async () => {
    const count = async () =>
      (await t.gateway.ds.query('SELECT (SELECT count(*) FROM energy_accounts)::int AS a, (SELECT count(*) FROM energy_ledger)::int AS l'))[0];
    const before = await count();
    const res = await admin(t.db.url, 'set-energy', 'nobody-here@example.com', '--daily', '5');
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(JSON.parse(res.stderr.trim().split('\n').at(-1)!)).toHaveProperty('error');
    expect(await count()).toEqual(before);
  });
});
