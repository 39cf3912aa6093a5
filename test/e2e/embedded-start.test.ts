import { ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateAppDocument, DeploymentLogStreamDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { collect, gqlOk, rest, wsClient } from '../support/gateway';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

/** The newcomer's path: `npm start` with no DATABASE_URL boots an embedded PostgreSQL. */
describe('zero-config start with the embedded PostgreSQL', () => {
  let dataDir: string;
  let server: ChildProcess;
  let url: string;
  let stderr = '';
  const env = () => {
    const e: NodeJS.ProcessEnv = { ...process.env, HATCHERY_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', HATCHERY_SIM_BUILD_MS: '300', LOG_LEVEL: 'warn' };
    delete e.DATABASE_URL;
    delete e.HATCHERY_ENCRYPTION_KEY;
    return e;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'hatchery-e2e-'));
    chmodSync(dataDir, 0o755);
    server = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    server.stderr!.on('data', (c) => (stderr += c));
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      server.stdout!.on('data', (c) => {
        out += c;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
    });
  }, 90_000);

  afterAll(() => {
    if (server.exitCode === null) server.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves a user from admin create-user to a live deployment, then shuts down cleanly', async () => {
    expect((await rest(url, null, 'GET', '/readyz')).status).toBe(200);

    // The admin command shares the running server's embedded cluster.
    const admin = await run(process.execPath, ['-r', '@swc-node/register', 'src/cli/admin.ts', 'create-user', 'newcomer@example.com'], { cwd: ROOT, env: env() });
    const lines = admin.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const { user_id, token } = JSON.parse(lines[0]);
    expect(user_id).toMatch(/^usr_/);
    expect(token).toMatch(/^hatch_/);

    const slug = 'newcomer-egg';
    await gqlOk(url, token, CreateAppDocument, { slug });
    const created = await rest(url, token, 'POST', '/deploy', { project: slug });
    expect(created.status).toBe(201);

    const client = wsClient(url, token);
    const status = collect(client, DeploymentStatusDocument, { id: created.body.id });
    const logs = collect(client, DeploymentLogStreamDocument, { id: created.body.id, type: 'BUILD' });
    await logs.done;
    const states = await status.waitFor(2);
    expect(states.map((s) => s.deploymentStatus.status)).toEqual(['BUILDING', 'LIVE']);
    expect(logs.items.length).toBeGreaterThan(0);
    await client.dispose();

    // The encryption key was generated into the data dir, readable by its owner only.
    expect(existsSync(path.join(dataDir, 'encryption.key'))).toBe(true);
    const pgPid = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);

    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).not.toMatch(/error/i);
    expect(() => process.kill(pgPid, 0)).toThrow();
  }, 90_000);
});
