import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  AddCollaboratorDocument,
  AppResourcesDocument,
  CronsDocument,
  DeploymentDocument,
  ProvisionVolumeDocument,
  RunCronNowDocument,
  UpsertPreviewDocument,
  WebhooksDocument,
} from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser, unique } from '../support/factories';
import { Receiver } from '../webhooks/helpers';
import { CliEnv, CliResult, hatch, parseTable, stopAllClis, tempDir, writeTree } from './helpers';
import { closedPort } from '../support/ports';

jest.setTimeout(60_000);

/** Piped output is for scripts and files: no colour codes, no spinner frames. */
function expectPlain(r: CliResult): void {
  expect(r.stdout).not.toMatch(/\x1b|\r/); // eslint-disable-line no-control-regex -- the escape codes a terminal gets are what is checked
  expect(r.stderr).not.toMatch(/\x1b|\r/); // eslint-disable-line no-control-regex -- the escape codes a terminal gets are what is checked
}

function ok(r: CliResult): CliResult {
  if (r.code !== 0) throw new Error(`hatch exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  expectPlain(r);
  return r;
}

describe('hatch CLI (end to end against a running gateway)', () => {
  let t: TestGateway;
  let receiver: Receiver;
  const dirs: string[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid,127.0.0.1', HATCHERY_WEBHOOK_CA_FILE: receiver.certFile });
  });
  afterEach(() => stopAllClis());
  afterAll(async () => {
    await t.stop();
    await receiver.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  function dir(): string {
    const d = tempDir();
    dirs.push(d);
    return d;
  }

  /** A user with a token in HATCH_TOKEN and an empty config dir. */
  async function session(): Promise<{ user: TestUser; env: CliEnv }> {
    const user = await makeUser(t.gateway);
    return { user, env: { apiUrl: t.url, token: user.token, configDir: dir() } };
  }

  describe('help and usage', () => {
    it('`hatch --help` lists every command; `hatch <cmd> --help` shows its options', async () => {
      const env = { apiUrl: t.url, configDir: dir() };
      const top = ok(await hatch(env, ['--help']));
      for (const c of [
        'login',
        'whoami',
        'apps create <slug>',
        'deploy <app>',
        'deployments',
        'logs [deployment]',
        'energy',
        'checkout',
        'resources set <app> <mb>',
        'previews <app>',
        'volume <app>',
        'crons create <app> <schedule> <command...>',
        'crons runs <app> <id>',
        'webhooks test <app> <id>',
        'drains create <app> <url>',
      ]) {
        expect(top.stdout).toContain(c);
      }
      const logs = ok(await hatch(env, ['logs', '--help']));
      expect(logs.stdout).toMatch(/usage: hatch logs \[deployment\]/);
      expect(logs.stdout).toMatch(/--app <slug>/);
      expect(logs.stdout).toMatch(/-f, --follow/);
      expect(logs.stdout).toMatch(/--type <build\|runtime>/);
      expect(ok(await hatch(env, ['help', 'deployments'])).stdout).toMatch(/--limit <n>/);
    });

    it('bad usage exits 2 with the usage line, and calls nothing', async () => {
      const env = { apiUrl: 'http://127.0.0.1:1', configDir: dir() };
      const unknown = await hatch(env, ['hatchlings']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/unknown command "hatchlings"/);
      const missing = await hatch(env, ['deploy']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/missing <app>[\s\S]*usage: hatch deploy <app>/);
      const badFlag = await hatch(env, ['apps', '--colour']);
      expect(badFlag.code).toBe(2);
      expect(badFlag.stderr).toMatch(/--colour/);
    });

    it('is installed as the package bin: `npx hatch` works from the repository', async () => {
      const { spawnSync } = await import('node:child_process');
      // --no and offline: npm must find the bin in this package, never ask a registry.
      const res = spawnSync('npx', ['--no', '--', 'hatch', '--version'], {
        cwd: path.resolve(__dirname, '../..'),
        env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(res.status).toBe(0);
      expect(res.stdout).toMatch(/^hatch \d+\.\d+\.\d+\n$/);
    });
  });

  describe('login and whoami', () => {
    it('login verifies the token, stores it with mode 0600, and whoami then works without HATCH_TOKEN', async () => {
      const user = await makeUser(t.gateway);
      const configDir = path.join(dir(), 'nested', 'hatch');
      const env = { apiUrl: t.url, configDir };
      const login = ok(await hatch(env, ['login', '--token', user.token]));
      expect(login.stdout).toContain(user.email);

      const file = path.join(configDir, 'config.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(configDir).mode & 0o777).toBe(0o700);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ token: user.token, apiUrl: t.url });

      const who = ok(await hatch(env, ['whoami']));
      const fields = Object.fromEntries(
        who.stdout
          .trim()
          .split('\n')
          .map((l) => l.split(/\s{2,}/)),
      );
      expect(fields).toMatchObject({ email: user.email, id: user.id, api: t.url });
      expect(JSON.parse(ok(await hatch(env, ['whoami', '--json'])).stdout)).toMatchObject({ id: user.id, email: user.email });
    });

    it('login reads the token from stdin when it is not a terminal, and tightens an existing file to 0600', async () => {
      const user = await makeUser(t.gateway);
      const configDir = dir();
      const file = path.join(configDir, 'config.json');
      writeFileSync(file, '{}\n');
      chmodSync(file, 0o644);
      ok(await hatch({ apiUrl: t.url, configDir }, ['login'], `${user.token}\n`));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(user.token);
    });

    it('a refused token is not stored, and login exits non-zero', async () => {
      const configDir = dir();
      const res = await hatch({ apiUrl: t.url, configDir }, ['login', '--token', 'hatch_not-a-real-token']);
      expect(res.code).toBe(3);
      expect(res.stderr).toMatch(/refused the token; nothing was stored/);
      expect(existsSync(path.join(configDir, 'config.json'))).toBe(false);
    });

    it('HATCH_TOKEN beats the stored token; logout forgets it; without any token commands fail with a hint', async () => {
      const stored = await makeUser(t.gateway);
      const other = await makeUser(t.gateway);
      const configDir = dir();
      ok(await hatch({ apiUrl: t.url, configDir }, ['login', '--token', stored.token]));
      expect(ok(await hatch({ apiUrl: t.url, configDir, token: other.token }, ['whoami'])).stdout).toContain(other.email);

      ok(await hatch({ apiUrl: t.url, configDir }, ['logout']));
      const res = await hatch({ apiUrl: t.url, configDir }, ['whoami']);
      expect(res.code).toBe(3);
      expect(res.stderr).toMatch(/not logged in/);
      expect(res.stderr).toMatch(/hatch login/);
    });

    it('--api-url beats HATCH_API_URL; an unreachable gateway is an error, not a hang', async () => {
      const { user } = await session();
      const closed = await closedPort();
      const env = { apiUrl: `http://127.0.0.1:${closed}`, token: user.token, configDir: dir() };
      const down = await hatch(env, ['whoami']);
      expect(down.code).toBe(1);
      expect(down.stderr).toBe(`error: cannot reach http://127.0.0.1:${closed}: ECONNREFUSED\n`);
      expect(ok(await hatch(env, ['whoami', '--api-url', t.url])).stdout).toContain(user.email);
    });
  });

  describe('apps', () => {
    it('apps create, then apps lists it as an aligned table and as JSON', async () => {
      const { user, env } = await session();
      expect(ok(await hatch(env, ['apps'])).stdout).toMatch(/No eggs yet/);
      const slugs = [unique('cli'), unique('cli-longer-name')];
      for (const slug of slugs) expect(ok(await hatch(env, ['apps', 'create', slug])).stdout).toContain(slug);

      const rows = parseTable(ok(await hatch(env, ['apps'])).stdout);
      expect(rows.map((r) => r.SLUG).sort()).toEqual([...slugs].sort());
      for (const r of rows) expect(r).toMatchObject({ TIER: 'free', URL: `https://${r.SLUG}.hatchery.run`, OWNER: user.email });

      const listed = JSON.parse(ok(await hatch(env, ['apps', '--json'])).stdout);
      expect(listed.map((a: { slug: string }) => a.slug).sort()).toEqual([...slugs].sort());
      expect(listed[0]).toMatchObject({ tier: 'FREE', owner: { email: user.email } });
      expect(JSON.parse(ok(await hatch(env, ['apps', 'list', '--json'])).stdout)).toEqual(listed);
    });

    it('a taken or invalid slug prints the server’s message and field, and exits non-zero', async () => {
      const { env } = await session();
      const slug = unique('cli');
      ok(await hatch(env, ['apps', 'create', slug]));
      const taken = await hatch(env, ['apps', 'create', slug]);
      expect(taken.code).toBe(1);
      expect(taken.stdout).toBe('');
      expect(taken.stderr).toMatch(/^error: slug: .*taken.*\(BAD_USER_INPUT\)$/m);
      const bad = await hatch(env, ['apps', 'create', 'Not_A_Slug', '--json']);
      expect(bad.code).toBe(1);
      expect(JSON.parse(bad.stderr)).toEqual({ error: { message: expect.stringMatching(/^slug: /), code: 'BAD_USER_INPUT', field: 'slug' } });
    });
  });

  describe('deploy, deployments and logs', () => {
    let user: TestUser;
    let env: CliEnv;
    let slug: string;
    let live: string;
    let failed: string;

    beforeAll(async () => {
      ({ user, env } = await session());
      slug = (await makeApp(t.url, user)).slug;
    });

    it('deploy streams the build log and exits 0 once live', async () => {
      const egg = writeTree(dir(), { 'package.json': '{"name":"hello"}', 'server.js': 'require("http").createServer().listen(process.env.PORT);\n' });
      const res = ok(await hatch(env, ['deploy', slug, '--dir', egg, '--env', 'GREETING=hello world', '--env', 'EMPTY=']));
      const id = /Deploying \S+: (dep_\w+)/.exec(res.stdout)![1];
      const source = /^Uploaded 2 files, \d+ B \((src_\w+)\)$/m.exec(res.stdout)![1];
      live = id;
      expect(res.stdout.split('\n')).toEqual([
        expect.stringMatching(/^Uploaded 2 files/),
        `Deploying ${slug}: ${id}`,
        `==> Build started for ${slug} (${id})`,
        '==> Installing dependencies',
        '==> Compiling',
        '==> Creating image',
        '==> Build succeeded',
        `✔ live https://${slug}--${id.slice(-8)}.hatchery.run`,
        '',
      ]);
      const { deployment } = await gqlOk(t.url, user.token, DeploymentDocument, { id });
      expect(deployment).toMatchObject({ status: 'LIVE', envKeys: ['EMPTY', 'GREETING'].sort(), source });
      expect(res.stdout).toContain(deployment.url);
    });

    it('deploy exits non-zero when the build fails (HATCHERY_SIMULATE=fail)', async () => {
      const res = await hatch(env, ['deploy', slug, '--no-source', '--env', 'HATCHERY_SIMULATE=fail']);
      expectPlain(res);
      expect(res.code).toBe(1);
      const id = /Deploying \S+: (dep_\w+)/.exec(res.stdout)![1];
      failed = id;
      expect(res.stdout).toContain('error: build failed: HATCHERY_SIMULATE=fail');
      expect(res.stdout).not.toContain('Build succeeded');
      expect(res.stderr).toMatch(new RegExp(`failed ${id}: build failed: HATCHERY_SIMULATE=fail`));
      expect((await gqlOk(t.url, user.token, DeploymentDocument, { id })).deployment.status).toBe('FAILED');
    });

    it('deploy --json prints the final deployment on stdout and the build on stderr', async () => {
      const res = ok(await hatch(env, ['deploy', slug, '--no-source', '--json']));
      const d = JSON.parse(res.stdout);
      expect(d).toMatchObject({ status: 'LIVE', app: { slug } });
      expect(res.stderr).toContain('==> Build succeeded');
    });

    it('deploy refuses a malformed --env before calling the server, and names an unknown egg', async () => {
      const bad = await hatch(env, ['deploy', slug, '--env', 'NOEQUALS']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--env takes KEY=VALUE/);
      const unknownEgg = await hatch(env, ['deploy', unique('nope'), '--no-source']);
      expect(unknownEgg.code).toBe(4);
      expect(unknownEgg.stderr).toMatch(/not found \(NOT_FOUND\)/);
    });

    it('deploy refuses --env __proto__=… by the gateway’s own rule (it would be dropped, not sent), deploying nothing', async () => {
      const count = async () =>
        (await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [slug]))[0].n;
      const before = await count();
      const bad = await hatch(env, ['deploy', slug, '--env', '__proto__=x']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--env takes KEY=VALUE where KEY must match .* and not be __proto__, got "__proto__=x"/);
      expect(await count()).toBe(before);
    });

    it('deployments lists newest first, filtered by --app, --status and --limit', async () => {
      const other = (await makeApp(t.url, user)).slug;
      const otherDep = await deploy(t.url, user, other);
      await settle(t.url, user, otherDep.id);

      const all = parseTable(ok(await hatch(env, ['deployments'])).stdout);
      expect(all[0]).toMatchObject({ ID: otherDep.id, APP: other, STATUS: 'live' });
      expect(all.map((r) => r.ID)).toEqual(expect.arrayContaining([live, failed]));
      expect(all.map((r) => r.ID)).toEqual([...all.map((r) => r.ID)].sort().reverse());

      const mine = parseTable(ok(await hatch(env, ['deployments', '--app', slug])).stdout);
      expect(new Set(mine.map((r) => r.APP))).toEqual(new Set([slug]));
      expect(mine).toHaveLength(3);

      const failedOnly = JSON.parse(ok(await hatch(env, ['deployments', '--status', 'failed', '--json'])).stdout);
      expect(failedOnly.map((d: { id: string }) => d.id)).toEqual([failed]);
      expect(JSON.parse(ok(await hatch(env, ['deployments', '--limit', '1', '--json'])).stdout).map((d: { id: string }) => d.id)).toEqual([otherDep.id]);

      const tooMany = await hatch(env, ['deployments', '--limit', '500']);
      expect(tooMany.code).toBe(1);
      expect(tooMany.stderr).toMatch(/^error: first: .*\(BAD_USER_INPUT\)$/m);
      const badStatus = await hatch(env, ['deployments', '--status', 'sleeping']);
      expect(badStatus.code).toBe(2);
    });

    it('logs prints a deployment’s lines, filtered by --type and --since', async () => {
      const build = ok(await hatch(env, ['logs', live, '--type', 'build']))
        .stdout.split('\n')
        .filter(Boolean);
      expect(build).toHaveLength(5);
      for (const l of build) expect(l).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z build {3}==> /);
      expect(build[4]).toMatch(/==> Build succeeded$/);

      const runtime = ok(await hatch(env, ['logs', live, '--type', 'runtime']))
        .stdout.split('\n')
        .filter(Boolean);
      expect(runtime.map((l) => l.replace(/^\S+ runtime /, ''))).toEqual([expect.stringMatching(/^Starting /), 'Listening on port 8080']);

      const all = ok(await hatch(env, ['logs', live, '--json']))
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(all.map((l) => l.type)).toEqual(['BUILD', 'BUILD', 'BUILD', 'BUILD', 'BUILD', 'RUNTIME', 'RUNTIME']);
      expect(all.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);

      const since = all[2].timestamp;
      const after = ok(await hatch(env, ['logs', live, '--since', since, '--json']))
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((l) => l.timestamp > since)).toBe(true);
      expect(after).toEqual(all.filter((l) => l.timestamp > since));

      // --tail: the last lines, oldest first; --until: only lines before it.
      const tail = ok(await hatch(env, ['logs', live, '--tail', '2', '--json']))
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(tail).toEqual(all.slice(-2));
      const before = ok(await hatch(env, ['logs', live, '--until', all[5].timestamp, '--json']))
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(before).toEqual(all.filter((l) => l.timestamp < all[5].timestamp));
      const matching = ok(await hatch(env, ['logs', live, '-q', 'listening -nothing', '--json']))
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(matching).toEqual(all.filter((l) => /listening/i.test(l.message)));
      const badFilter = await hatch(env, ['logs', live, '-q', '@colour:red']);
      expect(badFilter.code).toBe(1);
      expect(badFilter.stderr).toMatch(/q: has an unknown key @colour .* at position 1/);
      expect((await hatch(env, ['logs', live, '--app', 'x'])).code).toBe(2);
      expect((await hatch(env, ['logs', live, '--tail', '0'])).code).toBe(1); // the server's 422 on tail
      expect((await hatch(env, ['logs', live, '--tail', 'lots'])).code).toBe(2);
      expect((await hatch(env, ['logs', live, '--until', 'soon'])).code).toBe(2);
      expect((await hatch(env, ['logs', live, '--until', since, '-f'])).code).toBe(2);

      const badType = await hatch(env, ['logs', live, '--type', 'stdout']);
      expect(badType.code).toBe(2);
      const unknown = await hatch(env, ['logs', 'dep_nope']);
      expect(unknown.code).toBe(4);
      expect(unknown.stderr).toMatch(/Deployment "dep_nope" not found/);
    });
  });

  describe('energy and checkout', () => {
    it('energy shows daily, weekly, bonus, pack and total', async () => {
      const { user, env } = await session();
      await t.gateway.services.energy.setBuckets(user.email, { daily: 7, weekly: 30, bonus: 5, pack: 1000 });
      const rows = parseTable(ok(await hatch(env, ['energy'])).stdout);
      expect(rows.map((r) => [r.BUCKET, r.MINUTES])).toEqual([
        ['daily', '7'],
        ['weekly', '30'],
        ['bonus', '5'],
        ['pack', '1000'],
        ['total', '1042'],
      ]);
      expect(JSON.parse(ok(await hatch(env, ['energy', '--json'])).stdout)).toMatchObject({
        daily: 7,
        weekly: 30,
        bonus: 5,
        pack: 1000,
        total: 1042,
        depleted: false,
      });

      await t.gateway.services.energy.setBuckets(user.email, { daily: 0, weekly: 0, bonus: 0, pack: 0 });
      expect(ok(await hatch(env, ['energy'])).stdout).toMatch(/depleted/);
    });

    it('checkout prints the hosted payment URL, which serves the payment page', async () => {
      const { env } = await session();
      const res = ok(await hatch(env, ['checkout']));
      expect(res.stdout).toMatch(/^https?:\/\/\S+\n$/);
      const page = await fetch(res.stdout.trim());
      expect(page.status).toBe(200);
      const json = JSON.parse(ok(await hatch(env, ['checkout', '--json'])).stdout);
      expect(json).toMatchObject({ sessionId: expect.stringMatching(/^chk_/), checkoutUrl: expect.stringMatching(/^http/) });
    });
  });

  describe('resources, previews and volume', () => {
    it('resources set changes the memory; over the cap prints the field and exits non-zero', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      const set = parseTable(ok(await hatch(env, ['resources', 'set', slug, '256'])).stdout);
      expect(set).toEqual([{ SLUG: slug, 'MEMORY MB': '256', 'EFFECTIVE MB': '256', 'CAP MB': '512', REPLICAS: '1', 'REPLICAS CAP': '1' }]);
      expect((await gqlOk(t.url, user.token, AppResourcesDocument, { slug })).app.memoryMb).toBe(256);

      const over = await hatch(env, ['resources', 'set', slug, '99999']);
      expectPlain(over);
      expect(over.code).toBe(1);
      expect(over.stdout).toBe('');
      expect(over.stderr).toMatch(/^error: memoryMb: .*512.*\(LIMIT_EXCEEDED\)$/m);
      expect((await gqlOk(t.url, user.token, AppResourcesDocument, { slug })).app.memoryMb).toBe(256);

      const asJson = await hatch(env, ['resources', 'set', slug, '99999', '--json']);
      expect(asJson.code).toBe(1);
      expect(JSON.parse(asJson.stderr).error).toMatchObject({ code: 'LIMIT_EXCEEDED', field: 'memoryMb' });

      expect(JSON.parse(ok(await hatch(env, ['resources', 'set', slug, 'default', '--json'])).stdout)).toMatchObject({ slug, memoryMb: null });
      const notNumber = await hatch(env, ['resources', 'set', slug, 'lots']);
      expect(notNumber.code).toBe(2);

      // Owner only: a collaborator gets the server's FORBIDDEN.
      const collaborator = await makeUser(t.gateway);
      await gqlOk(t.url, user.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
      const forbidden = await hatch({ ...env, token: collaborator.token }, ['resources', 'set', slug, '128']);
      expect(forbidden.code).toBe(1);
      expect(forbidden.stderr).toMatch(/\(FORBIDDEN\)/);
    });

    it('resources replicas sets the replicas within the tier’s cap; over it prints the field and exits 1', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      const over = await hatch(env, ['resources', 'replicas', slug, '2']);
      expect(over.code).toBe(1);
      expect(over.stderr).toMatch(/^error: replicas: exceeds the free tier’s cap of 1 replica \(LIMIT_EXCEEDED\)$/m);
      await t.gateway.services.apps.setTier(slug, 'always_on');
      const set = parseTable(ok(await hatch(env, ['resources', 'replicas', slug, '3'])).stdout);
      expect(set).toEqual([{ SLUG: slug, 'MEMORY MB': 'default', 'EFFECTIVE MB': '512', 'CAP MB': '1024', REPLICAS: '3', 'REPLICAS CAP': '3' }]);
      expect(JSON.parse(ok(await hatch(env, ['resources', 'replicas', slug, 'default', '--json'])).stdout)).toMatchObject({
        slug,
        replicas: null,
        effectiveReplicas: 1,
      });
      expect((await hatch(env, ['resources', 'replicas', slug, 'many'])).code).toBe(2);
    });

    it('previews lists an egg’s previews', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      expect(ok(await hatch(env, ['previews', slug])).stdout).toMatch(/has no previews/);
      await gqlOk(t.url, user.token, UpsertPreviewDocument, { app: slug, prNumber: 42 });
      const rows = parseTable(ok(await hatch(env, ['previews', slug])).stdout);
      expect(rows).toEqual([expect.objectContaining({ PR: '42', SLUG: `${slug}-pr-42` })]);
      expect(['building', 'ready']).toContain(rows[0].STATUS);
      const json = JSON.parse(ok(await hatch(env, ['previews', slug, '--json'])).stdout);
      expect(json).toEqual([expect.objectContaining({ prNumber: 42, slug: `${slug}-pr-42` })]);
    });

    it('volume shows an egg’s volume; none is an error naming it', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      const none = await hatch(env, ['volume', slug]);
      expect(none.code).toBe(4);
      expect(none.stderr).toMatch(/not found \(NOT_FOUND\)/);

      await gqlOk(t.url, user.token, ProvisionVolumeDocument, { app: slug, sizeMb: 300 });
      const out = ok(await hatch(env, ['volume', slug])).stdout;
      const fields = Object.fromEntries(
        out
          .trim()
          .split('\n')
          .map((l) => l.split(/\s{2,}/)),
      );
      expect(fields).toMatchObject({ size: '300 MB', used: '0 MB', status: 'active', mount: '/data', 'erase at': '-' });
      expect(JSON.parse(ok(await hatch(env, ['volume', slug, '--json'])).stdout)).toMatchObject({ sizeMb: 300, mount: '/data', overQuota: false });
    });
  });

  describe('crons', () => {
    it('create, list (table and JSON), runs and delete', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      expect(ok(await hatch(env, ['crons', slug])).stdout).toMatch(/has no crons/);

      const created = JSON.parse(ok(await hatch(env, ['crons', 'create', slug, '*/15 * * * *', 'npm', 'run', 'cleanup', '--json'])).stdout);
      expect(created).toMatchObject({ id: expect.stringMatching(/^cron_/), schedule: '*/15 * * * *', command: 'npm run cleanup', enabled: true });
      const server = (await gqlOk(t.url, user.token, CronsDocument, { app: slug })).crons.nodes;
      expect(server.map((c) => [c.id, c.command])).toEqual([[created.id, 'npm run cleanup']]);

      const rows = parseTable(ok(await hatch(env, ['crons', slug])).stdout);
      expect(rows).toEqual([
        { ID: created.id, SCHEDULE: '*/15 * * * *', COMMAND: 'npm run cleanup', ENABLED: 'yes', 'NEXT RUN': created.nextRunAt, 'LAST RUN': '-' },
      ]);
      expect(JSON.parse(ok(await hatch(env, ['crons', 'list', slug, '--json'])).stdout).map((c: { id: string }) => c.id)).toEqual([created.id]);

      expect(ok(await hatch(env, ['crons', 'runs', slug, created.id])).stdout).toMatch(/has not run yet/);
      // With no energy a run is recorded as skipped at once: a finished run without waiting.
      await t.gateway.services.energy.setBuckets(user.email, { daily: 0, weekly: 0, bonus: 0, pack: 0 });
      const run = (await gqlOk(t.url, user.token, RunCronNowDocument, { app: slug, id: created.id })).runCronNow;
      const runs = parseTable(ok(await hatch(env, ['crons', 'runs', slug, created.id])).stdout);
      expect(runs).toEqual([expect.objectContaining({ ID: run.id, STATUS: 'skipped_depleted', EXIT: '-' })]);
      expect(JSON.parse(ok(await hatch(env, ['crons', 'runs', slug, created.id, '--json'])).stdout)).toEqual([
        expect.objectContaining({ id: run.id, status: 'SKIPPED_DEPLETED' }),
      ]);
      expect(parseTable(ok(await hatch(env, ['crons', slug])).stdout)[0]['LAST RUN']).toMatch(/^skipped_depleted /);

      expect(ok(await hatch(env, ['crons', 'delete', slug, created.id])).stdout).toContain(`Deleted cron ${created.id}`);
      expect((await gqlOk(t.url, user.token, CronsDocument, { app: slug })).crons.nodes).toEqual([]);
      const again = await hatch(env, ['crons', 'delete', slug, created.id]);
      expect(again.code).toBe(4);
      expect(again.stderr).toMatch(/not found \(NOT_FOUND\)/);
    });

    it('a bad schedule prints the server’s message naming the field', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      const res = await hatch(env, ['crons', 'create', slug, '*/15 * * *', 'echo', 'hi']);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^error: schedule: .*5 fields.*\(BAD_USER_INPUT\)$/m);
      expect((await gqlOk(t.url, user.token, CronsDocument, { app: slug })).crons.nodes).toEqual([]);
    });
  });

  describe('webhooks', () => {
    it('create (secret shown once), list, test against a local receiver, delete', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      expect(ok(await hatch(env, ['webhooks', slug])).stdout).toMatch(/has no webhooks/);

      const created = ok(await hatch(env, ['webhooks', 'create', slug, receiver.url('/cli-ok'), '--events', 'deploy']));
      const id = /Created webhook (wh_\w+)/.exec(created.stdout)![1];
      expect(created.stdout).toMatch(/Signing secret \(shown only now\): whsec_\S+/);
      const invalid = JSON.parse(ok(await hatch(env, ['webhooks', 'create', slug, 'https://hooks.invalid/x', '--json'])).stdout);
      expect(invalid).toMatchObject({ secret: expect.stringMatching(/^whsec_/), webhook: { url: 'https://hooks.invalid/x', events: ['deploy'] } });

      const rows = parseTable(ok(await hatch(env, ['webhooks', slug])).stdout);
      expect(rows.map((r) => [r.ID, r.URL, r.EVENTS, r.ACTIVE, r['LAST DELIVERY']]).sort()).toEqual(
        [
          [id, receiver.url('/cli-ok'), 'deploy', 'yes', '-'],
          [invalid.webhook.id, 'https://hooks.invalid/x', 'deploy', 'yes', '-'],
        ].sort(),
      );
      const listed = ok(await hatch(env, ['webhooks', slug, '--json'])).stdout;
      expect(listed).not.toContain('whsec_');

      const test = ok(await hatch(env, ['webhooks', 'test', slug, id]));
      expect(test.stdout).toMatch(/^status\s+succeeded$/m);
      expect(test.stdout).toMatch(/^response\s+200$/m);
      const [ping] = await receiver.waitFor('/cli-ok', 1);
      expect(ping.json).toMatchObject({ type: 'ping' });
      expect(parseTable(ok(await hatch(env, ['webhooks', slug])).stdout).find((r) => r.ID === id)!['LAST DELIVERY']).toMatch(/^succeeded 200 /);

      expect(ok(await hatch(env, ['webhooks', 'delete', slug, invalid.webhook.id])).stdout).toContain(`Deleted webhook ${invalid.webhook.id}`);
      expect((await gqlOk(t.url, user.token, WebhooksDocument, { app: slug })).webhooks.map((w) => w.id)).toEqual([id]);
      const again = await hatch(env, ['webhooks', 'delete', slug, invalid.webhook.id]);
      expect(again.code).toBe(4);
    });

    it('a ping the receiver refuses prints a failed status and exits non-zero', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      receiver.reply('/cli-500', { status: 500 });
      const { webhook } = JSON.parse(ok(await hatch(env, ['webhooks', 'create', slug, receiver.url('/cli-500'), '--json'])).stdout);
      const res = await hatch(env, ['webhooks', 'test', slug, webhook.id]);
      expectPlain(res);
      expect(res.code).toBe(1);
      expect(res.stdout).toMatch(/^status\s+failed$/m);
      expect(res.stdout).toMatch(/^response\s+500$/m);
      expect(JSON.parse((await hatch(env, ['webhooks', 'test', slug, webhook.id, '--json'])).stdout)).toMatchObject({ status: 'FAILED', responseStatus: 500 });
    });

    it('a private target is refused with the field named', async () => {
      const { user, env } = await session();
      const slug = (await makeApp(t.url, user)).slug;
      const res = await hatch(env, ['webhooks', 'create', slug, 'https://10.0.0.1/x']);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^error: url: .*\(BAD_USER_INPUT\)$/m);
    });
  });
});
