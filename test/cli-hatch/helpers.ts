import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Parser } from 'tar';

import { ROOT } from '../support/cli';

export { ROOT };
export const BIN = path.join(ROOT, 'bin', 'hatch.js');

/** How a test runs the CLI: which gateway, which token (if any), which config dir. */
export interface CliEnv {
  apiUrl: string;
  configDir: string;
  token?: string;
  extra?: Record<string, string>;
  /** Where the CLI runs (default: the repository). */
  cwd?: string;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function tempDir(prefix = 'hatch-cli-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** The child's environment: the test's, minus anything of the user's that would steer the CLI. */
function childEnv(e: CliEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith('HATCH_') || ['NO_COLOR', 'FORCE_COLOR', 'XDG_CONFIG_HOME'].includes(k)) delete env[k];
  }
  env.HATCH_API_URL = e.apiUrl;
  env.HATCH_CONFIG_DIR = e.configDir;
  if (e.token) env.HATCH_TOKEN = e.token;
  return { ...env, ...e.extra };
}

/** A running `node bin/hatch.js …` whose output a test can wait on. */
export class RunningCli {
  stdout = '';
  stderr = '';
  readonly exited: Promise<CliResult>;
  private readonly waiters: Array<() => void> = [];
  private done = false;

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      this.stdout += d;
      this.wake();
    });
    child.stderr.on('data', (d: string) => {
      this.stderr += d;
      this.wake();
    });
    this.exited = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        this.done = true;
        this.wake();
        resolve({ code, signal, stdout: this.stdout, stderr: this.stderr });
      });
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once `predicate` holds for the output so far; rejects if the CLI exits first. */
  async waitFor(predicate: (stdout: string, stderr: string) => boolean, what = 'output'): Promise<void> {
    for (;;) {
      if (predicate(this.stdout, this.stderr)) return;
      if (this.done) throw new Error(`hatch exited before ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async stop(): Promise<CliResult> {
    if (!this.done) this.child.kill('SIGINT');
    return this.exited;
  }
}

const running = new Set<RunningCli>();

export function spawnHatch(e: CliEnv, args: string[], input = ''): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: e.cwd ?? ROOT, env: childEnv(e), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(input);
  const cli = new RunningCli(child);
  running.add(cli);
  void cli.exited.then(() => running.delete(cli));
  return cli;
}

/** Runs the real binary to completion. */
export function hatch(e: CliEnv, args: string[], input = ''): Promise<CliResult> {
  return spawnHatch(e, args, input).exited;
}

/** Stops every CLI a test left running (afterEach/afterAll). */
export async function stopAllClis(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

/**
 * Parses an aligned table: columns are separated by two or more spaces in the header, and every
 * row's cells must start exactly under their header (which is what "aligned" means).
 */
export function parseTable(text: string): Array<Record<string, string>> {
  const lines = text.split('\n').filter((l) => l.length > 0);
  const header = lines[0];
  const columns = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], start: m.index }));
  return lines.slice(1).map((line) => {
    const row: Record<string, string> = {};
    columns.forEach((col, i) => {
      const end = i + 1 < columns.length ? columns[i + 1].start : undefined;
      expect(line[col.start]).toMatch(/\S/); // the cell starts under its header…
      if (col.start > 0) expect(line.slice(col.start - 2, col.start)).toBe('  '); // …after the column gap
      row[col.name] = line.slice(col.start, end).trim();
    });
    return row;
  });
}

/** A TCP proxy in front of the gateway whose connections a test can cut. */
export class CuttableProxy {
  connections = 0;
  /** While set, new connections are closed at once (the gateway looks down). */
  refusing = false;
  private readonly sockets = new Set<net.Socket>();
  private readonly waiters: Array<{ n: number; resolve: () => void }> = [];

  private constructor(
    private readonly server: net.Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<CuttableProxy> {
    const { hostname, port } = new URL(target);
    let self: CuttableProxy | null = null;
    const server = net.createServer((client) => self!.accept(client, hostname, Number(port)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new CuttableProxy(server, `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`);
    return self;
  }

  private accept(client: net.Socket, host: string, port: number): void {
    if (this.refusing) return void client.destroy();
    const upstream = net.connect(port, host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
    this.connections++;
    for (const w of [...this.waiters]) {
      if (this.connections >= w.n) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  /** Destroys both sides of every piped connection: a dropped network, no close handshake. */
  cutAll(): number {
    const n = this.sockets.size;
    for (const s of this.sockets) s.destroy();
    return n;
  }

  waitForConnections(n: number): Promise<void> {
    if (this.connections >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  async stop(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A file's content, a symbolic link (`{ link: target }`), an empty folder (`{ dir: true }`), or a file with a mode. */
export type TreeNode = string | { link: string } | { dir: true } | { body: string; mode: number };

/** Writes a folder tree: paths (with `/`) to what is there; parent folders are made as needed. */
export function writeTree(root: string, tree: Record<string, TreeNode>): string {
  for (const [rel, node] of Object.entries(tree)) {
    const abs = path.join(root, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    if (typeof node === 'string') writeFileSync(abs, node);
    else if ('link' in node) symlinkSync(node.link, abs);
    else if ('dir' in node) mkdirSync(abs, { recursive: true });
    else {
      writeFileSync(abs, node.body);
      chmodSync(abs, node.mode);
    }
  }
  return root;
}

export interface ArchiveEntry {
  path: string;
  type: string;
  mode?: number;
  mtime?: Date;
  uid?: number;
  gid?: number;
  uname?: string;
  gname?: string;
  linkpath?: string;
  body: string;
}

/** The entries of a .tar.gz, with their headers and contents, in archive order (tar's own Parser). */
export async function archiveEntries(tarGz: Buffer | AsyncIterable<Buffer | Uint8Array>): Promise<ArchiveEntry[]> {
  const entries: ArchiveEntry[] = [];
  const bodies: Array<Promise<void>> = [];
  const parser = new Parser({
    strict: true,
    onReadEntry: (e) => {
      const entry: ArchiveEntry = {
        path: e.path,
        type: e.type,
        mode: e.mode,
        mtime: e.mtime,
        uid: e.uid,
        gid: e.gid,
        uname: e.uname,
        gname: e.gname,
        linkpath: e.linkpath,
        body: '',
      };
      entries.push(entry);
      const chunks: Buffer[] = [];
      e.on('data', (c: Buffer) => chunks.push(c));
      bodies.push(new Promise((resolve) => e.on('end', () => resolve(void (entry.body = Buffer.concat(chunks).toString('utf8'))))));
    },
  });
  const done = new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
  });
  if (Buffer.isBuffer(tarGz)) parser.end(tarGz);
  else {
    for await (const chunk of tarGz) parser.write(Buffer.from(chunk));
    parser.end();
  }
  await done;
  await Promise.all(bodies);
  return entries;
}

/** A log line as `hatch logs --json` prints it (an egg's also with `deploymentId` and `stream`). */
export interface JsonLine {
  deploymentId?: string;
  seq: number;
  timestamp: string;
  type: string;
  stream?: string | null;
  message: string;
}

/** The log lines `hatch logs --json` printed, one JSON object per line. */
export const jsonLines = (stdout: string): JsonLine[] =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as JsonLine);
