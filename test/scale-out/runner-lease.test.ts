import { Client } from 'pg';
import { DeploymentLogStreamDocument, DeploymentLogStreamSubscription, RestartAppDocument } from '../../src/client/generated';
import { Gateway } from '../../src/app';
import { Collected, collect, gqlOk, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { Pair, startPair } from './helpers';

const LEASE_MS = 3000;
const STARTING = /^Starting /;

/**
 * Each live egg runs on exactly one gateway, whichever gateway deployed, restarted or booted:
 * its runtime lines are written once. A gateway that stops hands its eggs over at once; one that
 * dies holding them loses them when its lease lapses.
 */
describe('every live egg runs on exactly one gateway', () => {
  let pair: Pair;
  let owner: TestUser;
  let slug: string;
  let first: { id: string };
  let second: { id: string };
  /** Outlives the gateways, which the tests stop. */
  let db: Client;
  const clients: Array<ReturnType<typeof wsClient>> = [];

  beforeAll(async () => {
    // A running egg logs a request every 50 ms; leases are short so a dead gateway's lapse fast.
    pair = await startPair({ HATCHERY_SIM_RUNTIME_LOG_MS: '50', HATCHERY_LEASE_MS: String(LEASE_MS) });
    db = new Client({ connectionString: pair.t.config.databaseUrl! });
    await db.connect();
    owner = await makeUser(pair.a);
    slug = (await makeApp(pair.aUrl, owner)).slug;
  });
  afterAll(async () => {
    for (const c of clients) await c.dispose();
    await db?.end();
    await pair.stop();
  });

  type Stream = Collected<DeploymentLogStreamSubscription>;
  type Line = { seq: number; timestamp: Date; message: string };

  /** The deployment's runtime log over graphql-ws from `url`: what is stored, then live. */
  const runtimeLog = (url: string, id: string): Stream => {
    const client = wsClient(url, owner.token);
    clients.push(client);
    return collect(client, DeploymentLogStreamDocument, { id, type: 'RUNTIME' });
  };
  const runtimeLines = async (id: string): Promise<Line[]> =>
    (await db.query(`SELECT seq, timestamp, message FROM log_lines WHERE deployment_id = $1 AND type = 'runtime' ORDER BY seq`, [id])).rows;
  const startsOf = (lines: Array<{ message: string }>) => lines.filter((l) => STARTING.test(l.message)).length;
  const messages = (s: Stream) => s.items.map((i) => i.deploymentLogs.message);
  /** Resolves once `done` holds for the items received; bounded by jest's timeout. */
  const until = async (s: Stream, done: (messages: string[]) => boolean) => {
    while (!done(messages(s))) await s.waitFor(s.items.length + 1);
  };
  const requestsIn = (m: string[]) => m.filter((x) => x.startsWith('GET ')).length;
  /** Resolves once the stream has `n` more request lines than it has now. */
  const requests = async (s: Stream, n: number) => {
    const target = requestsIn(messages(s)) + n;
    await until(s, (m) => requestsIn(m) >= target);
  };
  /** Resolves with the line that starts the runtime for the `n`th time. */
  const start = async (s: Stream, n: number) => {
    await until(s, (m) => startsOf(m.map((message) => ({ message }))) >= n);
    return s.items.filter((i) => STARTING.test(i.deploymentLogs.message))[n - 1].deploymentLogs;
  };

  /**
   * One runner writes `Starting`, `Listening`, then requests numbered 1..7 ms over and over;
   * a second runner of the same deployment would interleave a sequence of its own.
   */
  function expectOneRunnerAtATime(lines: Array<{ seq: number; message: string }>): void {
    let n = 0;
    const expected = lines.map((l) => {
      if (STARTING.test(l.message)) {
        n = 0;
        return l.message;
      }
      if (l.message === 'Listening on port 8080') return l.message;
      return `GET /healthz 200 ${1 + (n++ % 7)}ms`;
    });
    expect(lines.map((l) => l.message)).toEqual(expected);
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => lines[0].seq + i));
  }

  it('an egg live before a second gateway boots keeps running on one gateway only', async () => {
    // Only A is up when the egg goes live: B boots afterwards, like a gateway added to the pool.
    await pair.b.stop();
    first = await deploy(pair.aUrl, owner, slug);
    expect(await settle(pair.aUrl, owner, first.id)).toBe('LIVE');
    const log = runtimeLog(pair.aUrl, first.id);
    await requests(log, 3);

    const booted = await pair.another();
    pair.b = booted.gateway;
    pair.bUrl = booted.url;
    await requests(log, 20);

    const lines = await runtimeLines(first.id);
    expect(startsOf(lines)).toBe(1);
    expectOneRunnerAtATime(lines);
  });

  it('a deploy and a restart through the gateway that does not run the egg are carried out once, by the one that does', async () => {
    // B did not run the egg; it builds the new deployment, and the egg switches over once.
    second = await deploy(pair.bUrl, owner, slug);
    expect(await settle(pair.bUrl, owner, second.id)).toBe('LIVE');
    const log = runtimeLog(pair.bUrl, second.id);
    await requests(log, 10);
    let lines = await runtimeLines(second.id);
    expect(startsOf(lines)).toBe(1);
    expectOneRunnerAtATime(lines);
    // The first deployment stopped running when the second started.
    const firstLines = await runtimeLines(first.id);
    const secondStarted = new Date(lines[0].timestamp).getTime();
    expect(new Date(firstLines.at(-1)!.timestamp).getTime()).toBeLessThanOrEqual(secondStarted);

    // A restart asked of either gateway restarts the one running instance.
    for (const [k, url] of [pair.bUrl, pair.aUrl].entries()) {
      await gqlOk(url, owner.token, RestartAppDocument, { slug });
      await start(log, 2 + k);
      await requests(log, 5);
    }
    lines = await runtimeLines(second.id);
    expect(startsOf(lines)).toBe(3);
    expectOneRunnerAtATime(lines);
  });

  /** The gateway whose runner lease holds the egg. */
  async function runnerOf(id: string): Promise<Gateway> {
    const { rows } = await db.query('SELECT runner_id FROM apps WHERE current_deployment_id = $1', [id]);
    return rows[0].runner_id === pair.a.services.deployments.supervisor.runnerId ? pair.a : pair.b;
  }

  it('a gateway that stops hands the egg to another at once', async () => {
    const log = runtimeLog(pair.bUrl, second.id);
    const before = startsOf(await runtimeLines(second.id));
    await start(log, before);
    const stoppedAt = Date.now();
    await (await runnerOf(second.id)).stop();
    const restarted = await start(log, before + 1);
    // Handed over when it stopped, not lapsed: well within the lease.
    expect(new Date(restarted.timestamp).getTime() - stoppedAt).toBeLessThan(LEASE_MS);
    await requests(log, 10);
    const lines = await runtimeLines(second.id);
    expect(startsOf(lines)).toBe(before + 1);
    expectOneRunnerAtATime(lines);
  });

  it('a gateway that dies holding the egg: another runs it once the lease lapses, not before', async () => {
    // The gateway still running stops; then the egg is left as a crashed gateway leaves it:
    // claimed, with a lease not lapsed yet that nobody renews.
    await (await runnerOf(second.id)).stop();
    const before = startsOf(await runtimeLines(second.id));
    const { rows } = await db.query(
      `UPDATE apps SET runner_id = 'gw_crashed', runner_lease_until = now() + make_interval(secs => $2)
        WHERE slug = $1 RETURNING runner_lease_until`,
      [slug, LEASE_MS / 1000],
    );
    const lapsesAt = new Date(rows[0].runner_lease_until).getTime();
    const next = await pair.another();
    const log = runtimeLog(next.url, second.id);
    const restarted = await start(log, before + 1);
    const startedAt = new Date(restarted.timestamp).getTime();
    expect(startedAt).toBeGreaterThanOrEqual(lapsesAt);
    expect(startedAt - lapsesAt).toBeLessThan(LEASE_MS);
    await requests(log, 5);
    const lines = await runtimeLines(second.id);
    expect(startsOf(lines)).toBe(before + 1);
    expectOneRunnerAtATime(lines);
  });
});
