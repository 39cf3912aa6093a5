import { LogType } from '../../src/modules/deployments/log-line.entity';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { StatementLog } from '../support/statements';

const LOG_INSERT = /\bINSERT\s+INTO\s+"?log_lines"?/i;

/**
 * "Storage writes are batched": lines appended in a burst reach PostgreSQL in a handful of
 * INSERT statements, not one per line. Every statement the gateway runs is recorded.
 */
describe('log writes are batched', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;
  const sql = new StatementLog();

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '50' }, { db: { onQuery: sql.onQuery } });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  /** A deployment whose build is over and which writes nothing more by itself. */
  async function quietDeployment(): Promise<string> {
    const d = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
    expect(await settle(t.url, owner, d.id)).toBe('FAILED');
    await t.gateway.services.deployments.writer.flush();
    return d.id;
  }

  const stored = async (id: string): Promise<Array<{ seq: number; message: string }>> =>
    t.gateway.ds.query('SELECT seq, message FROM log_lines WHERE deployment_id = $1 ORDER BY seq', [id]);

  /** Records the statements run while `fn` runs; returns the INSERTs into log_lines. */
  async function insertsDuring(fn: () => Promise<void>): Promise<string[]> {
    return (await sql.during(fn)).statements.filter((s) => LOG_INSERT.test(s));
  }

  it('500 lines appended and flushed take at most a few INSERT statements, and all are stored in order', async () => {
    const id = await quietDeployment();
    const before = (await stored(id)).length;
    const writer = t.gateway.services.deployments.writer;
    await writer.open(id);

    const inserts = await insertsDuring(async () => {
      for (let i = 1; i <= 500; i++) writer.append(id, LogType.RUNTIME, `line ${i}`);
      await writer.flush();
    });
    expect(inserts.length).toBeGreaterThanOrEqual(1);
    expect(inserts.length).toBeLessThanOrEqual(5);

    const lines = (await stored(id)).slice(before);
    expect(lines).toHaveLength(500);
    expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: 500 }, (_, i) => before + i + 1));
    expect(lines[0].message).toBe('line 1');
    expect(lines[499].message).toBe('line 500');
  });

  it('lines of several deployments appended together share the statements', async () => {
    const a = await quietDeployment();
    const b = await quietDeployment();
    const before = { a: (await stored(a)).length, b: (await stored(b)).length };
    const writer = t.gateway.services.deployments.writer;
    await writer.open(a);
    await writer.open(b);

    const inserts = await insertsDuring(async () => {
      for (let i = 1; i <= 250; i++) {
        writer.append(a, LogType.RUNTIME, `a ${i}`);
        writer.append(b, LogType.RUNTIME, `b ${i}`);
      }
      await writer.flush();
    });
    expect(inserts.length).toBeGreaterThanOrEqual(1);
    expect(inserts.length).toBeLessThanOrEqual(5);
    expect((await stored(a)).slice(before.a).map((l) => l.message)).toEqual(Array.from({ length: 250 }, (_, i) => `a ${i + 1}`));
    expect((await stored(b)).slice(before.b).map((l) => l.message)).toEqual(Array.from({ length: 250 }, (_, i) => `b ${i + 1}`));
  });
});
