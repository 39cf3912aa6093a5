import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import Redis from 'ioredis';
import { Client } from 'pg';
import { DeployDocument, PreviewsDocument, UpsertPreviewDocument } from '../../src/client/generated';
import { LABELS } from '../../src/runtime/docker/docker.runtime';
import { PreviewDatabases } from '../../src/runtime/docker/preview-databases';
import { PreviewRedis } from '../../src/runtime/docker/preview-redis';
import { buildApp, Gateway } from '../../src/app';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser } from '../support/factories';
import { describeDocker, docker, ensureNodeImage, sourceArchive } from '../support/docker';
import { upload } from '../sources/helpers';
import { until } from '../crons/helpers';
import { viaRouter as request } from '../support/router';

const REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * An egg that reports what its process can reach: its env, its database (with the real `pg`
 * driver, copied in from this project's node_modules), and Redis (raw RESP on the socket).
 */
const SERVER = (version: string) => `
const http = require('http');
const net = require('net');
const { Client } = require('pg');

async function sql(config, text) {
  const c = new Client(config);
  await c.connect();
  try { return (await c.query(text)).rows; } finally { await c.end(); }
}

/** Sends the commands on one connection and answers their replies as strings (errors start with '-'). */
function redis(commands) {
  return new Promise((resolve, reject) => {
    const s = net.connect(process.env.REDIS_SOCKET);
    let buf = '';
    const replies = [];
    const parse = () => {
      for (;;) {
        const end = buf.indexOf('\\r\\n');
        if (end < 0) return;
        const t = buf[0], line = buf.slice(1, end);
        if (t === '$') {
          const n = Number(line);
          if (n < 0) { replies.push(null); buf = buf.slice(end + 2); continue; }
          if (buf.length < end + 2 + n + 2) return;
          replies.push(buf.slice(end + 2, end + 2 + n));
          buf = buf.slice(end + 2 + n + 2);
        } else if (t === '*') {
          // Arrays of bulk strings only (KEYS): read them whole.
          let at = end + 2; const items = [];
          for (let i = 0; i < Number(line); i++) {
            const e = buf.indexOf('\\r\\n', at);
            if (e < 0) return;
            const n = Number(buf.slice(at + 1, e));
            if (buf.length < e + 2 + n + 2) return;
            items.push(buf.slice(e + 2, e + 2 + n));
            at = e + 2 + n + 2;
          }
          replies.push(items.join(','));
          buf = buf.slice(at);
        } else {
          replies.push(t === '-' ? '-' + line : line);
          buf = buf.slice(end + 2);
        }
        if (replies.length === commands.length) { s.destroy(); resolve(replies); return; }
      }
    };
    s.on('data', (d) => { buf += d.toString('latin1'); parse(); });
    s.on('error', reject);
    s.on('connect', () => {
      for (const c of commands) s.write('*' + c.length + '\\r\\n' + c.map((a) => '$' + Buffer.byteLength(a) + '\\r\\n' + a + '\\r\\n').join(''));
    });
  });
}

http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://egg');
  try {
    if (url.pathname === '/env') {
      const e = process.env;
      return res.end(JSON.stringify({ version: '${version}', SECRET: e.SECRET ?? null, DATABASE_URL: e.DATABASE_URL ?? null, REDIS_SOCKET: e.REDIS_SOCKET ?? null, REDIS_KEY_PREFIX: e.REDIS_KEY_PREFIX ?? null, HATCHERY_PREVIEW: e.HATCHERY_PREVIEW ?? null, data: require('fs').existsSync('/data') }));
    }
    if (url.pathname === '/db') {
      const [me] = await sql({ connectionString: process.env.DATABASE_URL }, 'SELECT current_user AS "user", current_database() AS db');
      await sql({ connectionString: process.env.DATABASE_URL }, "CREATE TABLE IF NOT EXISTS notes (n text); INSERT INTO notes VALUES ('${version}')");
      return res.end(JSON.stringify(me));
    }
    if (url.pathname === '/db-as') {
      // The same socket and password, another user or database.
      await sql({ host: process.env.PGHOST, user: url.searchParams.get('user'), database: url.searchParams.get('db'), password: process.env.PGPASSWORD }, 'SELECT 1');
      return res.end('connected');
    }
    if (url.pathname === '/redis') {
      const p = process.env.REDIS_KEY_PREFIX;
      return res.end(JSON.stringify(await redis([
        ['ACL', 'WHOAMI'], ['SET', p + 'k', 'v'], ['GET', p + 'k'], ['SET', 'outside', 'v'],
        ['AUTH', 'default', 'anything'], ['ACL', 'WHOAMI'], ['SET', 'outside', 'v'],
        ['KEYS', '*'], ['FLUSHALL'], ['RESET'], ['SCAN', '0'],
      ])));
    }
    res.end('${version} ' + url.pathname);
  } catch (err) {
    res.statusCode = 500;
    res.end(String(err && err.message));
  }
}).listen(Number(process.env.PORT));
`;

/** The files of `pkg` and the packages it needs, from this project's node_modules. */
function vendored(pkg: string, into: Record<string, string> = {}, seen = new Set<string>()): Record<string, string> {
  if (seen.has(pkg)) return into;
  seen.add(pkg);
  const root = path.join(__dirname, '../../node_modules', pkg);
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) walk(file);
      else into[path.join('node_modules', pkg, path.relative(root, file))] = readFileSync(file, 'utf8');
    }
  };
  walk(root);
  const deps = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> }).dependencies ?? {};
  for (const dep of Object.keys(deps)) vendored(dep, into, seen);
  return into;
}

