import { buildApp, Gateway } from '../../src/app';
import { ManualClock } from '../../src/clock';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { expectLedgerConsistent, ledgerRows } from '../energy/helpers';
import { until } from '../faults/helpers';

const MINUTE = 60_000;

/**
 * pg-boss jobs on two gateways of one database (HATCHERY_JOBS on both): runs of the energy meter
 * sent from both sides at once are worked on both gateways at the same moment, and a live
 * deployment is still charged once per minute, never twice. Both gateways share a ManualClock, so
 * the meter sees exactly the minutes the test moves it by. Each gateway's meter is wrapped so that
 * the first run of each round on one gateway waits until the other gateway has started one too:
 * the two runs overlap for certain, whatever the workers' polling order.
 */
describe('pg-boss jobs on two gateways run once', () => {
  // Real time, moved forward only: runner leases stamped by this clock stay ahead of the database's.
  const clock = new ManualClock(new Date());
  let t: TestGateway;
  let b: Gateway;
  const senders: Jobs[] = [];
  let user: TestUser;
  let deploymentId: string;

  interface Run {
    gateway: 'a' | 'b';
    charged: number;
  }
  const runs: Run[] = [];
  /** Per round: whether each gateway has started a run, and the way to let the other one go on. */
  let round: { started: Record<'a' | 'b', boolean>; go: Record<'a' | 'b', () => void>; met: Record<'a' | 'b', Promise<void>> };

  function newRound(): void {
    const go = { a: () => undefined, b: () => undefined } as Record<'a' | 'b', () => void>;
    const met = {
      a: new Promise<void>((resolve) => (go.a = resolve)),
      b: new Promise<void>((resolve) => (go.b = resolve)),
    };
    round = { started: { a: false, b: false }, go, met };
  }

  /** Wraps a gateway's meter: its first run of a round waits (at most 20 s) for the other gateway's first. */
  function watchMeter(gateway: Gateway, name: 'a' | 'b'): void {
    const energy = gateway.services.energy;
    const meter = energy.meter.bind(energy);
    const other = name === 'a' ? 'b' : 'a';
    jest.spyOn(energy, 'meter').mockImplementation(async () => {
      const first = !round.started[name];
      round.started[name] = true;
      if (first) {
        round.go[other](); // the other gateway's first run may go on once this one has started
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([round.met[name], new Promise<void>((resolve) => (timer = setTimeout(resolve, 20_000)))]);
        clearTimeout(timer);
      }
      const charged = await meter();
      runs.push({ gateway: name, charged });
      return charged;
    });
  }

  const pendingMeterJobs = async (): Promise<number> =>
    (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'energy-meter' AND state IN ('created', 'retry', 'active')`))[0].n;

  const deploymentCharges = async () => (await ledgerRows(t.gateway.ds, user.id)).filter((r) => r.reason === 'deployment' && r.ref === deploymentId);

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' }, { clock });
    b = buildApp(t.config, { clock });
    await b.start(0);
    // Only the runs this test sends: the once-a-minute schedule is taken out, and a run it may
    // already have queued is let finish before anything is counted.
    await t.gateway.ds.query(`DELETE FROM pgboss.schedule WHERE name = 'energy-meter'`);
    await until('no energy-meter run pending', async () => (await pendingMeterJobs()) === 0, 300, 50);
    // The senders: a Jobs beside each gateway, as a gateway's own code would send the job.
    for (let i = 0; i < 2; i++) {
      const jobs = new Jobs(t.db.url, createLogger('silent'));
      await jobs.start([]);
      senders.push(jobs);
    }
    user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const d = await deploy(t.url, user, slug);
    expect(await settle(t.url, user, d.id)).toBe('LIVE');
    deploymentId = d.id;
    watchMeter(t.gateway, 'a');
    watchMeter(b, 'b');
  }, 60_000);

  afterAll(async () => {
    for (const s of senders) await s.stop(1000);
    await b?.stop();
    await t?.stop();
  }, 30_000);

  /** Sends `each` runs of the meter from each sender at once (due a second later) and waits for all to be worked. */
  async function sendFromBoth(each: number): Promise<Run[]> {
    const before = runs.length;
    newRound();
    await Promise.all(senders.flatMap((s) => Array.from({ length: each }, () => s.send('energy-meter', 1000))));
    await until('every run sent to be worked', async () => runs.length - before >= 2 * each && (await pendingMeterJobs()) === 0, 600, 50);
    return runs.slice(before);
  }

  it('two runs sent at once: both gateways run the meter together, and the minutes are charged once', async () => {
    clock.advance(5 * MINUTE + 30_000);
    const worked = await sendFromBoth(1);
    expect(worked.map((r) => r.gateway).sort()).toEqual(['a', 'b']);
    // One of the overlapping runs charged the five whole minutes; the other found nothing left to charge.
    expect(worked.map((r) => r.charged).sort()).toEqual([0, 5]);
    expect((await deploymentCharges()).map((r) => [r.bucket, r.delta])).toEqual([['daily', -5]]);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('many runs worked on both gateways in the same minute charge that minute once', async () => {
    clock.advance(MINUTE);
    const worked = await sendFromBoth(3);
    expect(worked).toHaveLength(6);
    expect(new Set(worked.map((r) => r.gateway))).toEqual(new Set(['a', 'b']));
    expect(worked.reduce((sum, r) => sum + r.charged, 0)).toBe(1);
    expect(worked.filter((r) => r.charged > 0)).toHaveLength(1);
    expect((await deploymentCharges()).map((r) => [r.bucket, r.delta])).toEqual([
      ['daily', -5],
      ['daily', -1],
    ]);
    const [account] = await t.gateway.ds.query('SELECT daily FROM energy_accounts WHERE user_id = $1', [user.id]);
    expect(account.daily).toBe(120 - 6);
    const [d] = await t.gateway.ds.query('SELECT metered_until, finished_at FROM deployments WHERE id = $1', [deploymentId]);
    expect(d.metered_until.getTime() - d.finished_at.getTime()).toBe(6 * MINUTE);
    await expectLedgerConsistent(t.gateway.ds, user.id);
  });

  it('with the clock still, runs on both gateways charge nothing more', async () => {
    const worked = await sendFromBoth(1);
    expect(worked).toHaveLength(2);
    expect(worked.every((r) => r.charged === 0)).toBe(true);
    expect(await deploymentCharges()).toHaveLength(2);
  });
});
