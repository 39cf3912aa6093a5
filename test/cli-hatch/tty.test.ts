import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { DeploymentsDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { BIN, parseTable, ROOT, tempDir, writeTree } from './helpers';

jest.setTimeout(60_000);

/** util-linux `script` gives the CLI a pseudo-terminal for stdin, stdout and stderr. */
const SCRIPT = '/usr/bin/script';
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
// eslint-disable-next-line no-control-regex -- the escape codes a terminal gets are what is checked
const SGR = /\x1b\[[0-9;]*m/g;
const CLEAR_LINE = '\r\x1b[K';

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

interface TtyResult {
  code: number | null;
  /** stdout and stderr as the terminal got them, interleaved. */
  screen: string;
}

/**
 * Runs `node bin/hatch.js …` on a pseudo-terminal (`script -qec`), with the gateway, token and
 * config dir of `env`, and only the variables given in `extra` besides. `script -e` exits with
 * the CLI's code.
 */
function hatchOnTty(env: { apiUrl: string; token: string; configDir: string }, args: string[], extra: Record<string, string> = {}): Promise<TtyResult> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(base)) {
    if (k.startsWith('HATCH_') || ['NO_COLOR', 'FORCE_COLOR', 'XDG_CONFIG_HOME'].includes(k)) delete base[k];
  }
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const child = spawn(SCRIPT, ['-qec', command, '/dev/null'], {
    cwd: ROOT,
    env: { ...base, HATCH_API_URL: env.apiUrl, HATCH_TOKEN: env.token, HATCH_CONFIG_DIR: env.configDir, TERM: 'xterm', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => (screen += d));
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => (screen += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, screen })));
}

/** What a person sees: per line (the pty ends them with \r\n), what is left after the last line clear, without colour codes. */
function visibleLines(screen: string): string[] {
  return screen
    .split('\r\n')
    .map((l) => (l.includes(CLEAR_LINE) ? l.slice(l.lastIndexOf(CLEAR_LINE) + CLEAR_LINE.length) : l).replace(SGR, ''))
    .filter((l) => l !== '');
}

/** The spinner frames drawn, in order: each draw clears the line and writes `<frame> <text> <secs>s`. */
function spinnerFrames(screen: string, text: string): string[] {
  const draws = screen
    .split(CLEAR_LINE)
    .slice(1)
    .map((d) => d.replace(SGR, ''));
  return draws.filter((d) => d.includes(` ${text}`) && /\d+\.\d+s$/.test(d)).map((d) => [...d][0]);
}

