import { randomBytes } from 'node:crypto';
import { cpSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { DeploymentDocument } from '../../src/client/generated';
import { bytes } from '../../src/cli/hatch/output';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser, unique } from '../support/factories';
import { helloEgg } from '../sources/helpers';
import { archiveEntries, CliEnv, CliResult, hatch, spawnHatch, stopAllClis, tempDir, TreeNode, writeTree } from './helpers';

jest.setTimeout(60_000);

interface SourceNode {
  id: string;
  sha256: string;
  sizeBytes: number;
}
const SOURCES = parse(/* GraphQL */ `
  query CliSources($app: String!) {
    sources(app: $app, first: 100) {
      nodes {
        id
        sha256
        sizeBytes
      }
    }
  }
`) as TypedDocumentNode<{ sources: { nodes: SourceNode[] } }, { app: string }>;

/** An egg's folder: what the ignore files leave is uploaded, the rest is not. */
const EGG: Record<string, TreeNode> = {
  'package.json': JSON.stringify({ name: 'hello', scripts: { start: 'node server.js' } }),
  'server.js': "require('http').createServer((_q, r) => r.end('hi')).listen(process.env.PORT);\n",
  'lib/util.js': 'module.exports = 1;\n',
  bin: { link: 'lib' },
  'npm-debug.log': 'ignored by .gitignore',
  '.env': 'SECRET=ignored by .hatchignore',
  'dist/app.js': 'ignored by .gitignore, re-included by .hatchignore',
  'web/.gitignore': 'cache/\n',
  'web/index.html': '<h1>hi</h1>',
  'web/cache/page.html': 'ignored by the nested .gitignore',
  '.git/HEAD': 'ref: refs/heads/main',
  '.gitignore': '*.log\ndist/\n',
  '.hatchignore': '.env\n!dist/\n',
};
const UPLOADED = [
  '.gitignore',
  '.hatchignore',
  'bin',
  'dist/',
  'dist/app.js',
  'lib/',
  'lib/util.js',
  'package.json',
  'server.js',
  'web/',
  'web/.gitignore',
  'web/index.html',
];