/** Status and body through the router. */
async function viaRouter(routerUrl: string, host: string, urlPath = '/'): Promise<{ status: number; body: string }> {
  const { status, body } = await request(routerUrl, host, urlPath);
  return { status, body };
}

describeDocker('previews on Docker: their own container, database and Redis user, and nothing left after teardown', () => {
  let d: Docker;
  let base: string;
  let t: TestGateway;
  let gateway: Gateway;
  let owner: TestUser;
  let slug: string;
  let admin: Client;
  let redisAdmin: Redis;
  const domain = 'eggs.test';
  let files: (version: string) => Record<string, string>;

  const previewHost = (pr: number) => `${slug}--pr-${pr}.${domain}`;
  const previewsOf = async () => (await gqlOk(gateway.url, owner.token, PreviewsDocument, { app: slug })).previews;
  const ready = (pr: number) =>
    until(`preview ${pr} to be ready`, async () => {
      const p = (await previewsOf()).find((x) => x.prNumber === pr);
      if (p?.status === 'FAILED') throw new Error(`preview ${pr} failed: ${p.failureReason}`);
      return p?.status === 'READY' && p;
    });
  const json = async (pr: number, urlPath: string) => {
    const r = await viaRouter(gateway.routerUrl, previewHost(pr), urlPath);
    if (r.status !== 200) throw new Error(`${urlPath} on preview ${pr}: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as Record<string, unknown>;
  };
  const containersOfPreview = (id: string) => d.listContainers({ all: true, filters: { label: [`${LABELS.preview}=${id}`] } });

  beforeAll(async () => {
    d = docker();
    base = await ensureNodeImage(d);
    files = (version) => ({
      Dockerfile: `FROM ${base}\nWORKDIR /app\nCOPY . .\nCMD ["node", "server.js"]\n`,
      'server.js': SERVER(version),
      ...vendored('pg'),
    });
    t = await startGateway({
      HATCHERY_RUNTIME: 'docker',
      HATCHERY_NODE_IMAGE: base,
      HATCHERY_APPS_DOMAIN: domain,
      HATCHERY_HEALTH_TIMEOUT_MS: '30000',
      REDIS_URL,
      // Test runs share the Redis: this gateway's events go on a channel of their own.
      HATCHERY_REDIS_PREFIX: `hatchery-test-${process.pid}-${Date.now()}:`,
    });
    gateway = t.gateway;
    owner = await makeUser(gateway);
    slug = (await makeApp(gateway.url, owner)).slug;
    await gateway.services.apps.setTier(slug, 'always_on');
    admin = new Client({ connectionString: t.db.url });
    await admin.connect();
    redisAdmin = new Redis(REDIS_URL);
    // The egg's production deployment, with a secret a preview must not see.
    const up = await upload({ url: gateway.url }, owner.token, slug, await sourceArchive(files('prod')));
    const { deploy } = await gqlOk(gateway.url, owner.token, DeployDocument, {
      input: { project: slug, source: up.body.id, env: { SECRET: 'production-only' } },
    });
    expect(await settle(gateway.url, owner, deploy.id)).toBe('LIVE');
  }, 240_000);

  afterAll(async () => {
    await admin?.end();
    redisAdmin?.disconnect();
    await gateway?.stop();
    await t?.db.drop();
    for (const c of await d.listContainers({ all: true, filters: { label: [`${LABELS.app}=${slug}`] } })) await d.getContainer(c.Id).remove({ force: true });
  });

  it('a preview runs the egg’s live image at its host, with none of the deploy’s env, no volume, and a database of its own', async () => {
    const { upsertPreview } = await gqlOk(gateway.url, owner.token, UpsertPreviewDocument, { app: slug, prNumber: 1 });
    expect(upsertPreview.created).toBe(true);
    const one = await ready(1);
    const env = await json(1, '/env');
    expect(env).toMatchObject({ version: 'prod', SECRET: null, HATCHERY_PREVIEW: '1', data: false });
    expect(env.DATABASE_URL).toMatch(/^postgresql:\/\/hatchery_prv_[a-z0-9_]+:[0-9a-f]{64}@localhost\/hatchery_prv_[a-z0-9_]+\?host=\/run\/hatchery$/);

    const db = await json(1, '/db');
    const name = PreviewDatabases.nameOf(one.id);
    expect(db).toEqual({ user: name, db: name });
    // The database and role exist on the server, and the preview's rows are in its database.
    expect((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount).toBe(1);
    const own = new Client({ connectionString: t.db.url.replace(/\/[^/?]+(\?|$)/, `/${name}$1`) });
    await own.connect();
    try {
      expect((await own.query('SELECT n FROM notes')).rows).toEqual([{ n: 'prod' }]);
    } finally {
      await own.end();
    }
    // The router's 404 for a pull request with no preview.
    expect((await viaRouter(gateway.routerUrl, previewHost(9))).status).toBe(404);
  }, 120_000);

  it('the relay lets a preview connect only as its own role to its own database, whatever the server would trust', async () => {
    const one = (await previewsOf()).find((p) => p.prNumber === 1)!;
    const name = PreviewDatabases.nameOf(one.id);
    for (const [user, db] of [
      ['postgres', 'postgres'],
      [name, 'postgres'],
      ['postgres', name],
    ]) {
      const r = await viaRouter(gateway.routerUrl, previewHost(1), `/db-as?user=${user}&db=${db}`);
      expect(r).toEqual({ status: 500, body: `this preview may only connect as "${name}" to the database "${name}"` });
    }
  }, 60_000);

  it('a Redis ACL user confined to the preview’s prefix: no other keys, no FLUSHALL or KEYS, and AUTH cannot switch to another user', async () => {
    const one = (await previewsOf()).find((p) => p.prNumber === 1)!;
    const user = PreviewRedis.userOf(one.id);
    const prefix = PreviewRedis.prefixOf(one.id);
    expect(await json(1, '/env')).toMatchObject({ REDIS_SOCKET: '/run/hatchery/redis.sock', REDIS_KEY_PREFIX: prefix });
    const replies = (await json(1, '/redis')) as unknown as string[];
    expect(replies[0]).toBe(user); // ACL WHOAMI
    expect(replies.slice(1, 3)).toEqual(['OK', 'v']); // its own key
    expect(replies[3]).toMatch(/^-NOPERM/); // another key
    expect(replies[4]).toMatch(/^-WRONGPASS/); // AUTH default …: made to name the preview's user
    expect(replies[5]).toBe(user); // still the preview's user
    expect(replies[6]).toMatch(/^-NOPERM/);
    for (const r of replies.slice(7)) expect(r).toMatch(/^-NOPERM/); // KEYS, FLUSHALL, RESET (refused by the relay), SCAN
    expect(replies[9]).toMatch(/RESET is not allowed/);
    expect(await redisAdmin.get(`${prefix}k`)).toBe('v');
    expect(await redisAdmin.exists('outside')).toBe(0);
  }, 60_000);

  it('after a gateway restart the next gateway serves the preview’s relays: its app reaches its database again', async () => {
    const one = (await previewsOf()).find((p) => p.prNumber === 1)!;
    const socket = path.join(t.config.dataDir, 'previews', one.id.toLowerCase(), '.s.PGSQL.5432');
    await gateway.stop();
    // Nothing serves the socket now (the container keeps running).
    expect(existsSync(socket)).toBe(false);
    gateway = buildApp(t.config);
    await gateway.start(0);
    const name = PreviewDatabases.nameOf(one.id);
    await until('the restarted gateway to serve the relay', () => Promise.resolve(existsSync(socket)));
    expect(await json(1, '/db')).toEqual({ user: name, db: name });
  }, 120_000);

  it('a preview of a given source runs that source, with a database that is not another preview’s', async () => {
    const up = await upload({ url: gateway.url }, owner.token, slug, await sourceArchive(files('pr-2')));
    const res = await rest(gateway.url, owner.token, 'POST', `/v1/apps/${slug}/previews`, { pr_number: 2, source: up.body.id });
    expect(res.status).toBe(201);
    const two = await ready(2);
    expect((await viaRouter(gateway.routerUrl, previewHost(2), '/hello')).body).toBe('pr-2 /hello');
    const name = PreviewDatabases.nameOf(two.id);
    expect(await json(2, '/db')).toEqual({ user: name, db: name });
    const one = (await previewsOf()).find((p) => p.prNumber === 1)!;
    expect(name).not.toBe(PreviewDatabases.nameOf(one.id));
    // Another egg's source is not this egg's to preview.
    const other = (await makeApp(gateway.url, owner)).slug;
    const foreign = await upload({ url: gateway.url }, owner.token, other, await sourceArchive({ 'package.json': '{}' }));
    const refused = await rest(gateway.url, owner.token, 'POST', `/v1/apps/${slug}/previews`, { pr_number: 3, source: foreign.body.id });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([{ field: 'source', message: expect.any(String) }]);
    expect((await previewsOf()).map((p) => p.prNumber).sort()).toEqual([1, 2]);
    // An egg with nothing live and no source given has nothing to preview: failed, saying so.
    await gqlOk(gateway.url, owner.token, UpsertPreviewDocument, { app: other, prNumber: 1 });
    const failed = await until('the preview of an egg with nothing live to fail', async () => {
      const [p] = (await gqlOk(gateway.url, owner.token, PreviewsDocument, { app: other })).previews;
      return p?.status === 'FAILED' && p;
    });
    expect(failed.failureReason).toBe(`${other} has no live deployment to preview: deploy it first, or give the preview a source`);
    expect((await viaRouter(gateway.routerUrl, `${other}--pr-1.${domain}`)).body).toContain(failed.failureReason);
    expect((await rest(gateway.url, owner.token, 'DELETE', `/v1/apps/${other}/previews/1`)).status).toBe(204);
  }, 180_000);

  it('teardown removes the container, image, database, role, Redis user and keys, relays and route: nothing is left', async () => {
    for (const pr of [1, 2]) {
      const p = (await previewsOf()).find((x) => x.prNumber === pr)!;
      const name = PreviewDatabases.nameOf(p.id);
      const user = PreviewRedis.userOf(p.id);
      expect(await containersOfPreview(p.id)).toHaveLength(1);
      const relayDir = path.join(t.config.dataDir, 'previews', p.id.toLowerCase());
      expect(existsSync(relayDir)).toBe(true);

      expect((await rest(gateway.url, owner.token, 'DELETE', `/v1/apps/${slug}/previews/${pr}`)).status).toBe(204);

      expect(await containersOfPreview(p.id)).toEqual([]);
      expect(await d.listImages({ filters: { label: [`${LABELS.deployment}=${p.id}`] } })).toEqual([]);
      expect((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount).toBe(0);
      expect((await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rowCount).toBe(0);
      const acl = (await redisAdmin.call('ACL', 'LIST')) as string[];
      expect(acl.filter((l) => l.startsWith(`user ${user} `))).toEqual([]);
      expect(await redisAdmin.keys(`${PreviewRedis.prefixOf(p.id)}*`)).toEqual([]);
      expect(existsSync(relayDir)).toBe(false);
      expect((await viaRouter(gateway.routerUrl, previewHost(pr))).status).toBe(404);
    }
    // The egg itself is untouched.
    expect((await viaRouter(gateway.routerUrl, `${slug}.${domain}`, '/still')).body).toBe('prod /still');
  }, 120_000);
});
