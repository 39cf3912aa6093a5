import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * `npm run check` runs scripts/architecture.ts: the import rules of .dependency-cruiser.cjs and no
 * circle between folders. Each rule is shown to fail on a tree with one planted violation, and
 * the repository itself to pass.
 */
const repo = path.resolve(__dirname, '..', '..');

function check(root?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', './scripts/register.js', path.join(repo, 'scripts', 'architecture.ts'), ...(root ? [root] : [])],
      { cwd: repo, encoding: 'utf8', timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

/**
 * A tree with these files (path → its imports: files of the tree, or packages by name), every
 * file exporting one constant. Its package.json declares graphql, and fast-check as a dev
 * dependency; node_modules is this repository's.
 */
function plant(files: Record<string, string[]>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'hatchery-arch-'));
  writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'node20', moduleResolution: 'node16', strict: true } }));
  writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'planted', dependencies: { graphql: '*' }, devDependencies: { 'fast-check': '*' } }));
  symlinkSync(path.join(repo, 'node_modules'), path.join(root, 'node_modules'));
  for (const [file, imports] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    const lines = imports.map((to, i) => {
      if (!to.startsWith('src/')) return `import * as x${i} from '${to}';`;
      let spec = path.relative(path.dirname(file), to).replace(/\.ts$/, '');
      if (!spec.startsWith('.')) spec = `./${spec}`;
      return `import { x as x${i} } from '${spec}';`;
    });
    writeFileSync(path.join(root, file), `${lines.join('\n')}\nexport const x = [${imports.map((_, i) => `x${i}`).join(', ')}];\n`);
  }
  return root;
}

/** A small tree that keeps every rule. */
const CLEAN: Record<string, string[]> = {
  'src/errors.ts': [],
  'src/db/paging.ts': ['src/errors.ts', 'graphql'],
  'src/bus/pubsub.ts': ['src/errors.ts'],
  'src/modules/apps/app.entity.ts': [],
  'src/modules/apps/apps.service.ts': ['src/modules/apps/app.entity.ts', 'src/db/paging.ts', 'src/bus/pubsub.ts'],
  'src/graphql/context.ts': ['src/services.ts'],
  'src/modules/apps/apps.resolver.ts': ['src/graphql/context.ts', 'src/modules/apps/apps.service.ts'],
  'src/modules/index.ts': ['src/modules/apps/apps.resolver.ts'],
  'src/graphql/schema.ts': ['src/modules/index.ts'],
  'src/services.ts': ['src/modules/apps/apps.service.ts'],
  'src/http/problems.ts': ['src/errors.ts'],
  'src/rest/adapter.ts': ['src/http/problems.ts', 'src/graphql/context.ts'],
  'src/http/server.ts': ['src/http/problems.ts', 'src/graphql/schema.ts'],
  'src/app.ts': ['src/http/server.ts', 'src/rest/adapter.ts', 'src/services.ts'],
};

describe('the import rules (npm run check)', () => {
  const roots: string[] = [];
  afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));
  const run = (extra: Record<string, string[]>) => {
    const root = plant({ ...CLEAN, ...extra });
    roots.push(root);
    return check(root);
  };

  it('the repository keeps them', async () => {
    const res = await check();
    expect(res).toMatchObject({ code: 0 });
    expect(res.out).toMatch(/no violations/);
  });

  it('a tree that keeps them passes', async () => {
    expect(await run({})).toMatchObject({ code: 0 });
  });

  it.each([
    ['a file circle', { 'src/db/paging.ts': ['src/db/rows.ts'], 'src/db/rows.ts': ['src/db/paging.ts'] }, /no-circular: src\/db\//],
    [
      'a service importing graphql/',
      { 'src/modules/apps/apps.service.ts': ['src/graphql/context.ts'] },
      /domain-without-graphql: src\/modules\/apps\/apps\.service\.ts → src\/graphql\/context\.ts/,
    ],
    [
      'a service importing http/',
      { 'src/modules/apps/apps.service.ts': ['src/http/problems.ts'] },
      /domain-without-transports: src\/modules\/apps\/apps\.service\.ts → src\/http\/problems\.ts/,
    ],
    [
      'an entity importing a resolver',
      { 'src/modules/apps/app.entity.ts': ['src/modules/apps/apps.resolver.ts'] },
      /domain-without-the-face: src\/modules\/apps\/app\.entity\.ts/,
    ],
    ['db/ importing a domain', { 'src/db/paging.ts': ['src/modules/apps/app.entity.ts'] }, /infrastructure-below-domains: src\/db\/paging\.ts/],
    [
      'graphql/ importing rest/',
      { 'src/graphql/schema.ts': ['src/modules/index.ts', 'src/rest/adapter.ts'] },
      /graphql-below-transports: src\/graphql\/schema\.ts/,
    ],
    ['a leaf importing a folder', { 'src/errors.ts': ['src/db/paging.ts'] }, /leaves-stay-leaves: src\/errors\.ts/],
    ['a package nobody declared', { 'src/db/paging.ts': ['src/errors.ts', 'ws'] }, /declared-packages: src\/db\/paging\.ts → .*node_modules\/ws\//],
    [
      'a dev dependency imported at run time',
      { 'src/db/paging.ts': ['src/errors.ts', 'fast-check'] },
      /no-dev-dependencies-at-run-time: src\/db\/paging\.ts → .*node_modules\/fast-check\//,
    ],
    [
      'two folders importing each other (no file circle)',
      { 'src/http/server.ts': ['src/http/problems.ts', 'src/graphql/schema.ts', 'src/rest/adapter.ts'] },
      /folders import each other: http, rest/,
    ],
  ] as Array<[string, Record<string, string[]>, RegExp]>)('%s fails the check, naming it', async (_what, extra, named) => {
    const res = await run(extra);
    expect(res.code).toBe(1);
    expect(res.out).toMatch(named);
  });
});
