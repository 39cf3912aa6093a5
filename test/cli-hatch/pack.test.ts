import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { FIXED_MTIME, listEntries, PackError, packToTempFile } from '../../src/cli/hatch/pack';
import { ArchiveCheck } from '../../src/modules/sources/archive';
import { archiveEntries, tempDir, TreeNode, writeTree } from './helpers';

/** pack.ts: which paths `hatch deploy` uploads, and the archive it makes of them (read back with tar's Parser). */
describe('packing a folder for upload', () => {
  const dirs: string[] = [];
  // Temporary archives go to a folder of this test's, so that it can see none is left behind.
  const tmp = tempDir('hatch-pack-tmp-');
  const leftovers = () => readdirSync(tmp);
  const packToTemp = (root: string) => packToTempFile(root, undefined, tmp);
  afterAll(() => {
    for (const d of [...dirs, tmp]) rmSync(d, { recursive: true, force: true });
  });
  const folder = (tree: Record<string, TreeNode>) => {
    const d = tempDir('hatch-pack-');
    dirs.push(d);
    return writeTree(d, tree);
  };

  /** Packs `root` and reads the archive back; the temporary file is gone afterwards. */
  async function pack(root: string) {
    const packed = await packToTemp(root);
    const bytes = readFileSync(packed.file);
    expect(bytes.length).toBe(packed.bytes);
    expect(path.dirname(path.dirname(packed.file))).toBe(tmp);
    packed.remove();
    expect(existsSync(path.dirname(packed.file))).toBe(false);
    expect(leftovers()).toEqual([]);
    return { bytes, entries: await archiveEntries(bytes), listed: packed.entries };
  }

  const APP: Record<string, TreeNode> = {
    'package.json': '{"name":"app"}',
    'server.js': 'console.log(1)\n',
    'debug.log': 'root log',
    'secret.txt': 'top secret',
    'lib/secret.txt': 'not anchored: kept',
    'lib/util.js': 'module.exports = 1\n',
    'lib/trace.log': 'nested log',
    'dist/app.js': 'built',
    'dist/app.js.map': 'map',
    'dist/deep/more.js': 'built too',
    'coverage/index.html': 'report',
    'sub/.gitignore': 'local.json\n!keep.log\n',
    'sub/local.json': '{}',
    'sub/keep.log': 'kept by the nested !',
    'sub/other.log': 'still ignored by the root *.log',
    'sub/deeper/local.json': 'the nested file applies below its folder too',
    'other/local.json': 'outside sub/: kept',
    'node_modules/dep/index.js': 'no ignore file names node_modules: kept',
    '.git/HEAD': 'ref: refs/heads/main',
    '.git/objects/ab/cdef': 'object',
    'vendor/.git': 'gitdir: ../.git/modules/vendor',
    'vendor/lib.js': 'vendored',
    'notes/todo.md': 'excluded by .hatchignore',
    'empty/': { dir: true },
    '.gitignore': '# build output\n*.log\n/secret.txt\ndist/\ncoverage/\n',
    '.hatchignore': '!dist/\ndist/*.map\nnotes/\n',
  };

  it('packs what the ignore files leave: .gitignore at the root and nested (relative to its folder), then .hatchignore, which can re-include; never .git', async () => {
    const { entries, listed } = await pack(folder(APP));
    expect(entries.map((e) => `${e.type} ${e.path}`)).toEqual([
      'File .gitignore',
      'File .hatchignore',
      'Directory dist/',
      'File dist/app.js',
      'Directory dist/deep/',
      'File dist/deep/more.js',
      'Directory empty/',
      'Directory lib/',
      'File lib/secret.txt',
      'File lib/util.js',
      'Directory node_modules/',
      'Directory node_modules/dep/',
      'File node_modules/dep/index.js',
      'Directory other/',
      'File other/local.json',
      'File package.json',
      'File server.js',
      'Directory sub/',
      'File sub/.gitignore',
      'Directory sub/deeper/',
      'File sub/keep.log',
      'Directory vendor/',
      'File vendor/lib.js',
    ]);
    expect(listed.map((e) => e.path)).toEqual(entries.map((e) => e.path.replace(/\/$/, '')));
    expect(entries.find((e) => e.path === 'server.js')!.body).toBe('console.log(1)\n');
  });

  it('a .hatchignore can exclude what no .gitignore does, and a folder excluded by a .gitignore stays excluded unless re-included itself', async () => {
    const root = folder({
      'a.js': 'a',
      'build/out.js': 'out',
      'build/keep.js': 'keep',
      'tmp/x': 'x',
      '.gitignore': 'build/\n',
      // Re-including a file in an excluded folder does nothing (as in git); excluding more works.
      '.hatchignore': '!build/keep.js\ntmp\n.hatchignore\n',
    });
    expect((await pack(root)).entries.map((e) => e.path)).toEqual(['.gitignore', 'a.js']);
  });

  it('re-including a folder whose name holds pattern characters re-includes that folder only, and the patterns still apply inside it', async () => {
    const root = folder({
      'we[ir]d *#!/app.js': 'kept',
      'we[ir]d *#!/debug.log': 'still *.log',
      'weird/app.js': 'not re-included',
      '.gitignore': '*.log\nwe*/\n',
      '.hatchignore': '!we\\[ir\\]d*/\n',
    });
    expect((await pack(root)).entries.map((e) => e.path)).toEqual(['.gitignore', '.hatchignore', 'we[ir]d *#!/', 'we[ir]d *#!/app.js']);
  });

  it('the same folder packs to the same bytes, wherever it is and whatever its times, owner bits and umask said; other content does not', async () => {
    const tree = { ...APP, 'bin/run': { body: '#!/bin/sh\n', mode: 0o755 }, 'link-to-lib': { link: 'lib' } } as Record<string, TreeNode>;
    const a = folder(tree);
    const first = await pack(a);
    expect((await pack(a)).bytes.equals(first.bytes)).toBe(true);

    const b = tempDir('hatch-pack-copy-');
    dirs.push(b);
    cpSync(a, b, { recursive: true, verbatimSymlinks: true });
    utimesSync(path.join(b, 'server.js'), new Date('2030-01-01'), new Date('2030-01-01'));
    utimesSync(path.join(b, 'lib'), new Date('2001-01-01'), new Date('2001-01-01'));
    chmodSync(path.join(b, 'package.json'), 0o664); // a group-writable umask
    expect((await pack(b)).bytes.equals(first.bytes)).toBe(true);

    writeFileSync(path.join(b, 'server.js'), 'console.log(2)\n');
    expect((await pack(b)).bytes.equals(first.bytes)).toBe(false);
  });

  it('writes portable headers: no owner or group, one fixed mtime for files and links, none for folders, modes normalised with the executable bit kept', async () => {
    const { bytes, entries } = await pack(
      folder({ 'bin/run': { body: '#!/bin/sh\n', mode: 0o775 }, 'a.txt': { body: 'a', mode: 0o600 }, l: { link: 'a.txt' } }),
    );
    // gzip header: no mtime, OS "unknown" (255), so no trace of this machine.
    expect([...bytes.subarray(0, 10)]).toEqual([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    const by = new Map(entries.map((e) => [e.path, e]));
    expect(by.get('bin/run')).toMatchObject({ type: 'File', mode: 0o755, mtime: FIXED_MTIME });
    expect(by.get('a.txt')).toMatchObject({ type: 'File', mode: 0o600, mtime: FIXED_MTIME });
    expect(by.get('bin/')).toMatchObject({ type: 'Directory', mode: 0o755, mtime: undefined });
    expect(by.get('l')).toMatchObject({ type: 'SymbolicLink', linkpath: 'a.txt', mtime: FIXED_MTIME });
    for (const e of entries) expect([e.path, e.uid, e.gid, e.uname ?? '', e.gname ?? '']).toEqual([e.path, undefined, undefined, '', '']);
  });

  it('keeps symbolic links that stay inside the folder as links (also dangling ones), and the gateway’s own check accepts the archive', async () => {
    const { bytes, entries } = await pack(
      folder({
        'lib/util.js': 'u',
        current: { link: 'lib' },
        'lib/up': { link: '../lib/util.js' },
        'lib/self': { link: '.' },
        later: { link: 'not-yet-built/out.js' },
        via: { link: 'current/util.js' },
      }),
    );
    expect(entries.filter((e) => e.type === 'SymbolicLink').map((e) => [e.path, e.linkpath])).toEqual([
      ['current', 'lib'],
      ['later', 'not-yet-built/out.js'],
      ['lib/self', '.'],
      ['lib/up', '../lib/util.js'],
      ['via', 'current/util.js'],
    ]);
    // Nothing inside a linked folder is packed: the link is the entry.
    expect(entries.map((e) => e.path)).not.toContain('current/util.js');
    const check = new ArchiveCheck(10 * 1024 * 1024);
    await check.write(bytes);
    await check.end();
    expect(check.refusal).toBeNull();
    check.destroy();
  });

  it.each<[string, Record<string, TreeNode>, RegExp]>([
    ['an absolute link', { 'a.js': 'a', etc: { link: '/etc' } }, /"etc" is a symbolic link to an absolute path \("\/etc"\)/],
    [
      'a link out of the folder',
      { 'a.js': 'a', 'lib/up': { link: '../../outside' } },
      /"lib\/up" is a symbolic link to "\.\.\/\.\.\/outside", outside the folder/,
    ],
    [
      'a link through another link out of the folder',
      { 'a.js': 'a', 'z/out': { link: '/etc' }, y: { link: 'z/out/passwd' }, '.hatchignore': 'z/\n' },
      /"y" is a symbolic link to "z\/out\/passwd", which leads outside/,
    ],
    [
      'a dangling link through another link out of the folder',
      { 'a.js': 'a', 'z/out': { link: '/' }, y: { link: 'z/out/no/such' }, '.hatchignore': 'z/\n' },
      /"y" is a symbolic link to "z\/out\/no\/such", which leads outside/,
    ],
    ['a loop of links', { 'a.js': 'a', p: { link: 'q' }, q: { link: 'p' } }, /"p" is a symbolic link in a loop/],
  ])('refuses %s, naming it', async (_what, tree, message) => {
    const root = folder(tree);
    await expect(packToTemp(root)).rejects.toThrow(PackError);
    await expect(packToTemp(root)).rejects.toThrow(message);
    await expect(packToTemp(root)).rejects.toThrow(/only links that stay inside the folder can be uploaded/);
    // Refused while listing: no temporary archive was started.
    expect(leftovers()).toEqual([]);
  });

  it('an unsafe link the ignore files exclude is not looked at', async () => {
    const root = folder({ 'a.js': 'a', 'cache/etc': { link: '/etc' }, home: { link: '../..' }, '.gitignore': 'cache/\n', '.hatchignore': 'home\n' });
    expect((await pack(root)).entries.map((e) => e.path)).toEqual(['.gitignore', '.hatchignore', 'a.js']);
  });

  it('refuses a socket, naming it and pointing at .hatchignore', async () => {
    const root = folder({ 'a.js': 'a' });
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, 'dev.sock'), resolve));
    try {
      await expect(packToTemp(root)).rejects.toThrow(/"dev\.sock" is a socket; a source may hold only files, folders and links: add it to \.hatchignore/);
      writeTree(root, { '.hatchignore': 'dev.sock\n' });
      expect((await pack(root)).entries.map((e) => e.path)).toEqual(['.hatchignore', 'a.js']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a folder with nothing to upload once the ignore files are applied', async () => {
    await expect(packToTemp(folder({ 'a.log': 'x', 'logs/': { dir: true }, '.hatchignore': '*\n!logs/\n' }))).rejects.toThrow(
      /nothing to upload: .* holds no files once \.gitignore and \.hatchignore are applied/,
    );
  });

  /**
   * The .gitignore rules as git itself applies them: random trees with random .gitignore files at
   * random depths, compared with `git ls-files --others --exclude-standard` in a fresh repository.
   */
  it('excludes exactly the files git excludes, for random trees and .gitignore files', async () => {
    const GIT = '/usr/bin/git';
    if (!existsSync(GIT)) throw new Error(`${GIT} is needed to compare with git`);
    const home = tempDir('hatch-pack-git-home-');
    dirs.push(home);
    // Nothing of this machine's git configuration (global excludes, templates) may take part.
    const gitEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const git = (cwd: string, args: string[]) => {
      const res = spawnSync(GIT, args, { cwd, env: gitEnv, encoding: 'utf8' });
      if (res.status !== 0) throw new Error(`git ${args.join(' ')}: ${res.stderr}`);
      return res.stdout;
    };
    const names = ['a', 'b', 'build', 'dist', 'x.log', 'keep.log', 'c.js'];
    const patterns = [
      '*.log',
      '!keep.log',
      'build/',
      '!build/',
      'build',
      '/a',
      'a/',
      'b',
      '!b',
      'a/b',
      '!a/b',
      '/dist/*',
      'dist/**',
      '!dist/',
      '!dist/c.js',
      '**/x.log',
      '*/c.js',
      'x.log/',
      '!*.js',
      'b/**/c.js',
      '**/dist',
      '!**/keep.log',
      'a/**/build',
      '#b',
      '\\!b',
    ];
    // Folders where files go, and the fewer where .gitignore files go, so that a deeper file often
    // re-includes what a shallower one excludes (the case `ignore` alone gets wrong).
    const fileDirs = ['', 'a', 'b', 'build', 'dist', 'a/b', 'a/build', 'a/dist', 'a/b/build', 'a/b/dist', 'dist/a', 'build/dist'];
    const ignoreDirs = ['', '', 'a', 'a/b', 'dist'];
    const treeArb = fc.record({
      files: fc.uniqueArray(
        fc.tuple(fc.constantFrom(...fileDirs), fc.constantFrom(...names)).map(([d, n]) => (d ? `${d}/${n}` : n)),
        { minLength: 1, maxLength: 24 },
      ),
      ignores: fc.array(fc.tuple(fc.constantFrom(...ignoreDirs), fc.array(fc.constantFrom(...patterns), { minLength: 1, maxLength: 5 })), {
        maxLength: 4,
      }),
    });
    type Case = { files: string[]; ignores: Array<[string, string[]]> };
    // Always tried: a folder excluded above and re-included below, with patterns that still
    // apply inside it (`*.log`) and ones that do not (`build/` names the folder, not its files).
    const examples: Array<[Case]> = [
      [
        {
          files: ['a/build/c.js', 'a/build/x.log', 'build/c.js'],
          ignores: [
            ['', ['build/', '*.log']],
            ['a', ['!build/']],
          ],
        },
      ],
      [
        {
          files: ['a/b/dist/c.js', 'a/b/dist/keep.log', 'a/b/dist/x.log'],
          ignores: [
            ['', ['dist/**', '*.log']],
            ['a', ['!dist/', '!keep.log']],
          ],
        },
      ],
      [
        {
          files: ['a/build/dist/c.js', 'a/b/build/a'],
          ignores: [
            ['', ['build']],
            ['a', ['!build', 'a/b']],
            ['a/b', ['!build/']],
          ],
        },
      ],
      [
        {
          files: ['a/b/dist/c.js', 'a/b/dist/keep.log'],
          ignores: [
            ['', ['**/dist', '!keep.log']],
            ['a/b', ['!dist/']],
          ],
        },
      ],
    ];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(treeArb, async ({ files, ignores }: Case) => {
        const root = path.join(home, `case-${run++}`);
        // A name used both as a file and as a folder: the folder wins.
        const tree: Record<string, TreeNode> = {};
        for (const f of files) if (!files.some((o) => o.startsWith(`${f}/`))) tree[f] = `content of ${f}`;
        for (const [d, lines] of ignores) tree[d ? `${d}/.gitignore` : '.gitignore'] = lines.join('\n') + '\n';
        for (const p of Object.keys(tree)) if (Object.keys(tree).some((o) => o.startsWith(`${p}/`))) delete tree[p];
        writeTree(root, tree);
        git(root, ['init', '-q', '--template=']);
        const byGit = git(root, ['ls-files', '-z', '--others', '--exclude-standard']).split('\0').filter(Boolean).sort();
        const byUs = (await listEntries(root))
          .filter((e) => e.type !== 'directory')
          .map((e) => e.path)
          .sort();
        rmSync(root, { recursive: true, force: true });
        expect({ tree, files: byUs }).toEqual({ tree, files: byGit });
      }),
      { numRuns: 400, examples },
    );
  }, 120_000);
});
