import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGateway, TestGateway } from '../support/gateway';
import { makeUser } from '../support/factories';
import { BIN, CliResult, RunningCli, tempDir } from './helpers';
import { closedPort } from '../support/ports';

jest.setTimeout(60_000);

/**
 * helpers.ts always sets HATCH_CONFIG_DIR and HATCH_API_URL. These tests need them (and
 * XDG_CONFIG_HOME) truly unset, so they spawn the binary with exactly the variables given: the
 * test's environment minus everything that steers the CLI, plus `env`.
 */
function hatchExact(env: Record<string, string>, args: string[], cwd: string): Promise<CliResult> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(base)) {
    if (k.startsWith('HATCH_') || ['NO_COLOR', 'FORCE_COLOR', 'XDG_CONFIG_HOME', 'HOME'].includes(k)) delete base[k];
  }
  // SWC's native addon caches itself under XDG_CACHE_HOME, else ~/.cache: keep it in the real one,
  // so that a scratch HOME holds only what the CLI writes (and no addon is unpacked again).
  base.XDG_CACHE_HOME = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  return new RunningCli(child).exited;
}

function ok(r: CliResult): CliResult {
  if (r.code !== 0) throw new Error(`hatch exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r;
}

/** `whoami`'s `key  value` lines. */
const fields = (stdout: string): Record<string, string> =>
  Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((l) => l.split(/\s{2,}/)),
  );

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('hatch config file location and the stored API URL (without HATCH_CONFIG_DIR)', () => {
  let t: TestGateway;
  const dirs: string[] = [];

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(async () => {
    await t.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** A scratch dir with an empty `home`, `xdg` and `cwd` inside. */
  function scratch(): { home: string; xdg: string; cwd: string } {
    const root = tempDir('hatch-config-');
    dirs.push(root);
    const [home, xdg, cwd] = ['home', 'xdg', 'cwd'].map((d) => path.join(root, d));
    for (const d of [home, xdg, cwd]) mkdirSync(d);
    return { home, xdg, cwd };
  }

  function expectPrivateFile(file: string, token: string, apiUrl: string): void {
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ token, apiUrl });
  }

  it('login writes $XDG_CONFIG_HOME/hatch/config.json (0600, dir 0700), and whoami reads it from there', async () => {
    const user = await makeUser(t.gateway);
    const { home, xdg, cwd } = scratch();
    const env = { HOME: home, XDG_CONFIG_HOME: xdg, HATCH_API_URL: t.url };
    const login = ok(await hatchExact(env, ['login', '--token', user.token], cwd));
    const file = path.join(xdg, 'hatch', 'config.json');
    expect(login.stdout).toContain(file);
    expectPrivateFile(file, user.token, t.url);
    expect(filesUnder(xdg)).toEqual([path.join('hatch', 'config.json')]);
    expect(filesUnder(home)).toEqual([]);
    expect(filesUnder(cwd)).toEqual([]);

    expect(fields(ok(await hatchExact(env, ['whoami'], cwd)).stdout)).toMatchObject({ email: user.email, id: user.id });
    // Another XDG dir is another (empty) config: the token really was read from that file.
    const elsewhere = await hatchExact({ ...env, XDG_CONFIG_HOME: path.join(home, 'other') }, ['whoami'], cwd);
    expect(elsewhere.code).toBe(3);
    expect(elsewhere.stderr).toMatch(/not logged in/);
  });

  it('without XDG_CONFIG_HOME, login writes ~/.config/hatch/config.json (0600, dir 0700)', async () => {
    const user = await makeUser(t.gateway);
    const { home, cwd } = scratch();
    const env = { HOME: home, HATCH_API_URL: t.url };
    ok(await hatchExact(env, ['login', '--token', user.token], cwd));
    const file = path.join(home, '.config', 'hatch', 'config.json');
    expectPrivateFile(file, user.token, t.url);
    expect(filesUnder(home)).toEqual([path.join('.config', 'hatch', 'config.json')]);
    expect(fields(ok(await hatchExact(env, ['whoami'], cwd)).stdout)).toMatchObject({ email: user.email });

    // logout forgets the token in that same file and keeps the API URL.
    ok(await hatchExact(env, ['logout'], cwd));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ apiUrl: t.url });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a relative XDG_CONFIG_HOME is ignored (XDG spec): the file goes to ~/.config/hatch, nothing under the working dir', async () => {
    const user = await makeUser(t.gateway);
    const { home, cwd } = scratch();
    ok(await hatchExact({ HOME: home, XDG_CONFIG_HOME: 'relative-xdg', HATCH_API_URL: t.url }, ['login', '--token', user.token], cwd));
    expectPrivateFile(path.join(home, '.config', 'hatch', 'config.json'), user.token, t.url);
    expect(filesUnder(cwd)).toEqual([]);
  });

  it('uses the API URL login stored when neither --api-url nor HATCH_API_URL is set; HATCH_API_URL still beats it', async () => {
    const user = await makeUser(t.gateway);
    const { home, xdg, cwd } = scratch();
    const env = { HOME: home, XDG_CONFIG_HOME: xdg };
    // Logged in with the flag only: the flag's URL is what gets stored.
    ok(await hatchExact(env, ['login', '--token', user.token, '--api-url', t.url], cwd));
    expect(JSON.parse(readFileSync(path.join(xdg, 'hatch', 'config.json'), 'utf8'))).toEqual({ token: user.token, apiUrl: t.url });

    // No flag, no HATCH_API_URL: the stored gateway answers (the default localhost:4000 is not it).
    const who = ok(await hatchExact(env, ['whoami'], cwd));
    expect(fields(who.stdout)).toMatchObject({ email: user.email, id: user.id, api: t.url });

    const closed = `http://127.0.0.1:${await closedPort()}`;
    const down = await hatchExact({ ...env, HATCH_API_URL: closed }, ['whoami'], cwd);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`error: cannot reach ${closed}: ECONNREFUSED\n`);
  });
});
