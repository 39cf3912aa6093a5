import { rmSync } from 'node:fs';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { LogRetention } from '../../src/modules/deployments/log-retention';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { untilListening } from '../deployments/helpers';
import { CliEnv, CuttableProxy, hatch, RunningCli, spawnHatch, stopAllClis, tempDir, jsonLines } from './helpers';

jest.setTimeout(60_000);

const printed = (cli: RunningCli, text: string) => cli.stdout.includes(text);

describe('hatch logs --app, -q with -f, and the log retention notice (end to end)', () => {
  let t: TestGateway;
  let proxy: CuttableProxy;
  let user: TestUser;
  let configDir: string;
  let slug: string;
  let first: string;
  let second: string;
  const T = Date.parse('2100-06-01T00:00:00.000Z');

  const env = (): CliEnv => ({ apiUrl: proxy.url, token: user.token, configDir });

  async function write(id: string, lines: Array<[string, Date?, ('stdout' | 'stderr')?]>): Promise<void> {
    const writer = t.gateway.services.deployments.writer;
    await writer.open(id);
    for (const [m, at, stream] of lines) writer.append(id, LogType.RUNTIME, m, at, stream);
    await writer.flush();
  }

  beforeAll(async () => {
    t = await startGateway();
    proxy = await CuttableProxy.start(t.url);
    user = await makeUser(t.gateway);
    configDir = tempDir();
    slug = (await makeApp(t.url, user)).slug;
    first = (await deploy(t.url, user, slug)).id;
    await untilListening(t.url, user, first);
    second = (await deploy(t.url, user, slug)).id;
    await untilListening(t.url, user, second);
    await write(first, [
      ['alpha one', new Date(T + 1000)],
      ['alpha three', new Date(T + 3000), 'stderr'],
    ]);
    await write(second, [['beta two', new Date(T + 2000)]]);
  });
  afterEach(() => stopAllClis());
  afterAll(async () => {
    await proxy.stop();
    await t.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  it('prints an egg’s lines across its deployments, interleaved by time, each naming its deployment; -q takes @deployment and @stream', async () => {
    const since = new Date(T).toISOString();
    const json = await hatch(env(), ['logs', '--app', slug, '--since', since, '--json']);
    expect(json.code).toBe(0);
    const lines = jsonLines(json.stdout);
    expect(lines.map((l) => [l.message, l.deploymentId])).toEqual([
      ['alpha one', first],
      ['beta two', second],
      ['alpha three', first],
    ]);

    const human = await hatch(env(), ['logs', '--app', slug, '--since', since]);
    expect(human.stdout.split('\n').filter(Boolean)).toEqual([
      `${new Date(T + 1000).toISOString()} ${first} runtime alpha one`,
      `${new Date(T + 2000).toISOString()} ${second} runtime beta two`,
      `${new Date(T + 3000).toISOString()} ${first} runtime alpha three`,
    ]);

    const only = await hatch(env(), ['logs', '--app', slug, '--since', since, '-q', `@deployment:${second}`, '--json']);
    expect(jsonLines(only.stdout).map((l) => l.message)).toEqual(['beta two']);
    const errors = await hatch(env(), ['logs', '--app', slug, '--since', since, '-q', '@stream:stderr', '--json']);
    expect(jsonLines(errors.stdout).map((l) => [l.message, l.stream])).toEqual([['alpha three', 'STDERR']]);
    const tail = await hatch(env(), ['logs', '--app', slug, '--tail', '2', '--json']);
    expect(jsonLines(tail.stdout).map((l) => l.message)).toEqual(['beta two', 'alpha three']);
  });

  it('refuses what cannot be meant (exit 2) and an unknown egg (exit 4)', async () => {
    expect((await hatch(env(), ['logs'])).code).toBe(2);
    expect((await hatch(env(), ['logs', first, '--app', slug])).code).toBe(2);
    expect((await hatch(env(), ['logs', first, '--deployment', second])).code).toBe(2);
    const unknown = await hatch(env(), ['logs', '--app', 'no-such-egg']);
    expect(unknown.code).toBe(4);
    const badFilter = await hatch(env(), ['logs', '--app', slug, '-q', '"open']);
    expect(badFilter.code).toBe(1);
    expect(badFilter.stderr).toMatch(/q: has a phrase with no closing quote at position 1/);
  });

  it('--app -f follows the egg across a redeploy and a dropped connection: every line once', async () => {
    const cli = spawnHatch(env(), ['logs', '--app', slug, '-f', '--tail', '1', '-q', 'follow', '--json']);
    await write(second, [['follow 1']]);
    await cli.waitFor(() => printed(cli, 'follow 1'), 'the first line');
    const third = (await deploy(t.url, user, slug)).id;
    await untilListening(t.url, user, third);
    await write(third, [['follow 2'], ['noise']]);
    await cli.waitFor(() => printed(cli, 'follow 2'), 'the new deployment’s line');

    const connections = proxy.connections;
    proxy.refusing = true;
    proxy.cutAll();
    await cli.waitFor((_out, err) => /connection lost/.test(err), 'the drop notice');
    await write(third, [['follow 3']]);
    await write(second, [['follow 4']]);
    proxy.refusing = false;
    await proxy.waitForConnections(connections + 1);
    await cli.waitFor(() => printed(cli, 'follow 4') && printed(cli, 'follow 3'), 'the lines written while cut off');

    const lines = jsonLines((await cli.stop()).stdout);
    expect(lines.map((l) => l.message).sort()).toEqual(['follow 1', 'follow 2', 'follow 3', 'follow 4']);
    expect(lines.find((l) => l.message === 'follow 2')!.deploymentId).toBe(third);
  });

  it('-q works with -f on a deployment: stored and live lines are filtered alike', async () => {
    await write(first, [['needle a'], ['hay']]);
    const cli = spawnHatch(env(), ['logs', first, '-f', '-q', 'needle', '--json']);
    await cli.waitFor(() => printed(cli, 'needle a'), 'the stored match');
    await write(first, [['hay'], ['needle b']]);
    await cli.waitFor(() => printed(cli, 'needle b'), 'the live match');
    expect(jsonLines((await cli.stop()).stdout).map((l) => l.message)).toEqual(['needle a', 'needle b']);
  });

  it('says on stderr when retention removed a deployment’s oldest lines', async () => {
    // 35 days from now, what was stored today is past a 30-day retention: its partition goes.
    const removed = await new LogRetention(t.gateway.ds, { now: () => new Date(Date.now() + 35 * 86_400_000) }, 30).run();
    expect(removed).toBeGreaterThan(0);
    const result = await hatch(env(), ['logs', first, '--tail', '1']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^hatch: lines written before \S+ were removed \(log retention\); the log starts at the oldest line kept\n$/);
    // A deployment made afterwards lost nothing and says nothing.
    const fresh = (await deploy(t.url, user, slug)).id;
    await untilListening(t.url, user, fresh);
    const plain = await hatch(env(), ['logs', fresh, '--tail', '1']);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toBe('');
  });
});
