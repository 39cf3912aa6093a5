import { ManualClock } from '../../src/clock';
import { DeployDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser } from '../support/factories';
import { energyOf, expectLedgerConsistent, ledgerRows } from './helpers';

const MINUTE = 60_000;
const EMPTY = { daily: 0, weekly: 0, bonus: 0, pack: 0 };

/**
 * CONTRACT.md: "Depleted energy skips cron runs; it does not refuse deploys." The clock stays well
 * inside one day, so no reset refills the buckets while a test runs.
 */
describe('depleted energy does not refuse deploys', () => {
  let t: TestGateway;
  const clock = new ManualClock('2026-11-18T15:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  const deploymentCharges = async (user: TestUser) => (await ledgerRows(t.gateway.ds, user.id)).filter((r) => r.reason === 'deployment');
  const statusOf = async (user: TestUser, id: string) => {
    const res = await rest(t.url, user.token, 'GET', `/deployments/${id}`);
    expect(res.status).toBe(200);
    return res.body.status as string;
  };

  it('an owner with every bucket at 0 deploys over REST (201) and GraphQL, both go LIVE, and metering them takes nothing below zero', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    await t.gateway.services.energy.setBuckets(owner.email, EMPTY);
    expect(await energyOf(t.url, owner.token)).toMatchObject({ ...EMPTY, total: 0, depleted: true });

    const viaRest = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug });
    expect(viaRest.status).toBe(201);
    expect(viaRest.body.status).toBe('building');
    expect(await settle(t.url, owner, viaRest.body.id)).toBe('LIVE');

    const viaGraphql = (await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug } })).deploy;
    expect(viaGraphql.status).toBe('BUILDING');
    expect(await settle(t.url, owner, viaGraphql.id)).toBe('LIVE');

    clock.advance(5 * MINUTE);
    await t.gateway.services.energy.meter();
    expect(await deploymentCharges(owner)).toEqual([]);
    expect(await energyOf(t.url, owner.token)).toMatchObject({ ...EMPTY, total: 0, depleted: true });
    expect(await expectLedgerConsistent(t.gateway.ds, owner.id)).toEqual(EMPTY);
    // Running out does not stop the egg either.
    expect(await statusOf(owner, viaGraphql.id)).toBe('live');
  });

  it('an egg that runs the account dry stays live, is charged only what was left, and the owner can still deploy', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    await t.gateway.services.energy.setBuckets(owner.email, { daily: 1, weekly: 0, bonus: 0, pack: 1 });
    const first = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug });
    expect(first.status).toBe(201);
    expect(await settle(t.url, owner, first.body.id)).toBe('LIVE');

    clock.advance(5 * MINUTE);
    await t.gateway.services.energy.meter();
    expect((await deploymentCharges(owner)).map((r) => [r.bucket, r.delta, r.ref])).toEqual([
      ['daily', -1, first.body.id],
      ['pack', -1, first.body.id],
    ]);
    expect(await energyOf(t.url, owner.token)).toMatchObject({ total: 0, depleted: true });
    expect(await statusOf(owner, first.body.id)).toBe('live');

    const second = await rest(t.url, owner.token, 'POST', '/deploy', { project: slug });
    expect(second.status).toBe(201);
    expect(await settle(t.url, owner, second.body.id)).toBe('LIVE');
    clock.advance(3 * MINUTE);
    await t.gateway.services.energy.meter();
    expect(await deploymentCharges(owner)).toHaveLength(2);
    expect(await expectLedgerConsistent(t.gateway.ds, owner.id)).toEqual(EMPTY);
  });
});
