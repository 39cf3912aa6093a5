import { rmSync } from 'node:fs';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { DeleteDeploymentDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { untilListening } from '../deployments/helpers';
import { CliEnv, CuttableProxy, RunningCli, spawnHatch, stopAllClis, tempDir, jsonLines } from './helpers';

jest.setTimeout(60_000);

const messageCount = (cli: RunningCli) => cli.stdout.split('\n').filter(Boolean).length;

describe('hatch logs -f (end to end, through a proxy that drops the connection)', () => {
  let t: TestGateway;
  let proxy: CuttableProxy;
  let user: TestUser;
  let configDir: string;

  beforeAll(async () => {
    t = await startGateway();
    proxy = await CuttableProxy.start(t.url);
    user = await makeUser(t.gateway);
    configDir = tempDir();
  });
  afterEach(() => stopAllClis());
  afterAll(async () => {
    await proxy.stop();
    await t.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  const viaProxy = (): CliEnv => ({ apiUrl: proxy.url, token: user.token, configDir });

  async function liveDeployment(): Promise<string> {
    const app = await makeApp(t.url, user);
    const d = await deploy(t.url, user, app.slug);
    expect(await settle(t.url, user, d.id)).toBe('LIVE');
    return d.id;
  }

  async function write(id: string, messages: string[]): Promise<void> {
    const writer = t.gateway.services.deployments.writer;
    await writer.open(id);
    for (const m of messages) writer.append(id, LogType.RUNTIME, m);
    await writer.flush();
  }

  it('follows live lines, reconnects after the connection drops, and prints every line exactly once, in order', async () => {
    const id = await liveDeployment();
    const before = proxy.connections;
    const cli = spawnHatch(viaProxy(), ['logs', id, '-f', '--type', 'runtime', '--json']);

    // The stored runtime lines first, then live ones.
    await cli.waitFor(() => messageCount(cli) >= 2, 'the stored lines');
    await write(id, ['line 1', 'line 2', 'line 3']);
    await cli.waitFor(() => messageCount(cli) >= 5, 'the first live lines');
    expect(proxy.connections).toBe(before + 1);

    // The network drops; lines written while the CLI is cut off must still arrive, once.
    proxy.refusing = true;
    expect(proxy.cutAll()).toBeGreaterThan(0);
    await cli.waitFor((_out, err) => /connection lost/.test(err), 'the drop notice');
    await write(id, ['line 4', 'line 5', 'line 6']);
    proxy.refusing = false;
    await proxy.waitForConnections(before + 2);
    await cli.waitFor(() => messageCount(cli) >= 8, 'the lines written while disconnected');
    expect(cli.stderr).toMatch(/reconnected/);

    // And the resumed stream goes on live.
    await write(id, ['line 7', 'line 8', 'line 9']);
    await cli.waitFor(() => messageCount(cli) >= 11, 'the lines after the reconnect');

    const result = await cli.stop();
    const lines = jsonLines(result.stdout);
    expect(lines.map((l) => l.message)).toEqual([
      expect.stringMatching(/^Starting /),
      'Listening on port 8080',
      ...Array.from({ length: 9 }, (_, i) => `line ${i + 1}`),
    ]);
    expect(lines.every((l) => l.type === 'RUNTIME')).toBe(true);
    const seqs = lines.map((l) => l.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it('--tail N -f prints the last N lines, then follows: no line twice, none skipped', async () => {
    const id = await liveDeployment();
    // After the runner's own first lines, so these are the newest.
    await untilListening(t.url, user, id);
    await write(id, ['old 1', 'old 2', 'old 3']);
    const cli = spawnHatch(viaProxy(), ['logs', id, '--tail', '2', '-f', '--json']);
    await cli.waitFor(() => messageCount(cli) >= 2, 'the tail');
    await write(id, ['new 1', 'new 2']);
    await cli.waitFor(() => messageCount(cli) >= 4, 'the live lines');
    const lines = jsonLines((await cli.stop()).stdout);
    expect(lines.map((l) => l.message)).toEqual(['old 2', 'old 3', 'new 1', 'new 2']);
  });

  it('resumes after several drops in a row, also in the human format', async () => {
    const id = await liveDeployment();
    const cli = spawnHatch(viaProxy(), ['logs', id, '--follow', '--type', 'runtime']);
    await cli.waitFor((out) => out.includes('Listening on port 8080'), 'the stored lines');

    for (let round = 1; round <= 3; round++) {
      const connections = proxy.connections;
      proxy.cutAll();
      await write(id, [`round ${round} a`, `round ${round} b`]);
      await proxy.waitForConnections(connections + 1);
      await cli.waitFor((out) => out.includes(`round ${round} b`), `round ${round}`);
    }
    await write(id, ['after the drops']);
    await cli.waitFor((out) => out.includes('after the drops'), 'the last line');

    const { stdout } = await cli.stop();
    const messages = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const m = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z runtime (.*)$/.exec(l);
        expect(m).not.toBeNull();
        return m![1];
      });
    expect(messages).toEqual([
      expect.stringMatching(/^Starting /),
      'Listening on port 8080',
      'round 1 a',
      'round 1 b',
      'round 2 a',
      'round 2 b',
      'round 3 a',
      'round 3 b',
      'after the drops',
    ]);
  });

  it('a followed build stream ends with the build, and the command exits 0', async () => {
    const app = await makeApp(t.url, user);
    const d = await deploy(t.url, user, app.slug);
    const result = await spawnHatch(viaProxy(), ['logs', d.id, '-f', '--type', 'build']).exited;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const messages = result.stdout.split('\n').filter(Boolean);
    expect(messages.map((l) => l.replace(/^\S+ build {3}/, ''))).toEqual([
      `==> Build started for ${app.slug} (${d.id})`,
      '==> Installing dependencies',
      '==> Compiling',
      '==> Creating image',
      '==> Build succeeded',
    ]);
  });

  it('a followed stream ends when its deployment is deleted, and the command says so', async () => {
    const id = await liveDeployment();
    const cli = spawnHatch(viaProxy(), ['logs', id, '-f']);
    await cli.waitFor((out) => out.includes('Listening on port 8080'), 'the stored lines');
    await gqlOk(t.url, user.token, DeleteDeploymentDocument, { id });
    const result = await cli.exited;
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n').filter(Boolean)).toHaveLength(7);
    expect(result.stderr).toBe(`hatch: deployment ${id} was deleted; the stream ended\n`);
  });

  it('a gateway that cannot be reached at all is an error at once, not a retry loop', async () => {
    const id = await liveDeployment();
    proxy.refusing = true;
    try {
      const result = await spawnHatch(viaProxy(), ['logs', id, '-f']).exited;
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^error: cannot open a graphql-ws connection to ws:\/\/127\.0\.0\.1:\d+\/graphql/);
    } finally {
      proxy.refusing = false;
    }
  });

  it('a refused token ends the stream with an error and exit 3, without retrying', async () => {
    const id = await liveDeployment();
    const connections = proxy.connections;
    const result = await spawnHatch({ ...viaProxy(), token: 'hatch_not-a-real-token' }, ['logs', id, '-f']).exited;
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/unauthorized/i);
    expect(result.stderr).toMatch(/hatch login/);
    expect(proxy.connections).toBe(connections + 1);
  });
});
