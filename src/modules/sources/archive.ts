import { createGunzip, Gunzip } from 'node:zlib';
import { Parser, ReadEntry } from 'tar';

/**
 * Checks a .tar.gz while it streams in: gunzip (Node's zlib) into tar's Parser, entry by entry,
 * with the unpacked bytes counted as they come out of zlib, so a gzip bomb stops at the limit
 * instead of being inflated first. `refusal` says what is wrong, in words for the uploader.
 *
 * What an archive may hold: files, directories, and links whose targets stay inside the archive's
 * root once every symbolic link of the archive is followed. Refused: paths that are absolute or
 * have a `..` segment, links that lead outside the root (or loop), entries inside a symbolic link
 * (a folder packed by tar never has them; they would let a later entry be written through the
 * link), devices, FIFOs and entry types tar cannot say what they are; more than the limit once
 * unpacked; anything that is not one sound gzip stream of a tar archive.
 */
export class ArchiveCheck {
  private readonly gunzip: Gunzip = createGunzip();
  private readonly parser: Parser;
  private unpacked = 0;
  private head = Buffer.alloc(0);
  private entries = 0;
  private problem: string | null = null;
  private readonly symlinks = new Map<string, string>();
  private readonly hardLinks: Array<{ path: string; target: string }> = [];
  /** Every proper prefix of an entry's path: none may be a symbolic link. */
  private readonly parents = new Set<string>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly maxUnpackedBytes: number) {
    // Only the gzip layer is ours: tar must not sniff another compression inside it.
    this.parser = new Parser({ strict: true, brotli: false, zstd: false, onReadEntry: (e) => this.entry(e) });
    this.parser.on('ignoredEntry', (e: ReadEntry) => this.refuse(`${quote(e.path)} is an entry of type ${e.type}, which a source may not hold`));
    this.parser.on('error', (err: Error) => this.refuse(`is not a sound tar archive (${tarMessage(err)})`));
    this.gunzip.on('data', (chunk: Buffer) => this.unpack(chunk));
    this.gunzip.on('error', (err: Error) => this.refuse(`is not a sound gzip stream (${err.message})`));
    this.gunzip.on('close', () => this.wake());
  }

  /** Bytes zlib has unpacked so far. */
  get unpackedBytes(): number {
    return this.unpacked;
  }

  /** What is wrong with the archive, once something is; null so far. */
  get refusal(): string | null {
    return this.problem;
  }

  /** Feeds compressed bytes; resolves when zlib can take more (or the archive is refused). */
  async write(chunk: Buffer): Promise<void> {
    if (this.problem) return;
    if (this.gunzip.write(chunk)) return;
    await this.until(true);
  }

  /** Ends the input; resolves once the whole archive is read and checked (see `refusal`). */
  async end(): Promise<void> {
    if (this.problem) return;
    const parsed = new Promise<void>((resolve) => this.parser.once('end', resolve));
    this.gunzip.once('end', () => this.parser.end());
    this.gunzip.end();
    await Promise.race([parsed, this.until()]);
    if (this.problem) return;
    if (this.entries === 0) return this.refuse('holds no files');
    this.checkLinks();
  }

  /** Stops zlib (and any wait) at once; safe to call more than once. */
  destroy(): void {
    this.gunzip.destroy();
    this.wake();
  }

  private refuse(problem: string): void {
    if (this.problem) return;
    this.problem = problem;
    this.destroy();
  }

  /** Resolves on zlib's next `drain` if asked, else (and in any case) once the check is refused or destroyed. */
  private until(drain = false): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        this.gunzip.off('drain', done);
        resolve();
      };
      if (drain) this.gunzip.once('drain', done);
      this.waiters.add(done);
      if (this.problem || this.gunzip.destroyed) done();
    });
  }

  private wake(): void {
    for (const done of [...this.waiters]) done();
  }

  private unpack(chunk: Buffer): void {
    if (this.problem) return;
    this.unpacked += chunk.length;
    if (this.unpacked > this.maxUnpackedBytes) {
      return this.refuse(`unpacks to more than ${megabytes(this.maxUnpackedBytes)} MB (HATCHERY_SOURCE_MAX_MB)`);
    }
    if (this.head.length < 2) {
      this.head = Buffer.concat([this.head, chunk.subarray(0, 2)]);
      if (this.head.length >= 2 && this.head[0] === 0x1f && this.head[1] === 0x8b) return this.refuse('is gzip inside gzip: send one .tar.gz');
    }
    this.parser.write(chunk);
  }

  private entry(e: ReadEntry): void {
    e.resume(); // only the headers matter; bodies pass by
    if (this.problem) return;
    this.entries++;
    const name = quote(e.path);
    const pathProblem = unsafePath(e.path);
    if (pathProblem) return this.refuse(`${name} ${pathProblem}`);
    const path = normalize(e.path);
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) this.parents.add(parts.slice(0, i).join('/'));
    switch (e.type) {
      case 'File':
      case 'OldFile':
      case 'ContiguousFile':
      case 'Directory':
      case 'GNUDumpDir':
        return;
      case 'SymbolicLink': {
        const target = e.linkpath ?? '';
        if (isAbsolute(target)) return this.refuse(`${name} is a symbolic link to an absolute path (${quote(target)}), outside the archive`);
        this.symlinks.set(path, target);
        return;
      }
      case 'Link': {
        const target = e.linkpath ?? '';
        const problem = unsafePath(target);
        if (problem) return this.refuse(`${name} is a hard link to ${quote(target)}, which ${problem}`);
        this.hardLinks.push({ path, target: normalize(target) });
        return;
      }
      case 'CharacterDevice':
      case 'BlockDevice':
        return this.refuse(`${name} is a ${e.type === 'CharacterDevice' ? 'character' : 'block'} device; a source may hold only files, directories and links`);
      case 'FIFO':
        return this.refuse(`${name} is a FIFO; a source may hold only files, directories and links`);
      default:
        return this.refuse(`${name} is an entry of type ${e.type}, which a source may not hold`);
    }
  }

  /** Once every link is known: each one leads somewhere inside the root. */
  private checkLinks(): void {
    for (const path of this.symlinks.keys()) {
      if (this.parents.has(path)) return this.refuse(`${quote(path)} is a symbolic link with entries inside it`);
    }
    const resolver = new LinkResolver(this.symlinks);
    for (const [path, target] of this.symlinks) {
      const where = resolver.resolve(path.split('/').slice(0, -1), target);
      if (where === LOOP) return this.refuse(`${quote(path)} is a symbolic link in a loop`);
      if (where === OUTSIDE) return this.refuse(`${quote(path)} is a symbolic link to ${quote(target)}, outside the archive`);
    }
    for (const { path, target } of this.hardLinks) {
      const where = resolver.resolve([], target);
      if (where === LOOP || where === OUTSIDE) return this.refuse(`${quote(path)} is a hard link to ${quote(target)}, outside the archive`);
    }
  }
}

