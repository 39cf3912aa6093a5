import { ManualClock } from '../../src/clock';
import { RollbackDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerRows } from './helpers';

const MINUTE = 60_000;

/**
 * Builds run on real timers; the ManualClock only stamps times (finished_at, ledger rows), so the
 * meter sees exactly the minutes the test moves the clock by.
 */
describe('metering of live deployments', () => {
  let t: TestGateway;
  const clock = new ManualClock('2026-11-18T15:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  const deploymentCharges = async (user: TestUser) => (await ledgerRows(t.gateway.ds, user.id)).filter((r) => r.reason === 'deployment');
  const chargedTo = async (user: TestUser, ref: string) => (await deploymentCharges(user)).filter((r) => r.ref === ref).reduce((sum, r) => sum - r.delta, 0);

  async function liveDeployment(user: TestUser, slug: string): Promise<string> {
    const d = await deploy(t.url, user, slug);
    expect(await settle(t.url, user, d.id)).toBe('LIVE');
    return d.id;
  }

  it('charges one minute per whole minute live, once, with the deployment as ref', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const id = await liveDeployment(user, slug);

    // Live for less than a minute: nothing yet.
    clock.advance(59_999);
    expect(await t.gateway.services.energy.meter()).toBe(0);

    clock.advance(5 * MINUTE + 30_000 - 59_999); // 5 min 30 s after going live
    expect(await t.gateway.services.energy.meter()).toBe(5);
    const rows = await deploymentCharges(user);
    expect(rows.every((r) => r.ref === id)).toBe(true);
    expect(await chargedTo(user, id)).toBe(5);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 115, weekly: 600 });

    // Same moment again: nothing more.
    expect(await t.gateway.services.energy.meter()).toBe(0);
    expect(await chargedTo(user, id)).toBe(5);

    // The 30 s left over plus 30 s more make the sixth minute.
    clock.advance(30_000);
    expect(await t.gateway.services.energy.meter()).toBe(1);
    expect(await chargedTo(user, id)).toBe(6);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 114 });
    await expectLedgerConsistent(t.gateway.ds, user.id);

    // A deleted deployment is no longer metered.
    expect((await rest(t.url, user.token, 'DELETE', `/deployments/${id}`)).status).toBe(204);
    clock.advance(10 * MINUTE);
    await t.gateway.services.energy.meter();
    expect(await chargedTo(user, id)).toBe(6);
  });

  it('a sleeping egg is not metered: the minutes it slept are skipped when it wakes; a request after idleSince keeps it awake', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const id = await liveDeployment(user, slug);
    const deployments = t.gateway.services.deployments;

    clock.advance(MINUTE + 30_000);
    expect(await t.gateway.services.energy.meter()).toBe(1);
    // A request just now: idle since before it is not idle.
    await deployments.touch([id]);
    expect(await deployments.markAsleep(id, new Date(clock.now().getTime() - 1000))).toBe(false);
    expect(await deployments.markAsleep(id, clock.now())).toBe(true);
    // Asleep: nothing is charged however long it sleeps.
    clock.advance(30 * MINUTE);
    expect(await t.gateway.services.energy.meter()).toBe(0);
    expect(await chargedTo(user, id)).toBe(1);
    // Woken: the 30 s it ran before sleeping and 30 s after make one more minute.
    expect((await deployments.wakeForRequest(id))?.deploymentId).toBe(id);
    clock.advance(29_999);
    expect(await t.gateway.services.energy.meter()).toBe(0);
    clock.advance(1);
    expect(await t.gateway.services.energy.meter()).toBe(1);
    expect(await chargedTo(user, id)).toBe(2);
  });

  it('meters only the egg’s current live deployment, not an older live one', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const older = await liveDeployment(user, slug);
    const current = await liveDeployment(user, slug);

    clock.advance(3 * MINUTE);
    await t.gateway.services.energy.meter();
    expect(await chargedTo(user, current)).toBe(3);
    expect(await chargedTo(user, older)).toBe(0);
    expect(await energyOf(t.url, user.token)).toMatchObject({ daily: 117 });
  });

  it('draws deployment minutes in consumption order and stops at zero', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 1, weekly: 1, bonus: 1, pack: 1 });
    const id = await liveDeployment(user, slug);
    clock.advance(6 * MINUTE);
    await t.gateway.services.energy.meter();
    expect((await deploymentCharges(user)).map((r) => [r.bucket, r.delta, r.ref])).toEqual([
      ['daily', -1, id],
      ['weekly', -1, id],
      ['bonus', -1, id],
      ['pack', -1, id],
    ]);
    expect(await energyOf(t.url, user.token)).toMatchObject({ total: 0, depleted: true });
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('after a rollback, charges the egg once per minute of wall time (no minute billed to two deployments)', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const older = await liveDeployment(user, slug);
    const newer = await liveDeployment(user, slug);

    clock.advance(10 * MINUTE);
    await t.gateway.services.energy.meter();
    expect(await chargedTo(user, newer)).toBe(10);

    await gqlOk(t.url, user.token, RollbackDocument, { app: slug, to: older });
    clock.advance(2 * MINUTE);
    await t.gateway.services.energy.meter();
    // 12 minutes passed while exactly one deployment of the egg was current.
    const total = (await chargedTo(user, older)) + (await chargedTo(user, newer));
    expect(total).toBe(12);
  });
});