/** `hatch deploy` uploads the folder it is given (or the current one) and deploys that source. */
describe('hatch deploy uploads the egg’s folder (end to end against a running gateway)', () => {
  let t: TestGateway;
  let user: TestUser;
  const dirs: string[] = [];

  beforeAll(async () => {
    // A 1 MB upload limit for the 413; a short grace for the uploads the 429 test abandons.
    t = await startGateway({ HATCHERY_SOURCE_MAX_MB: '1', HATCHERY_SHUTDOWN_GRACE_MS: '1000' });
    user = await makeUser(t.gateway);
  });
  afterEach(() => stopAllClis());
  afterAll(async () => {
    await t.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  function dir(prefix = 'hatch-egg-'): string {
    const d = tempDir(prefix);
    dirs.push(d);
    return d;
  }

  /** A session whose CLI keeps its temporary files in a folder of its own, to see that none is left. */
  function session(extra: Partial<CliEnv> = {}): CliEnv & { tmp: string } {
    const tmp = dir('hatch-tmp-');
    return { apiUrl: t.url, token: user.token, configDir: dir('hatch-config-'), ...extra, extra: { TMPDIR: tmp }, tmp };
  }

  function ok(r: CliResult): CliResult {
    if (r.code !== 0) throw new Error(`hatch exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    expect(r.stdout + r.stderr).not.toMatch(/\x1b|\r/); // eslint-disable-line no-control-regex -- no terminal: no escape codes, no progress redraws
    return r;
  }

  /** Temporary archives the CLI left behind. */
  const leftovers = (tmp: string) => readdirSync(tmp).filter((n) => n.startsWith('hatch-'));
  const sources = async (slug: string) => (await gqlOk(t.url, user.token, SOURCES, { app: slug })).sources.nodes;
  const deployments = async (slug: string) =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments d JOIN apps a ON a.id = d.app_id WHERE a.slug = $1', [slug]))[0].n as number;
  const storedPaths = async (id: string) => (await archiveEntries((await t.gateway.services.sources.open(id)).stream)).map((e) => e.path);
  const deploymentId = (r: CliResult) => /Deploying \S+: (dep_\w+)/.exec(r.stdout + r.stderr)![1];

  it('uploads the folder (what .gitignore, nested .gitignore and .hatchignore leave), deploys that source and goes live', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const egg = writeTree(dir(), EGG);
    const env = session();
    const res = ok(await hatch(env, ['deploy', slug, '--dir', egg]));
    const [stored] = await sources(slug);
    const id = deploymentId(res);
    expect(res.stdout.split('\n')).toEqual([
      `Uploaded 9 files, ${bytes(stored.sizeBytes)} (${stored.id})`,
      `Deploying ${slug}: ${id}`,
      `==> Build started for ${slug} (${id})`,
      '==> Installing dependencies',
      '==> Compiling',
      '==> Creating image',
      '==> Build succeeded',
      expect.stringMatching(/^✔ live https:\/\//),
      '',
    ]);
    expect(res.stderr).toBe('');
    expect((await gqlOk(t.url, user.token, DeploymentDocument, { id })).deployment).toMatchObject({ status: 'LIVE', source: stored.id, image: null });
    // What the gateway stored is the folder minus what the ignore files exclude, and never .git.
    expect(await storedPaths(stored.id)).toEqual(UPLOADED);
    expect(leftovers(env.tmp)).toEqual([]); // the temporary archive is gone
  });

  it('the same folder again, also from its own folder without --dir or from a copy elsewhere, uploads the same source', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const egg = writeTree(dir(), EGG);
    const first = ok(await hatch(session(), ['deploy', slug, '--dir', egg]));
    const [stored] = await sources(slug);
    expect(first.stdout).toContain(`(${stored.id})\n`);

    const again = ok(await hatch(session({ cwd: egg }), ['deploy', slug]));
    expect(again.stdout.split('\n')[0]).toBe(`Uploaded 9 files, ${bytes(stored.sizeBytes)} (${stored.id}, already uploaded)`);
    const copy = dir();
    cpSync(egg, copy, { recursive: true, verbatimSymlinks: true });
    const fromCopy = ok(await hatch(session({ cwd: path.dirname(copy) }), ['deploy', slug, '--dir', path.basename(copy)]));
    expect(fromCopy.stdout).toContain(`(${stored.id}, already uploaded)`);
    expect((await sources(slug)).map((s) => s.id)).toEqual([stored.id]);
    expect((await gqlOk(t.url, user.token, DeploymentDocument, { id: deploymentId(fromCopy) })).deployment.source).toBe(stored.id);

    // Another file is another source.
    writeFileSync(path.join(egg, 'server.js'), '// changed\n');
    const changed = ok(await hatch(session(), ['deploy', slug, '--dir', egg]));
    const now = await sources(slug);
    expect(now).toHaveLength(2);
    expect(changed.stdout).toContain(`(${now[0].id})\n`);
    expect(now[0].id).not.toBe(stored.id);
  });

  it('--no-source uploads nothing: the deployment builds the egg’s newest source', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    ok(await hatch(session(), ['deploy', slug, '--dir', writeTree(dir(), EGG)]));
    const before = await sources(slug);
    const res = ok(await hatch(session({ cwd: writeTree(dir(), { 'other.js': 'never uploaded' }) }), ['deploy', slug, '--no-source']));
    expect(res.stdout).not.toMatch(/Uploaded/);
    expect(await sources(slug)).toEqual(before);
    expect((await gqlOk(t.url, user.token, DeploymentDocument, { id: deploymentId(res) })).deployment.source).toBe(before[0].id);
  });

  it('--image runs that image: nothing uploaded, the deployment records the image', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const res = ok(await hatch(session({ cwd: writeTree(dir(), EGG) }), ['deploy', slug, '--image', 'nginx:1.27']));
    expect(await sources(slug)).toEqual([]);
    expect((await gqlOk(t.url, user.token, DeploymentDocument, { id: deploymentId(res) })).deployment).toMatchObject({
      status: 'LIVE',
      image: 'nginx:1.27',
      source: null,
    });
  });

  it('--json prints the final deployment, with its source, on stdout; the build goes to stderr and no upload line anywhere', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const env = session();
    const res = ok(await hatch(env, ['deploy', slug, '--dir', writeTree(dir(), EGG), '--json']));
    const [stored] = await sources(slug);
    expect(JSON.parse(res.stdout)).toMatchObject({ status: 'LIVE', source: stored.id, image: null, app: { slug } });
    expect(res.stderr).toContain('==> Build succeeded');
    expect(res.stdout + res.stderr).not.toMatch(/Upload/);
    expect(leftovers(env.tmp)).toEqual([]);
  });

  it('refuses a symbolic link that leads out of the folder before uploading or deploying anything, naming it', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    const egg = writeTree(dir(), { ...EGG, 'lib/passwd': { link: '../../../../../../etc/passwd' } });
    const env = session();
    const res = await hatch(env, ['deploy', slug, '--dir', egg]);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      'error: "lib/passwd" is a symbolic link to "../../../../../../etc/passwd", outside the folder: only links that stay inside the folder can be uploaded; make it relative to a path inside, or add it to .hatchignore\n',
    );
    expect(res.stdout).toBe('');
    expect(await sources(slug)).toEqual([]);
    expect(await deployments(slug)).toBe(0);
    expect(leftovers(env.tmp)).toEqual([]);
  });

  it('shows the gateway’s refusal: over the size limit (413) exits 1, an unknown egg (404) 4, a refused token (401) 3; nothing deployed', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    // Random bytes do not compress: over the gateway's 1 MB.
    const big = writeTree(dir(), { 'a.js': 'a' });
    writeFileSync(path.join(big, 'blob.bin'), randomBytes(1024 * 1024 + 4096));
    const env = session();
    const tooBig = await hatch(env, ['deploy', slug, '--dir', big]);
    expect(tooBig.code).toBe(1);
    expect(tooBig.stderr).toBe('error: source: The upload is larger than 1 MB (HATCHERY_SOURCE_MAX_MB) (PAYLOAD_TOO_LARGE)\n');
    expect(await sources(slug)).toEqual([]);
    expect(await deployments(slug)).toBe(0);
    expect(leftovers(env.tmp)).toEqual([]);

    const nope = unique('nope');
    const unknown = await hatch(session(), ['deploy', nope, '--dir', writeTree(dir(), EGG)]);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toBe(`error: Egg "${nope}" not found (NOT_FOUND)\n`);

    const refused = await hatch(session({ token: 'hatch_not-a-token' }), ['deploy', slug, '--dir', writeTree(dir(), EGG)]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^error: .* \(UNAUTHENTICATED\)\nhint: run `hatch login`, or set HATCH_TOKEN to a valid token\n$/);
    expect(await sources(slug)).toEqual([]);
    expect(await deployments(slug)).toBe(0);
  });

  it('a gateway busy with uploads (429) is asked again after its Retry-After, saying so', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    // Four uploads that send a gzip header and then hold the body open: the gateway's four slots.
    const aborts = Array.from({ length: 4 }, () => new AbortController());
    const held = aborts.map((abort) => {
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent) return new Promise<void>(() => undefined);
          sent = true;
          controller.enqueue(helloEgg().subarray(0, 10));
        },
      });
      return fetch(`${t.url}/v1/apps/${slug}/sources`, {
        method: 'POST',
        headers: { 'content-type': 'application/gzip', authorization: `Bearer ${user.token}` },
        body,
        duplex: 'half',
        signal: abort.signal,
      }).catch(() => undefined);
    });
    const slots = t.gateway.services.sources as unknown as { uploading: number };
    for (let i = 0; slots.uploading < 4; i++) {
      if (i > 400) throw new Error('the four uploads never all started');
      await new Promise((r) => setTimeout(r, 10));
    }
    const cli = spawnHatch(session(), ['deploy', slug, '--dir', writeTree(dir(), EGG)]);
    await cli.waitFor((_out, err) => /trying again in/.test(err), 'the retry notice');
    expect(cli.stderr).toBe('hatch: This gateway is storing 4 uploads already; retry shortly; trying again in 1s\n');
    for (const abort of aborts) abort.abort();
    await Promise.all(held);
    const res = ok(await cli.exited);
    const [stored] = await sources(slug);
    expect(res.stdout.split('\n')[0]).toBe(`Uploaded 9 files, ${bytes(stored.sizeBytes)} (${stored.id})`);
  });

  it('a missing --dir, one that is a file, or --dir with --no-source or --image is bad usage (exit 2) and calls nothing', async () => {
    const env = { ...session(), apiUrl: 'http://127.0.0.1:1' };
    const file = path.join(writeTree(dir(), { 'a.js': 'a' }), 'a.js');
    for (const [args, message] of [
      [['--dir', '/no/such/egg'], 'error: --dir /no/such/egg: no such folder'],
      [['--dir', file], `error: --dir ${file} is not a folder`],
      [['--dir', '.', '--no-source'], 'error: --dir, --no-source and --image do not go together'],
      [['--image', 'nginx', '--dir', '.'], 'error: --dir, --no-source and --image do not go together'],
      [['--no-source', '--image', 'nginx'], 'error: --dir, --no-source and --image do not go together'],
    ] as Array<[string[], string]>) {
      const res = await hatch(env, ['deploy', 'some-egg', ...args]);
      expect([args, res.code]).toEqual([args, 2]);
      expect(res.stderr.startsWith(message)).toBe(true);
      expect(res.stderr).toMatch(/\nusage: hatch deploy <app> \[options\]\n$/);
    }
    expect(leftovers(env.tmp)).toEqual([]);
  });

  it('`hatch deploy --help` says what is packed and names the options', async () => {
    const res = ok(await hatch(session(), ['deploy', '--help']));
    expect(res.stdout).toMatch(/--dir <path>\s+the folder to upload \(default: the current one\)/);
    expect(res.stdout).toMatch(/--no-source\s+upload nothing/);
    expect(res.stdout).toMatch(/--image <ref>\s+run this image/);
    expect(res.stdout).toMatch(/\.gitignore files \(root and nested, as git reads them\) and a \.hatchignore/);
  });
});