const OUTSIDE = Symbol('outside');
const LOOP = Symbol('loop');
/** Symbolic links followed for one path before it counts as a loop (Linux's limit). */
const MAX_HOPS = 40;

/** Resolves paths the way a kernel would inside the unpacked archive, following its symbolic links. */
class LinkResolver {
  constructor(private readonly symlinks: Map<string, string>) {}

  /** Where `target`, relative to the directory `from` (path segments; [] is the root), leads. */
  resolve(from: string[], target: string, hops = { n: 0 }): string[] | typeof OUTSIDE | typeof LOOP {
    if (isAbsolute(target)) return OUTSIDE;
    let at = [...from];
    for (const part of target.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (at.length === 0) return OUTSIDE;
        at.pop();
        continue;
      }
      at.push(part);
      const link = this.symlinks.get(at.join('/'));
      if (link === undefined) continue;
      if (++hops.n > MAX_HOPS) return LOOP;
      const next = this.resolve(at.slice(0, -1), link, hops);
      if (!Array.isArray(next)) return next;
      at = next;
    }
    return at;
  }
}

/** Why an entry path may not be unpacked, or null. */
function unsafePath(path: string): string | null {
  if (isAbsolute(path)) return 'is an absolute path';
  if (path.split(/[/\\]/).includes('..')) return 'has a `..` segment';
  return null;
}

/** Absolute on any system an archive may come from: `/x`, `\x`, `C:x`. */
const isAbsolute = (path: string) => /^[/\\]/.test(path) || /^[A-Za-z]:/.test(path);

/** `./a//b/` → `a/b`. */
const normalize = (path: string) =>
  path
    .split('/')
    .filter((p) => p !== '' && p !== '.')
    .join('/');

const quote = (path: string) => JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path);
const megabytes = (bytes: number) => Math.round(bytes / (1024 * 1024));

/** tar's error text without its code prefix (`TAR_ENTRY_INVALID: checksum failure`). */
function tarMessage(err: Error): string {
  return err.message.replace(/^TAR_[A-Z_]+: /, '');
}
