/**
 * The Docker tests' base image and sources, made offline (no registry): shared with the benchmark
 * (bench/runtime.ts), so nothing here needs jest.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import * as tar from 'tar';
import { DEFAULT_SOCKET } from '../../src/runtime/docker/engine';

export const docker = () => new Docker({ socketPath: DEFAULT_SOCKET });

/** The base image of test eggs: this machine's own node and npm, the libraries node needs and busybox, imported (no registry needed). */
export const NODE_IMAGE = `hatchery-test-node:${process.version.slice(1)}-npm`;

/** Builds NODE_IMAGE from the machine's files unless the Engine has it. */
export async function ensureNodeImage(d: Docker): Promise<string> {
  try {
    await d.getImage(NODE_IMAGE).inspect();
    return NODE_IMAGE;
  } catch {
    // build it below
  }
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) throw new Error('the Docker tests need busybox (Debian: busybox-static) to make their base image');
  const root = mkdtempSync(path.join(tmpdir(), 'hatchery-rootfs-'));
  try {
    const node = realpathSync(process.execPath);
    const copy = (file: string) => {
      mkdirSync(path.join(root, path.dirname(file)), { recursive: true });
      cpSync(realpathSync(file), path.join(root, file));
    };
    copy(node);
    mkdirSync(path.join(root, 'usr/local/bin'), { recursive: true });
    if (node !== '/usr/local/bin/node') symlinkSync(node, path.join(root, 'usr/local/bin/node'));
    for (const lib of execFileSync('ldd', [node], { encoding: 'utf8' }).match(/\/\S+/g) ?? []) copy(lib);
    // npm, for the Node image generated for a package.json (`npm install`, `npm start`); nothing to fetch for an egg without dependencies.
    const npm = path.dirname(path.dirname(realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())));
    cpSync(npm, path.join(root, 'usr/local/lib/node_modules/npm'), { recursive: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(root, 'usr/local/bin/npm'));
    mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
    symlinkSync('/bin/busybox', path.join(root, 'usr/bin/env'));
    mkdirSync(path.join(root, 'bin'), { recursive: true });
    cpSync(busybox, path.join(root, 'bin/busybox'));
    for (const applet of ['sh', 'ls', 'cat', 'echo', 'env', 'mkdir', 'rm', 'sleep', 'true', 'false']) symlinkSync('busybox', path.join(root, 'bin', applet));
    mkdirSync(path.join(root, 'tmp'), { mode: 0o1777 });
    mkdirSync(path.join(root, 'etc'));
    writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n');
    writeFileSync(path.join(root, 'etc/group'), 'root:x:0:\nnode:x:1000:\n');
    const [repo, tag] = NODE_IMAGE.split(':');
    const stream = await d.importImage(
      tar.c({ cwd: root, portable: false }, ['.']) as unknown as NodeJS.ReadableStream,
      {
        repo,
        tag,
        changes: [
          'ENV PATH=/usr/local/bin:/usr/bin:/bin',
          'ENV npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false npm_config_offline=true',
        ],
      } as object,
    );
    await new Promise<void>((resolve, reject) => d.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())));
    return NODE_IMAGE;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** A .tar.gz of `files` (name → content), as `hatch deploy` uploads a folder. */
export async function sourceArchive(files: Record<string, string>): Promise<Buffer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hatchery-src-'));
  try {
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), content);
    }
    const chunks: Buffer[] = [];
    for await (const c of tar.c({ cwd: dir, gzip: true, portable: true }, Object.keys(files))) chunks.push(c);
    return Buffer.concat(chunks);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
