/**
 * What `hatch deploy` uploads: a folder packed as a .tar.gz, minus what its ignore files exclude.
 *
 * Which paths: everything under the folder except `.git`, what the folder's `.gitignore` files
 * exclude (the root one and nested ones, each relative to its own folder, a deeper one winning
 * over a shallower one, as git reads them) and what a `.hatchignore` at the root excludes. The
 * `.hatchignore` has the same syntax and is read last, so it wins: it can exclude more, and
 * re-include with `!` what a `.gitignore` excludes (`!dist/`). As in git, a folder that is
 * excluded is not looked into, so nothing inside it can be re-included; nothing else (not even
 * `node_modules`) is skipped unless an ignore file says so.
 *
 * Symbolic links are packed as links, not followed, and only when they stay inside the folder
 * (relative, and still inside once every link on the way is followed): the gateway refuses an
 * archive with any other, so packing stops naming it. So does a socket, FIFO or device.
 *
 * The archive is portable and reproducible: paths in a fixed order, no owner, group or
 * timestamps of this machine (files get one fixed mtime, directories none), modes normalised,
 * and a gzip header without the OS. The same folder packs to the same bytes, which the gateway
 * stores once (the same source id).
 */
import { createWriteStream, Dirent, promises as fs, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import ignore, { Ignore } from 'ignore';
import { Pack } from 'tar';

/** The folder cannot be packed (an unsafe link, a special file, nothing to upload). */
export class PackError extends Error {}

export interface PackedEntry {
  /** Relative to the folder, with `/` separators. */
  path: string;
  type: 'file' | 'directory' | 'symlink';
}

/** The mtime every file and link gets (npm pack's, for the same reason). */
export const FIXED_MTIME = new Date('1985-10-26T08:15:00.000Z');

/** Ignore files match case-insensitively where file systems usually are (as git's core.ignorecase). */
const IGNORE_CASE = process.platform === 'darwin' || process.platform === 'win32';

/** A pattern matching exactly the folder `rel` (relative, `/`-separated), whatever its name holds. */
const literalFolder = (rel: string) => `/${rel.replace(/[\\*?[\]!# ]/g, '\\$&')}/`;

/** The patterns of one ignore file. */
class IgnoreFile {
  private readonly whole: Ignore;
  /** Per folder: the file's patterns plus ones re-including that folder and those above it. */
  private readonly reopened = new Map<string, Ignore>();

  constructor(
    /** The folder its patterns are relative to, relative to the root ('' for the root). */
    readonly base: string,
    private readonly text: string,
  ) {
    this.whole = ignore({ ignorecase: IGNORE_CASE }).add(text);
  }

  /** The path relative to this file's folder, or null when the file does not apply to it. */
  relative(rel: string): string | null {
    if (this.base === '') return rel;
    return rel.startsWith(this.base + '/') ? rel.slice(this.base.length + 1) : null;
  }

  /**
   * What this file says about `rel` (relative to its folder) itself: the last pattern matching it
   * decides, `exclude` or `include` (a `!` pattern); null when none matches. Only asked about
   * paths whose folders are included overall.
   */
  verdict(rel: string, isDir: boolean): 'exclude' | 'include' | null {
    const probe = isDir ? `${rel}/` : rel;
    let r = this.whole.test(probe);
    const parent = parentOf(rel);
    if (r.ignored && parent !== null && this.whole.test(`${parent}/`).ignored) {
      // This file excludes a folder above `rel` that a later file re-included (`!dist/` in
      // .hatchignore): `ignore` then answers for that folder, where git asks which pattern
      // matches `rel` itself. So ask again with every folder above re-included last: patterns
      // naming exactly those folders cannot match `rel`, so what decides is this file's own.
      let reopened = this.reopened.get(parent);
      if (!reopened) {
        const folders = parent.split('/').map((_, i, parts) => literalFolder(parts.slice(0, i + 1).join('/')));
        reopened = ignore({ ignorecase: IGNORE_CASE })
          .add(this.text)
          .add(folders.map((f) => `!${f}`));
        this.reopened.set(parent, reopened);
      }
      r = reopened.test(probe);
    }
    return r.ignored ? 'exclude' : r.unignored ? 'include' : null;
  }
}

const parentOf = (rel: string): string | null => (rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : null);

/** Whether the ignore files exclude `rel`: the last file with a verdict decides (.hatchignore last). */
function excluded(files: IgnoreFile[], rel: string, isDir: boolean): boolean {
  for (let i = files.length - 1; i >= 0; i--) {
    const local = files[i].relative(rel);
    if (local === null) continue;
    const v = files[i].verdict(local, isDir);
    if (v) return v === 'exclude';
  }
  return false;
}

async function readIgnoreFile(file: string, base: string): Promise<IgnoreFile | null> {
  try {
    // Only a regular file counts, as in git (which does not follow an in-tree .gitignore link).
    if (!(await fs.lstat(file)).isFile()) return null;
    return new IgnoreFile(base, await fs.readFile(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

const quote = (p: string) => JSON.stringify(p);
const byName = (a: Dirent, b: Dirent) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function kindOf(d: Dirent): string {
  if (d.isSocket()) return 'a socket';
  if (d.isFIFO()) return 'a FIFO';
  if (d.isCharacterDevice()) return 'a character device';
  if (d.isBlockDevice()) return 'a block device';
  return 'not a file, folder or link';
}

const isInside = (root: string, p: string) => {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** Refuses a symbolic link the gateway would refuse: absolute, or leading outside the folder. */
async function checkLink(root: string, realRoot: string, rel: string): Promise<void> {
  const abs = path.join(root, rel);
  const target = await fs.readlink(abs);
  const hint = 'only links that stay inside the folder can be uploaded; make it relative to a path inside, or add it to .hatchignore';
  if (path.posix.isAbsolute(target) || path.win32.isAbsolute(target)) {
    throw new PackError(`${quote(rel)} is a symbolic link to an absolute path (${quote(target)}): ${hint}`);
  }
  const lexical = path.posix.normalize(path.posix.join(path.posix.dirname(rel), target.replace(/\\/g, '/')));
  if (lexical === '..' || lexical.startsWith('../')) throw new PackError(`${quote(rel)} is a symbolic link to ${quote(target)}, outside the folder: ${hint}`);
  // Followed on disk, every link on the way: a dangling link is judged by the deepest folder on
  // its way that exists (`out/x` where `out` links outside is outside, whether or not x exists).
  let at = path.resolve(path.dirname(abs), target);
  let real: string | null = null;
  while (real === null) {
    try {
      real = await fs.realpath(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw new PackError(`${quote(rel)} is a symbolic link in a loop: ${hint}`);
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || path.dirname(at) === at) throw err;
      at = path.dirname(at);
    }
  }
  if (!isInside(realRoot, real)) throw new PackError(`${quote(rel)} is a symbolic link to ${quote(target)}, which leads outside the folder: ${hint}`);
}

/**
 * The entries of `root` to upload, in the order they are packed: each folder's entries sorted by
 * name, a folder before what is in it.
 */
export async function listEntries(root: string): Promise<PackedEntry[]> {
  const realRoot = await fs.realpath(root);
  const hatchignore = await readIgnoreFile(path.join(root, '.hatchignore'), '');
  const out: PackedEntry[] = [];
  const visit = async (dir: string, gitignores: IgnoreFile[]): Promise<void> => {
    const own = await readIgnoreFile(path.join(root, dir, '.gitignore'), dir);
    const inherited = own ? [...gitignores, own] : gitignores;
    const files = hatchignore ? [...inherited, hatchignore] : inherited;
    const dirents = (await fs.readdir(path.join(root, dir), { withFileTypes: true })).sort(byName);
    for (const d of dirents) {
      if (d.name === '.git') continue;
      const rel = dir === '' ? d.name : `${dir}/${d.name}`;
      const isDir = d.isDirectory();
      if (excluded(files, rel, isDir)) continue;
      if (isDir) {
        out.push({ path: rel, type: 'directory' });
        await visit(rel, inherited);
      } else if (d.isFile()) {
        out.push({ path: rel, type: 'file' });
      } else if (d.isSymbolicLink()) {
        await checkLink(root, realRoot, rel);
        out.push({ path: rel, type: 'symlink' });
      } else {
        throw new PackError(`${quote(rel)} is ${kindOf(d)}; a source may hold only files, folders and links: add it to .hatchignore`);
      }
    }
  };
  await visit('', []);
  return out;
}

/** The .tar.gz of `entries` of `root`, as a stream. */
export function packEntries(root: string, entries: PackedEntry[]): Pack {
  // Pack itself, not tar's create(): create() reads a path starting with `@` as an archive to copy.
  const pack = new Pack({ cwd: root, gzip: true, portable: true, mtime: FIXED_MTIME, noDirRecurse: true, follow: false, strict: true });
  for (const e of entries) pack.add(e.path);
  pack.end();
  return pack;
}

export interface PackedFolder {
  /** The .tar.gz, in a temporary folder of its own. */
  file: string;
  bytes: number;
  entries: PackedEntry[];
  /** Removes the temporary file (also done when the process exits). */
  remove(): void;
}

/**
 * Packs `root` into a temporary .tar.gz (written as it is packed, never whole in memory), so its
 * size is known before the upload starts. `onEntries` hears how many entries will be packed;
 * `tmpDir` is where the temporary folder goes.
 */
export async function packToTempFile(root: string, onEntries?: (count: number) => void, tmpDir = os.tmpdir()): Promise<PackedFolder> {
  const entries = await listEntries(root);
  if (!entries.some((e) => e.type !== 'directory')) {
    throw new PackError(`nothing to upload: ${root} holds no files once .gitignore and .hatchignore are applied`);
  }
  onEntries?.(entries.length);
  const dir = await fs.mkdtemp(path.join(tmpDir, 'hatch-source-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  // A Ctrl-C ends the process without unwinding: the temporary file goes anyway.
  process.once('exit', remove);
  const file = path.join(dir, 'source.tar.gz');
  try {
    await pipeline(packEntries(root, entries), createWriteStream(file, { mode: 0o600 }));
    const { size } = await fs.stat(file);
    return {
      file,
      bytes: size,
      entries,
      remove: () => {
        process.off('exit', remove);
        remove();
      },
    };
  } catch (err) {
    process.off('exit', remove);
    remove();
    throw err;
  }
}
