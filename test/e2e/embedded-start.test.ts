import { ChildProcess, execFile, spawn } from 'node:child_process';
import http from 'node:http';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateAppDocument, DeploymentLogStreamDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { ROOT } from '../support/cli';
import { collect, gqlOk, rest, wsClient } from '../support/gateway';

const run = promisify(execFile);

/** The newcomer's path: `npm start` with no DATABASE_URL boots an embedded PostgreSQL. */
describe('zero-config start with the embedded PostgreSQL', () => {
  let dataDir: string;
  let server: ChildProcess;
  let url: string;
  let stderr = '';
  let stdout = '';
  /** The server's JSON log lines (stdout), and waiters for a line to come. */
  /** One JSON log line of the server, as pino writes it. */
  type LogLine = { msg?: string; signal?: string; req?: { remotePort?: number } };
  const logLines: LogLine[] = [];
  const logWaiters: Array<{ match: (l: LogLine) => boolean; resolve: () => void }> = [];
  const untilLogged = (match: (l: LogLine) => boolean) =>
    new Promise<void>((resolve) => (logLines.some(match) ? resolve() : logWaiters.push({ match, resolve })));
  // At debug: the `incoming request` line says when the request in flight at shutdown has arrived.
  const env = () => {
    const e: NodeJS.ProcessEnv = { ...process.env, HATCHERY_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', HATCHERY_SIM_BUILD_MS: '300', LOG_LEVEL: 'debug' };
    delete e.DATABASE_URL;
    delete e.HATCHERY_ENCRYPTION_KEY;
    return e;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'hatchery-e2e-'));
    chmodSync(dataDir, 0o755); // as root: the cluster stays in here, not in /var/lib/hatchery-postgres
    server = spawn(process.execPath, ['-r', './scripts/register.js', 'src/main.ts'], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    server.stderr!.on('data', (c) => (stderr += c));
    url = await new Promise<string>((resolve, reject) => {
      let partial = '';
      server.stdout!.on('data', (c) => {
        stdout += c;
        const m = /listening on (http:\/\/\S+)/.exec(stdout);
        if (m) resolve(m[1]);
        const lines = (partial + c).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          if (!line.startsWith('{')) continue;
          const entry = JSON.parse(line) as LogLine;
          logLines.push(entry);
          for (const w of logWaiters.splice(0)) {
            if (w.match(entry)) w.resolve();
            else logWaiters.push(w);
          }
        }
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
    const admin = await run(process.execPath, ['-r', './scripts/register.js', 'src/cli/admin.ts', 'create-user', 'newcomer@example.com'], {
      cwd: ROOT,
      env: env(),
    });
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

    // A request in flight when SIGTERM arrives is answered before the process exits: its headers
    // and half its body are in when the signal comes, the rest after shutdown has begun.
    const body = JSON.stringify({ project: slug });
    const inflight = http.request(`${url}/deploy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const answered = new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      inflight.on('response', (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      inflight.on('error', reject);
    });
    const localPort = new Promise<number>((resolve) => inflight.on('socket', (sock) => sock.on('connect', () => resolve(sock.localPort!))));
    inflight.write(body.slice(0, 5));
    const port = await localPort;
    await untilLogged((l) => l.msg === 'incoming request' && l.req?.remotePort === port);

    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    server.kill('SIGTERM');
    await untilLogged((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM');
    inflight.end(body.slice(5));
    const res = await answered;
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^dep_/), project: slug });
    expect(await exited).toBe(0);
    expect(stderr).not.toMatch(/error/i);
    expect(() => process.kill(pgPid, 0)).toThrow();

    // The database's password (generated into the data dir, owner only) is in no log.
    const password = readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim();
    expect(statSync(path.join(dataDir, 'postgres.password')).mode & 0o777).toBe(0o600);
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    for (const log of [stdout, stderr, admin.stdout, admin.stderr, readFileSync(path.join(dataDir, 'postgres.log'), 'utf8')]) {
      expect(log).not.toContain(password);
    }
  }, 90_000);
});
