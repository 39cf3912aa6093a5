import { ManualClock } from '../../src/clock';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle } from '../support/factories';
import { energyOf, expectLedgerConsistent } from './helpers';

const MINUTE = 60_000;

/**
 * "Each egg's current live deployment, metered by a job": with HATCHERY_JOBS on, a run of the
 * `energy-meter` pg-boss queue charges the live deployment. The test never calls meter() itself;
 * a second Jobs client on the same database queues the run, the way any gateway's schedule does,
 * and the gateway's own worker picks it up.
 */
describe('the energy-meter job (HATCHERY_JOBS=on)', () => {
  let t: TestGateway;
  let sender: Jobs;
  const clock = new ManualClock('2026-11-18T15:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' }, { clock });
    sender = new Jobs(t.db.url, createLogger('silent'));
    await sender.start([]);
  });
  afterAll(async () => {
    await sender.stop(1000);
    await t.stop();
  });

  const deploymentCharges = async (userId: string, ref: string): Promise<number> =>
    (
      await t.gateway.ds.query(`SELECT COALESCE(-SUM(delta), 0)::int AS n FROM energy_ledger WHERE user_id = $1 AND reason = 'deployment' AND ref = $2`, [
        userId,
        ref,
      ])
    )[0].n;

  /** Polls (bounded by a deadline) until `probe` holds: a job's effect is announced by nothing. */
  async function until(what: string, probe: () => Promise<boolean>, deadlineMs = 15_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('a queued energy-meter run charges the live deployment one minute per minute on the clock, once', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    expect(await deploymentCharges(owner.id, d.id)).toBe(0);

    clock.advance(3 * MINUTE);
    await sender.send('energy-meter');
    await until('the energy-meter job to charge 3 minutes', async () => (await deploymentCharges(owner.id, d.id)) >= 3);
    await until(
      'the energy-meter job to complete',
      async () => (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'energy-meter' AND state = 'completed'`))[0].n > 0,
    );
    expect(await deploymentCharges(owner.id, d.id)).toBe(3);
    expect(await energyOf(t.url, owner.token)).toMatchObject({ daily: 117, weekly: 600 });

    // Another run at the same moment on the clock charges nothing more.
    const completed = async () =>
      (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'energy-meter' AND state = 'completed'`))[0].n as number;
    const before = await completed();
    await sender.send('energy-meter');
    await until('the second energy-meter run to complete', async () => (await completed()) > before);
    expect(await deploymentCharges(owner.id, d.id)).toBe(3);

    // Two more minutes, another run: two more charged.
    clock.advance(2 * MINUTE);
    await sender.send('energy-meter');
    await until('the energy-meter job to charge 5 minutes in all', async () => (await deploymentCharges(owner.id, d.id)) >= 5);
    expect(await deploymentCharges(owner.id, d.id)).toBe(5);
    await expectLedgerConsistent(t.gateway.ds, owner.id);
  });
});
