import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { AddCollaboratorDocument, DeploymentDocument, ProvisionVolumeDocument, RunCronNowDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, settle, TestUser, unique } from '../support/factories';
import { closedPort } from '../support/ports';
import { TrackingRuntime } from '../crons/helpers';
import { Receiver } from '../webhooks/helpers';
import { CliEnv, CliResult, hatch, spawnHatch, stopAllClis, tempDir, writeTree } from './helpers';

jest.setTimeout(120_000);

/**
 * Issue 16: every command's exit code (0 done, 1 failed, 2 bad usage, 3 auth, 4 not found) and
 * `--json` on every command: exactly one JSON document on stdout (NDJSON for log lines), and an
 * error as one `{"error": {…}}` line on stderr, against a real gateway.
 */
describe('hatch exit codes and --json on every command', () => {
  let t: TestGateway;
  let sim: TrackingRuntime;
  let receiver: Receiver;
  const dirs: string[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startGateway(
      // Drains are registered, never contacted (shipping is off).
      { HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1,drains.invalid', HATCHERY_WEBHOOK_CA_FILE: receiver.certFile, HATCHERY_LOG_DRAIN_WORKER: 'off' },
      { runtime: (ds) => (sim = new TrackingRuntime(ds)) },
    );
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

  async function session(): Promise<{ user: TestUser; env: CliEnv }> {
    const user = await makeUser(t.gateway);
    return { user, env: { apiUrl: t.url, token: user.token, configDir: dir() } };
  }

  const egg = () => writeTree(dir(), { 'package.json': '{"name":"hello"}', 'server.js': 'require("http").createServer().listen(process.env.PORT);\n' });

  const describeRun = (r: CliResult) => `hatch exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

  /** Exit 0 and exactly one JSON document on stdout: anything else there and JSON.parse throws. */
  function oneDocument(r: CliResult): any {
    if (r.code !== 0) throw new Error(describeRun(r));
    expect(r.stdout).not.toMatch(/\x1b|\r/); // eslint-disable-line no-control-regex -- no colour codes in JSON
    expect(r.stdout.endsWith('\n')).toBe(true);
    return JSON.parse(r.stdout);
  }

  /** NDJSON: every line of stdout is one JSON object, nothing else. */
  function ndjson(stdout: string): any[] {
    const lines = stdout.split('\n');
    expect(lines.pop()).toBe('');
    return lines.map((l) => {
      const item = JSON.parse(l);
      expect(typeof item).toBe('object');
      return item;
    });
  }

  /** A failure with --json: the exit code, nothing on stdout, and stderr one line: `{"error": {…}}`. */
  function jsonError(r: CliResult, code: number): { code: string; message: string; field?: string } {
    if (r.code !== code) throw new Error(`expected exit ${code}; ${describeRun(r)}`);
    expect(r.stdout).toBe('');
    return lastLineError(r.stderr, true);
  }

  /** The error document on stderr's last line (the only line unless build lines came before it). */
  function lastLineError(stderr: string, only: boolean): { code: string; message: string; field?: string } {
    const lines = stderr.split('\n');
    expect(lines.pop()).toBe('');
    if (only) expect(lines).toHaveLength(1);
    const doc = JSON.parse(lines.at(-1)!);
    expect(Object.keys(doc)).toEqual(['error']);
    expect(doc.error).toEqual({ code: expect.any(String), message: expect.any(String), ...(doc.error.field ? { field: expect.any(String) } : {}) });
    return doc.error;
  }

  describe('exit codes', () => {
    it('no token at all exits 3 and says to `hatch login`; a refused token (HATCH_TOKEN, login, a stream) exits 3', async () => {
      const configDir = dir();
      const none = await hatch({ apiUrl: t.url, configDir }, ['whoami']);
      expect(none).toMatchObject({ code: 3, stdout: '' });
      expect(none.stderr).toBe('error: not logged in: run `hatch login`, or set HATCH_TOKEN to a token (UNAUTHENTICATED)\n');
      expect(jsonError(await hatch({ apiUrl: t.url, configDir }, ['apps', '--json']), 3)).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'not logged in: run `hatch login`, or set HATCH_TOKEN to a token',
      });

      const bad = { apiUrl: t.url, configDir, token: 'hatch_not-a-real-token' };
      const refused = await hatch(bad, ['whoami']);
      expect(refused.code).toBe(3);
      expect(refused.stderr).toMatch(/\(UNAUTHENTICATED\)\nhint: run `hatch login`, or set HATCH_TOKEN to a valid token\n$/);
      expect(jsonError(await hatch(bad, ['whoami', '--json']), 3).code).toBe('UNAUTHENTICATED');

      const login = await hatch({ apiUrl: t.url, configDir }, ['login', '--token', 'hatch_not-a-real-token']);
      expect(login.code).toBe(3);
      expect(login.stderr).toMatch(/refused the token; nothing was stored/);
      expect(existsSync(path.join(configDir, 'config.json'))).toBe(false);

      // Over graphql-ws (the close code 4401) and over the upload's REST 401 alike.
      const { user } = await session();
      const { slug } = await makeApp(t.url, user);
      expect((await hatch(bad, ['logs', 'dep_00000000000000000000000000', '-f'])).code).toBe(3);
      const upload = await hatch(bad, ['deploy', slug, '--dir', egg(), '--json']);
      expect(jsonError(upload, 3).code).toBe('UNAUTHENTICATED');
    });

    it('an unknown egg, deployment, cron or webhook exits 4 (GraphQL NOT_FOUND, REST 404, a stream’s NOT_FOUND)', async () => {
      const { user, env } = await session();
      const { slug } = await makeApp(t.url, user);
      const nope = unique('nope');
      const notFound: string[][] = [
        ['logs', 'dep_nope'],
        ['logs', 'dep_nope', '-f'],
        ['deploy', nope, '--no-source'],
        ['deploy', nope, '--dir', egg()], // the upload's 404
        ['deploy', nope, '--image', 'nginx:1.27', '--no-wait'],
        ['resources', nope],
        ['resources', 'set', nope, '256'],
        ['previews', nope],
        ['volume', slug], // the egg has none
        ['crons', nope],
        ['crons', 'runs', slug, 'cron_nope'],
        ['crons', 'delete', slug, 'cron_nope'],
        ['webhooks', 'delete', slug, 'wh_nope'],
        ['webhooks', 'test', slug, 'wh_nope'],
      ];
      for (const args of notFound) {
        const text = await hatch(env, args);
        expect([args, text.code]).toEqual([args, 4]);
        expect(text.stdout).toBe('');
        expect(text.stderr).toMatch(/not found \(NOT_FOUND\)\n$/);
        const asJson = jsonError(await hatch(env, [...args, '--json']), 4);
        expect([args, asJson.code]).toEqual([args, 'NOT_FOUND']);
      }
      expect(jsonError(await hatch(env, ['logs', 'dep_nope', '--json']), 4)).toEqual({ code: 'NOT_FOUND', message: 'Deployment "dep_nope" not found' });
    });

    it('a refusal, a forbidden change and an unreachable gateway exit 1; bad usage exits 2 and calls nothing', async () => {
      const { user, env } = await session();
      const { slug } = await makeApp(t.url, user);

      // The gateway refuses a value: exit 1, with the field it named.
      expect(jsonError(await hatch(env, ['apps', 'create', 'Not_A_Slug', '--json']), 1)).toEqual({
        code: 'BAD_USER_INPUT',
        message: expect.stringMatching(/^slug: /),
        field: 'slug',
      });
      expect(jsonError(await hatch(env, ['resources', 'set', slug, '99999', '--json']), 1)).toMatchObject({ code: 'LIMIT_EXCEEDED', field: 'memoryMb' });

      // 403: the token is good but the account may not; another login would not help.
      const collaborator = await makeUser(t.gateway);
      await gqlOk(t.url, user.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
      const forbidden = await hatch({ ...env, token: collaborator.token }, ['resources', 'set', slug, '128']);
      expect(forbidden.code).toBe(1);
      expect(forbidden.stderr).toMatch(/\(FORBIDDEN\)\n$/);
      expect(jsonError(await hatch({ ...env, token: collaborator.token }, ['resources', 'set', slug, '128', '--json']), 1).code).toBe('FORBIDDEN');

      const closed = `http://127.0.0.1:${await closedPort()}`;
      const down = await hatch({ ...env, apiUrl: closed }, ['apps']);
      expect(down).toMatchObject({ code: 1, stderr: `error: cannot reach ${closed}: ECONNREFUSED\n` });
      expect(jsonError(await hatch({ ...env, apiUrl: closed }, ['apps', '--json']), 1)).toEqual({
        code: 'UNREACHABLE',
        message: `cannot reach ${closed}: ECONNREFUSED`,
      });

      // Bad usage: checked before any call (the gateway is unreachable here), exit 2.
      for (const args of [['hatchlings'], ['deploy'], ['apps', '--colour'], ['deployments', '--status', 'sleeping'], ['deploy', slug, '--env', 'NOEQUALS']]) {
        const text = await hatch({ ...env, apiUrl: closed }, args);
        expect([args, text.code]).toEqual([args, 2]);
        expect(text.stderr).toMatch(/^error: /);
        expect([args, jsonError(await hatch({ ...env, apiUrl: closed }, [...args, '--json']), 2).code]).toEqual([args, 'USAGE']);
      }
      expect(jsonError(await hatch(env, ['deploy', '--json']), 2)).toEqual({ code: 'USAGE', message: 'missing <app>' });
    });

    it('a failed deployment and a failed webhook ping exit 1; with --json stdout still gets the document and stderr ends with the error', async () => {
      const { user, env } = await session();
      const { slug } = await makeApp(t.url, user);
      const failed = await hatch(env, ['deploy', slug, '--image', 'nginx:1.27', '--env', 'HATCHERY_SIMULATE=fail', '--json']);
      expect(failed.code).toBe(1);
      const d = JSON.parse(failed.stdout);
      expect(d).toMatchObject({ status: 'FAILED', app: { slug } });
      expect(lastLineError(failed.stderr, false)).toEqual({ code: 'DEPLOYMENT_FAILED', message: `deployment ${d.id}: build failed: HATCHERY_SIMULATE=fail` });

      receiver.reply('/exit-500', { status: 500 });
      const { webhook } = oneDocument(await hatch(env, ['webhooks', 'create', slug, receiver.url('/exit-500'), '--json']));
      const ping = await hatch(env, ['webhooks', 'test', slug, webhook.id, '--json']);
      expect(ping.code).toBe(1);
      expect(JSON.parse(ping.stdout)).toMatchObject({ status: 'FAILED', responseStatus: 500 });
      expect(lastLineError(ping.stderr, true)).toEqual({ code: 'PING_FAILED', message: `webhook ${webhook.id}: the endpoint answered 500` });
      const text = await hatch(env, ['webhooks', 'test', slug, webhook.id]);
      expect(text.code).toBe(1);
      expect(text.stderr).toBe('');
      expect(text.stdout).toMatch(/^status\s+failed$/m);
    });
  });

  describe('deploy --no-wait', () => {
    it('creates the deployment and returns at once: stdout is its id alone (with --json the deployment), exit 0; --dir, --no-source, --image', async () => {
      const { user, env } = await session();
      const { slug } = await makeApp(t.url, user);

      const uploaded = await hatch(env, ['deploy', slug, '--dir', egg(), '--no-wait', '--env', 'GREETING=hi']);
      if (uploaded.code !== 0) throw new Error(describeRun(uploaded));
      expect(uploaded.stdout).toMatch(/^dep_\w+\n$/);
      const id = uploaded.stdout.trim();
      const said = /^Uploaded 2 files, \d+ B \((src_\w+)\)\nDeploying (\S+): (dep_\w+); follow the build with `hatch logs (dep_\w+) -f --type build`\n$/.exec(
        uploaded.stderr,
      );
      expect(said?.slice(2)).toEqual([slug, id, id]);
      const source = { id: said![1] };
      expect((await gqlOk(t.url, user.token, DeploymentDocument, { id })).deployment).toMatchObject({ source: source.id, envKeys: ['GREETING'] });
      expect(await settle(t.url, user, id)).toBe('LIVE');

      // The mutation's answer, before any build line: still building.
      const again = oneDocument(await hatch(env, ['deploy', slug, '--no-source', '--no-wait', '--json']));
      expect(again).toMatchObject({ id: expect.stringMatching(/^dep_/), status: 'BUILDING', source: source.id, app: { slug } });
      expect(await settle(t.url, user, again.id)).toBe('LIVE');

      const image = await hatch(env, ['deploy', slug, '--image', 'nginx:1.27', '--no-wait', '--json']);
      expect(image.stderr).toBe('');
      expect(oneDocument(image)).toMatchObject({ status: 'BUILDING', image: 'nginx:1.27', source: null });

      // Waiting stays the default.
      const waited = oneDocument(await hatch(env, ['deploy', slug, '--no-source', '--json']));
      expect(waited).toMatchObject({ status: 'LIVE' });
      expect(jsonError(await hatch(env, ['deploy', slug, '--no-wait', '--no-source', '--image', 'x', '--json']), 2).code).toBe('USAGE');
    });
  });

  it('every command prints exactly one JSON document on stdout with --json (log lines: one per line)', async () => {
    const { user, env } = await session();
    const helpOut = (await hatch(env, ['--help'])).stdout;
    const commandsSection = helpOut.split('\ncommands:\n')[1].split('\n\n')[0];
    // `  crons create <app> <schedule> <command...>  schedule a command…`: the words before the arguments.
    const listed = commandsSection.split('\n').map((l) =>
      l
        .trim()
        .split(/\s{2,}/)[0]
        .split(' ')
        .filter((w) => !/^[<[]/.test(w))
        .join(' '),
    );
    expect(listed).toEqual(expect.arrayContaining(['login', 'apps create', 'deploy', 'logs', 'crons cancel', 'webhooks test']));
    const covered = new Set<string>();
    /** Runs a command with --json and parses its stdout as one document. */
    const run = async (args: string[], e: CliEnv = env) => {
      covered.add(listed.filter((c) => `${args.join(' ')} `.startsWith(`${c} `)).sort((a, b) => b.length - a.length)[0]);
      return oneDocument(await hatch(e, [...args, '--json']));
    };

    // Accounts.
    const configDir = dir();
    expect(await run(['login', '--token', user.token], { apiUrl: t.url, configDir })).toEqual({
      email: user.email,
      id: user.id,
      apiUrl: t.url,
      configFile: path.join(configDir, 'config.json'),
    });
    expect(await run(['whoami'], { apiUrl: t.url, configDir })).toEqual({
      id: user.id,
      email: user.email,
      createdAt: expect.any(String),
      apiUrl: t.url,
      tokenFrom: path.join(configDir, 'config.json'),
    });
    expect(await run(['whoami'])).toMatchObject({ id: user.id, tokenFrom: 'HATCH_TOKEN' });
    expect(await run(['logout'], { apiUrl: t.url, configDir })).toEqual({ removed: true });
    expect(await run(['logout'], { apiUrl: t.url, configDir })).toEqual({ removed: false });
    expect(await run(['energy'])).toMatchObject({ total: expect.any(Number), depleted: false });
    expect(await run(['checkout'])).toMatchObject({ checkoutUrl: expect.stringMatching(/^http/) });
    expect(oneDocument(await hatch(env, ['--version', '--json']))).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) });

    // Eggs.
    expect(await run(['apps'])).toEqual([]);
    const slug = unique('json');
    expect(await run(['apps', 'create', slug])).toMatchObject({ slug });
    expect(await run(['apps', 'list'])).toEqual([expect.objectContaining({ slug })]);
    expect(await run(['resources', slug])).toMatchObject({ slug, memoryMb: null });
    expect(await run(['resources', 'set', slug, '256'])).toMatchObject({ slug, memoryMb: 256 });
    expect(await run(['resources', 'replicas', slug, 'default'])).toMatchObject({ slug, replicas: null });
    expect(await run(['previews', slug])).toEqual([]);
    await gqlOk(t.url, user.token, ProvisionVolumeDocument, { app: slug, sizeMb: 300 });
    expect(await run(['volume', slug])).toMatchObject({ sizeMb: 300 });

    // Deployments and logs.
    const deployed = await run(['deploy', slug, '--dir', egg()]);
    expect(deployed).toMatchObject({ status: 'LIVE', app: { slug } });

    covered.add('logs');
    const lines = ndjson(oneLineOk(await hatch(env, ['logs', deployed.id, '--json'])));
    expect(lines.slice(0, 5).map((l) => l.type)).toEqual(['BUILD', 'BUILD', 'BUILD', 'BUILD', 'BUILD']);
    for (const l of lines) expect(Object.keys(l).sort()).toEqual(['message', 'seq', 'timestamp', 'type']);
    expect(ndjson(oneLineOk(await hatch(env, ['logs', deployed.id, '--tail', '2', '--json'])))).toEqual(lines.slice(-2));
    // -f: a build stream ends with the build; any other is followed until stopped.
    expect(ndjson(oneLineOk(await hatch(env, ['logs', deployed.id, '-f', '--type', 'build', '--json'])))).toEqual(lines.slice(0, 5));
    const follow = spawnHatch(env, ['logs', deployed.id, '-f', '--json']);
    await follow.waitFor((out) => out.split('\n').length > lines.length, 'the stored lines');
    const followed = await follow.stop();
    expect(ndjson(followed.stdout).slice(0, lines.length)).toEqual(lines);

    expect(await run(['deploy', slug, '--no-source', '--no-wait'])).toMatchObject({ status: 'BUILDING' });
    expect((await run(['deployments', '--app', slug])).map((d: { id: string }) => d.id)).toContain(deployed.id);

    // Crons.
    const cron = await run(['crons', 'create', slug, '0 * * * *', 'sleep', '600']);
    expect(cron).toMatchObject({ id: expect.stringMatching(/^cron_/), command: 'sleep 600' });
    expect(await run(['crons', slug])).toEqual([expect.objectContaining({ id: cron.id })]);
    expect(await run(['crons', 'list', slug])).toEqual([expect.objectContaining({ id: cron.id })]);
    sim.hold(slug);
    const { runCronNow: cronRun } = await gqlOk(t.url, user.token, RunCronNowDocument, { app: slug, id: cron.id });
    await sim.started(slug, 1);
    expect(await run(['crons', 'runs', slug, cron.id])).toEqual([expect.objectContaining({ id: cronRun.id, status: 'RUNNING' })]);
    expect(await run(['crons', 'cancel', slug, cron.id, cronRun.id])).toMatchObject({ id: cronRun.id, status: 'FAILED', failureReason: 'cancelled' });
    sim.release(slug);
    expect(await run(['crons', 'delete', slug, cron.id])).toEqual({ deleted: cron.id });

    // Webhooks.
    receiver.reply('/json-every', { status: 204 });
    const created = await run(['webhooks', 'create', slug, receiver.url('/json-every')]);
    expect(created).toMatchObject({ secret: expect.stringMatching(/^whsec_/), webhook: { id: expect.stringMatching(/^wh_/) } });
    expect(await run(['webhooks', 'test', slug, created.webhook.id])).toMatchObject({ status: 'SUCCEEDED', responseStatus: 204 });
    expect(await run(['webhooks', slug])).toEqual([expect.objectContaining({ id: created.webhook.id })]);
    expect(await run(['webhooks', 'list', slug])).toEqual([expect.objectContaining({ id: created.webhook.id })]);
    expect(await run(['webhooks', 'delete', slug, created.webhook.id])).toEqual({ deleted: created.webhook.id });

    // Log drains.
    const drain = await run(['drains', 'create', slug, 'https://drains.invalid/logs']);
    expect(drain).toMatchObject({ secret: expect.stringMatching(/^whsec_/), logDrain: { id: expect.any(String), url: 'https://drains.invalid/logs' } });
    expect(await run(['drains', slug])).toEqual([expect.objectContaining({ id: drain.logDrain.id })]);
    expect(await run(['drains', 'list', slug])).toEqual([expect.objectContaining({ id: drain.logDrain.id })]);
    expect(await run(['drains', 'delete', slug, drain.logDrain.id])).toEqual({ deleted: drain.logDrain.id });

    // Every command `hatch --help` lists was run above: a new command needs its --json here too.
    expect(listed.filter((c) => !covered.has(c))).toEqual([]);
  });

  /** Exit 0, nothing on stderr: the stdout of a command that printed only its lines. */
  function oneLineOk(r: CliResult): string {
    if (r.code !== 0) throw new Error(describeRun(r));
    expect(r.stderr).toBe('');
    return r.stdout;
  }
});