describe('hatch on a terminal (pseudo-terminal via script)', () => {
  let t: TestGateway;
  let user: TestUser;
  let configDir: string;

  beforeAll(async () => {
    if (!existsSync(SCRIPT)) throw new Error(`${SCRIPT} (util-linux) is needed to give the CLI a terminal`);
    // A build long enough for the spinner to turn a few times (it draws every 80 ms).
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '800' });
    user = await makeUser(t.gateway);
    configDir = tempDir();
  });
  afterAll(async () => {
    await t.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  const env = () => ({ apiUrl: t.url, token: user.token, configDir });

  async function expectBuildStreamed(screen: string, slug: string): Promise<void> {
    const { deployments } = await gqlOk(t.url, user.token, DeploymentsDocument, { project: slug, status: null, first: 1 });
    const [d] = deployments.nodes;
    expect(d.status).toBe('LIVE');
    expect(visibleLines(screen)).toEqual([
      `Deploying ${slug}: ${d.id}`,
      `==> Build started for ${slug} (${d.id})`,
      '==> Installing dependencies',
      '==> Compiling',
      '==> Creating image',
      '==> Build succeeded',
      `✔ live ${d.url}`,
    ]);
  }

  it('deploy draws a spinner on stderr and colours its output', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const res = await hatchOnTty(env(), ['deploy', slug, '--no-source']);
    expect(res.code).toBe(0);
    await expectBuildStreamed(res.screen, slug);

    // The spinner: drawn in place (\r, clear line), turning through its frames in order, coloured.
    const frames = spinnerFrames(res.screen, `Building ${slug}`);
    expect(frames.length).toBeGreaterThanOrEqual(3);
    frames.forEach((f, i) => expect(f).toBe(FRAMES[i % FRAMES.length]));
    expect(res.screen).toContain(`${CLEAR_LINE}\x1b[36m${FRAMES[0]}\x1b[39m Building ${slug}`);
    // …and cleared at the end: the last thing on the screen is the result line, not a frame.
    expect(res.screen.replace(/(\r\x1b\[K)+$/, '')).toMatch(/\x1b\[32m✔ live\x1b\[39m https:\/\/\S+\r\n$/); // eslint-disable-line no-control-regex -- the escape codes a terminal gets are what is checked

    // Colour on stdout: the egg's name in bold, the result in green.
    expect(res.screen).toContain(`Deploying \x1b[1m${slug}\x1b[22m: dep_`);
  });

  it('NO_COLOR turns colour off on a terminal; the build still streams and the spinner still turns', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const res = await hatchOnTty(env(), ['deploy', slug, '--no-source'], { NO_COLOR: '1' });
    expect(res.code).toBe(0);
    expect(res.screen).not.toMatch(SGR);
    await expectBuildStreamed(res.screen, slug);
    const frames = spinnerFrames(res.screen, `Building ${slug}`);
    expect(frames.length).toBeGreaterThanOrEqual(1);
    expect(res.screen).toContain(`${CLEAR_LINE}${FRAMES[0]} Building ${slug}`);
  });

  it('deploy shows the packing and the upload’s progress on stderr, then one line saying what was uploaded', async () => {
    // An owner of its own: the table test below counts the shared user's eggs.
    const owner = await makeUser(t.gateway);
    const slug = (await makeApp(t.url, owner)).slug;
    const egg = writeTree(tempDir('hatch-tty-egg-'), { 'package.json': '{}', 'lib/a.js': 'a', 'skip.log': 'x', '.gitignore': '*.log\n' });
    try {
      const res = await hatchOnTty({ ...env(), token: owner.token }, ['deploy', slug, '--dir', egg]);
      expect(res.code).toBe(0);
      const lines = visibleLines(res.screen);
      const [, size, source] = /^Uploaded 3 files, (\d+ B) \((src_\w+)\)$/.exec(lines[0])!;
      const { deployments } = await gqlOk(t.url, owner.token, DeploymentsDocument, { project: slug, status: null, first: 1 });
      expect(deployments.nodes[0]).toMatchObject({ status: 'LIVE', source });
      expect(lines.slice(1, 2)).toEqual([`Deploying ${slug}: ${deployments.nodes[0].id}`]);
      // Drawn in place on the spinner's line: packing, then the upload from 0% to 100%, cleared before the result.
      const draws = res.screen
        .split(CLEAR_LINE)
        .map((d) => d.replace(SGR, ''))
        .filter((d) => /^\S (Packing|Uploading) /.test(d));
      // The spinner also redraws every 80 ms: the same text again is the same step.
      const texts = draws.map((d) => d.slice(2).replace(/ \d+\.\ds(\r\n)?$/, '')).filter((x, i, all) => x !== all[i - 1]);
      expect(texts[0]).toBe(`Packing ${egg}`);
      expect(texts.filter((x) => x.startsWith('Uploading'))).toEqual([`Uploading ${size}… 0%`, `Uploading ${size}… 100%`]);
      expect(res.screen).toMatch(new RegExp(`Uploading ${size}… 100% \\S+${CLEAR_LINE.replace('[', '\\[')}(\x1b\\[[0-9;]*m)*Uploaded 3 files`));
    } finally {
      rmSync(egg, { recursive: true, force: true });
    }
  });

  it('tables on a terminal have bold headers and stay aligned; NO_COLOR leaves them plain', async () => {
    const coloured = await hatchOnTty(env(), ['apps']);
    expect(coloured.code).toBe(0);
    expect(coloured.screen).toMatch(/^\x1b\[1mSLUG\x1b\[22m {2,}\x1b\[1mTIER\x1b\[22m/); // eslint-disable-line no-control-regex -- the escape codes a terminal gets are what is checked
    const rows = parseTable(coloured.screen.replace(SGR, '').replace(/\r\n/g, '\n'));
    expect(rows).toHaveLength(2);

    const plain = await hatchOnTty(env(), ['apps'], { NO_COLOR: '1' });
    expect(plain.code).toBe(0);
    expect(plain.screen).not.toMatch(SGR);
    expect(parseTable(plain.screen.replace(/\r\n/g, '\n'))).toEqual(rows);
  });
});
