import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { create } from 'tar';
import { ArchiveCheck } from '../../src/modules/sources/archive';
import { drain, tarOf } from './helpers';

const MB = 1024 * 1024;

/** Feeds `bytes` to a check in pieces of `piece` bytes, as a request body would arrive. */
async function check(bytes: Buffer, maxBytes: number, piece = 65536): Promise<ArchiveCheck> {
  const c = new ArchiveCheck(maxBytes);
  for (let at = 0; at < bytes.length && !c.refusal; at += piece) await c.write(bytes.subarray(at, at + piece));
  await c.end();
  c.destroy();
  return c;
}

describe('ArchiveCheck', () => {
  it('accepts a folder packed by the tar package (files, a nested directory, a symbolic link inside it)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'egg-'));
    try {
      writeFileSync(path.join(dir, 'package.json'), '{"name":"egg"}');
      mkdirSync(path.join(dir, 'src', 'lib'), { recursive: true });
      writeFileSync(path.join(dir, 'src', 'lib', 'a.js'), 'module.exports = 1;');
      symlinkSync('../src/lib/a.js', path.join(dir, 'src', 'alias.js'));
      const bytes = await drain(create({ gzip: true, cwd: dir, portable: true }, ['.']));
      const c = await check(bytes, MB, 7);
      expect(c.refusal).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops inflating a gzip bomb at the limit: zlib is cut off within one output chunk of it, not run to the end', async () => {
    // 64 MB of zeros, about 64 KB compressed: 64 times the limit (256 MB took seconds to compress on a busy CI machine).
    const bomb = gzipSync(tarOf([{ path: 'zeros', body: Buffer.alloc(64 * MB) }]));
    const c = await check(bomb, MB);
    expect(c.refusal).toMatch(/unpacks to more than 1 MB/);
    expect(c.unpackedBytes).toBeGreaterThan(MB);
    expect(c.unpackedBytes).toBeLessThan(MB + 64 * 1024);
  });

  it('counts what the archive unpacks to, whatever its compressed size: just under the limit passes', async () => {
    const tar = tarOf([{ path: 'zeros', body: Buffer.alloc(MB - 2048) }]);
    expect(tar.length).toBeLessThanOrEqual(MB);
    const c = await check(gzipSync(tar), MB);
    expect(c.refusal).toBeNull();
    expect(c.unpackedBytes).toBe(tar.length);
  });

  it('names the first problem it meets, and the archive stays refused', async () => {
    const c = await check(
      gzipSync(
        tarOf([
          { path: '/abs', body: 'x' },
          { path: 'pipe', type: 'FIFO' },
          { path: '../up', body: 'y' },
        ]),
      ),
      MB,
      100,
    );
    expect(c.refusal).toBe('"/abs" is an absolute path');
  });
});
