import { ManualClock } from '../../src/clock';
import { ConfigError, loadConfig } from '../../src/config';
import { EnergyReason } from '../../src/modules/energy/energy.entity';
import { startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerOf } from './helpers';

const WEDNESDAY = '2026-11-18T15:00:00.000Z';

describe('allowances come from HATCHERY_ENERGY_*', () => {
  let t: TestGateway;
  const clock = new ManualClock(WEDNESDAY);

  beforeAll(async () => {
    t = await startGateway(
      {
        HATCHERY_ENERGY_FREE_DAILY: '30',
        HATCHERY_ENERGY_FREE_WEEKLY: '200',
        HATCHERY_ENERGY_ALWAYS_ON_DAILY: '90',
        HATCHERY_ENERGY_ALWAYS_ON_WEEKLY: '700',
      },
      { clock },
    );
  });
  afterAll(() => t.stop());
  beforeEach(() => clock.set(WEDNESDAY));

  it('grants a new free account the configured daily and weekly allowance', async () => {
    const user = await makeUser(t.gateway);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 30, weekly: 200, bonus: 0, pack: 0, total: 230, depleted: false });
    const grants = (await ledgerOf(t.url, user.token)).filter((e) => e.reason === 'GRANT');
    expect(grants.map((e) => [e.bucket, e.delta]).sort()).toEqual([
      ['DAILY', 30],
      ['WEEKLY', 200],
    ]);
  });

  it('refills the daily bucket to the configured allowance at 00:00 UTC', async () => {
    const user = await makeUser(t.gateway);
    const taken = await t.gateway.ds.transaction((tx) => t.gateway.services.energy.consume(tx, user.id, 50, EnergyReason.CRON_RUN, null));
    expect(taken).toEqual({ taken: 50, depleted: false });
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 0, weekly: 180 });
    clock.set('2026-11-19T00:00:01.000Z');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 30, weekly: 180 });
    clock.set('2026-11-23T00:00:01.000Z');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 30, weekly: 200 });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('grants the configured always_on allowance to an account owning an always_on egg', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    await t.gateway.services.apps.setTier(slug, 'always_on');
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 90, weekly: 700, total: 790 });
  });

  it('rejects allowances that are not whole numbers of 0 or more', () => {
    for (const bad of ['-1', 'abc', '1.5']) {
      expect(() => loadConfig({ HATCHERY_ENERGY_FREE_DAILY: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ HATCHERY_ENERGY_ALWAYS_ON_WEEKLY: bad })).toThrow(ConfigError);
    }
    expect(loadConfig({ HATCHERY_ENERGY_FREE_DAILY: '0' }).energy.free.daily).toBe(0);
  });
});
