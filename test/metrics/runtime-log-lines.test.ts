import { LogType } from '../../src/modules/deployments/log-line.entity';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { scrape } from './prom';

const LOG_LINES = 'hatchery_log_lines_total';

describe('GET /metrics: runtime log lines', () => {
  let t: TestGateway;
  let owner: TestUser;

  beforeAll(async () => {
    // The simulated egg logs a request only once a minute: no line is written but the test's.
    t = await startGateway({ HATCHERY_SIM_RUNTIME_LOG_MS: '60000' });
    owner = await makeUser(t.gateway);
  });
  afterAll(() => t.stop());

  const stored = async (type: LogType): Promise<number> => (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM log_lines WHERE type = $1`, [type]))[0].n;

  /** Bounded polling: the runtime's start lines are written after the deployment went live, with nothing to await. */
  async function until(ok: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await ok())) {
      if (Date.now() > deadline) throw new Error(`never saw ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('counts every stored runtime line under type="runtime", apart from build lines', async () => {
    const slug = (await makeApp(t.url, owner)).slug;
    const d = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, d.id)).toBe('LIVE');
    // The running egg's own lines ("Starting …", "Listening on port 8080").
    await until(async () => (await stored(LogType.RUNTIME)) >= 2, 'the runtime start lines');

    const before = await scrape(t.url);
    // This database is the gateway's own: the counters started with it, at 0.
    expect(before.value(LOG_LINES, { type: 'runtime' })).toBe(await stored(LogType.RUNTIME));
    expect(before.value(LOG_LINES, { type: 'build' })).toBe(await stored(LogType.BUILD));

    const writer = t.gateway.services.deployments.writer;
    await writer.open(d.id);
    for (const m of ['GET / 200', 'GET /health 200', 'POST /api 201']) writer.append(d.id, LogType.RUNTIME, m);
    await writer.flush();

    const after = await scrape(t.url);
    expect(after.value(LOG_LINES, { type: 'runtime' }) - before.value(LOG_LINES, { type: 'runtime' })).toBe(3);
    expect(after.value(LOG_LINES, { type: 'build' })).toBe(before.value(LOG_LINES, { type: 'build' }));
    expect(after.value(LOG_LINES, { type: 'runtime' })).toBe(await stored(LogType.RUNTIME));
  });
});
