import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { migrations } from '../../migrations';

/**
 * What the Dockerfile's build stage does (`tsc -p tsconfig.build.json`) and what its runtime
 * stage starts (`node dist/src/main.js`), run here without Docker: compiled into a temp dir next
 * to the repository's node_modules (symlinked) and package.json, started against an empty
 * database, and probed with the image's own HEALTHCHECK command.
 */
jest.setTimeout(300_000);

const root = path.join(__dirname, '..', '..');

/** The Dockerfile's runtime stage, continuation lines joined, comments dropped. */
function runtimeStage(): string[] {
  const instructions = readFileSync(path.join(root, 'Dockerfile'), 'utf8')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const from = instructions.map((l, i) => (l.startsWith('FROM ') ? i : -1)).filter((i) => i >= 0);
  return instructions.slice(from.at(-1));
}

function run(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout: number }): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { ...opts, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe('the compiled build (the image’s build step and entry point)', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hatchery-dist-'));
  const dbName = `hatchery_t_${randomBytes(6).toString('hex')}`;
  const serverUrl = process.env.HATCHERY_TEST_SERVER_URL!;
  const dbUrl = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString();
  const runtime = runtimeStage();
  let child: ChildProcess | null = null;
  let output = '';
  let exited: Promise<number | null> = Promise.resolve(null);
  let url = '';

  /** The gateway's settings as the image would have them, none of the test run's own. */
  function childEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) {
      if (k.startsWith('HATCHERY_') || k.startsWith('STRIPE_') || ['DATABASE_URL', 'PORT', 'HOST', 'REDIS_URL', 'LOG_LEVEL'].includes(k)) delete env[k];
    }
    return { ...env, DATABASE_URL: dbUrl, PORT: '0', HOST: '127.0.0.1', HATCHERY_DATA_DIR: path.join(tmp, 'data'), LOG_LEVEL: 'info' };
  }

  beforeAll(async () => {
    const admin = new Client({ connectionString: serverUrl });
    await admin.connect();
    // Empty, not the suite's migrated template: the compiled migrations must run.
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
  });

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    const admin = new Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('compiles with tsc -p tsconfig.build.json to the entry point the image starts', async () => {
    symlinkSync(path.join(root, 'node_modules'), path.join(tmp, 'node_modules'), 'dir');
    copyFileSync(path.join(root, 'package.json'), path.join(tmp, 'package.json')); // the runtime stage copies it too
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const build = await run(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', path.join(tmp, 'dist')], {
      cwd: root,
      timeout: 240_000,
    });
    expect({ code: build.code, output: build.output }).toEqual({ code: 0, output: '' });
    const cmd = JSON.parse(runtime.find((l) => l.startsWith('CMD '))!.slice(4)) as string[];
    expect(cmd[0]).toBe('node');
    expect(existsSync(path.join(tmp, cmd[1]))).toBe(true);
  });

  it('starts against an empty database, migrates it, and passes the image’s HEALTHCHECK', async () => {
    const cmd = JSON.parse(runtime.find((l) => l.startsWith('CMD '))!.slice(4)) as string[];
    child = spawn(cmd[0] === 'node' ? process.execPath : cmd[0], cmd.slice(1), { cwd: tmp, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const proc = child;
    exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
    url = await new Promise<string>((resolve, reject) => {
      const onData = (d: Buffer) => {
        output += d.toString('utf8');
        const m = /^Hatchery is listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(output);
        // The JSON log line of the same moment may be flushed after the line for people: wait for both.
        if (m && /"msg":"hatchery listening"/.test(output)) resolve(m[1]);
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.on('exit', (code) => reject(new Error(`the compiled gateway exited (${code}) before listening:\n${output}`)));
    });

    // The log is JSON lines (pino), besides the three "listening" lines for people.
    const jsonLines = output.split('\n').filter((l) => l.startsWith('{'));
    expect(jsonLines.length).toBeGreaterThan(0);
    for (const l of jsonLines) expect(() => JSON.parse(l)).not.toThrow();

    const admin = new Client({ connectionString: dbUrl });
    await admin.connect();
    const applied = await admin.query('SELECT name FROM migrations ORDER BY id');
    await admin.end();
    expect(applied.rows.map((r: { name: string }) => r.name)).toEqual(migrations.map((m) => m.name));

    const line = runtime.find((l) => l.startsWith('HEALTHCHECK '))!;
    const check = JSON.parse(line.slice(line.indexOf('CMD ') + 4)) as string[];
    expect(check[0]).toBe('node');
    const health = await run(process.execPath, check.slice(1), { env: { ...process.env, PORT: new URL(url).port }, timeout: 20_000 });
    expect(health.code).toBe(0);
    const ready = await fetch(`${url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ok', database: 'up', events: 'up', jobs: 'up' }]);
  });

  it('serves /openapi.json and the GraphQL explorer (with its assets from node_modules) from the compiled code', async () => {
    expect(url).not.toBe('');
    const doc = await fetch(`${url}/openapi.json`);
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { openapi: string }).openapi).toBe('3.1.0');

    const page = await fetch(`${url}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/graphql\/explorer\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(0);
    for (const a of assets) expect([a, (await fetch(`${url}${a}`)).status]).toEqual([a, 200]);
  });

  it('the compiled operator command creates the first user (as docs/operations.md says for Docker), whose token the gateway accepts', async () => {
    expect(url).not.toBe('');
    const email = `first-${randomBytes(4).toString('hex')}@example.com`;
    const created = await run(process.execPath, ['dist/src/cli/admin.js', 'create-user', email], { cwd: tmp, env: childEnv(), timeout: 60_000 });
    expect(created.code).toBe(0);
    const { user_id: id, token } = JSON.parse(created.output) as { user_id: string; token: string };
    expect(token).toMatch(/^hatch_/);
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: 'query Viewer { viewer { id email } }' }),
    });
    expect([res.status, await res.json()]).toEqual([200, { data: { viewer: { id, email } } }]);
  });

  it('the hatch CLI runs from the compiled code where the TypeScript sources are absent, as in the image', async () => {
    mkdirSync(path.join(tmp, 'bin'));
    copyFileSync(path.join(root, 'bin', 'hatch.js'), path.join(tmp, 'bin', 'hatch.js'));
    const version = await run(process.execPath, ['bin/hatch.js', '--version'], { cwd: tmp, env: childEnv(), timeout: 60_000 });
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    expect(version).toEqual({ code: 0, output: `hatch ${pkg.version}\n` });
    const email = `cli-${randomBytes(4).toString('hex')}@example.com`;
    const { token } = JSON.parse(
      (await run(process.execPath, ['dist/src/cli/admin.js', 'create-user', email], { cwd: tmp, env: childEnv(), timeout: 60_000 })).output,
    );
    const whoami = await run(process.execPath, ['bin/hatch.js', 'whoami', '--json'], {
      cwd: tmp,
      env: { ...childEnv(), HATCH_API_URL: url, HATCH_TOKEN: token, HATCH_CONFIG_DIR: path.join(tmp, 'hatch-config') },
      timeout: 60_000,
    });
    expect(whoami.code).toBe(0);
    expect(JSON.parse(whoami.output)).toMatchObject({ email });
  });

  it('stops on SIGTERM (the image’s STOPSIGNAL) with exit code 0', async () => {
    expect(runtime).toContain('STOPSIGNAL SIGTERM');
    expect(child).not.toBeNull();
    child!.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toMatch(/"msg":"shutting down"/);
  });
});
