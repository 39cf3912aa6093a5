import { gzipSync } from 'node:zlib';
import { startGateway, TestGateway } from '../support/gateway';
import { EggWithPeople, makeEggWithPeople } from '../support/factories';
import { expectProblem } from '../rest/problem';
import { helloEgg, storedRows, tarGz, tarOf, upload } from './helpers';

const MB = 1024 * 1024;

/**
 * Archives that would unpack outside the egg's folder, or into something other than files,
 * directories and links, are refused with a 422 on `source` saying what is wrong, and nothing
 * is stored (no `sources` row, no `source_chunks` row: the upload's transaction rolls back).
 */
describe('hostile archives', () => {
  let t: TestGateway;
  let egg: EggWithPeople;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SOURCE_MAX_MB: '2' });
    egg = await makeEggWithPeople(t);
  });
  afterAll(() => t.stop());

  const ok = { path: 'package.json', body: '{"name":"x"}' };

  async function refused(bytes: Buffer, message: RegExp): Promise<void> {
    const before = await storedRows(t);
    const res = await upload(t, egg.owner.token, egg.slug, bytes);
    expectProblem(res, 422, 'validation_failed');
    expect(res.body.errors).toEqual([{ field: 'source', message: expect.stringMatching(message) }]);
    expect(res.body.detail).toMatch(message);
    expect(await storedRows(t)).toEqual(before);
  }

  it.each([
    ['a `..` path', [ok, { path: '../escape.txt', body: 'x' }], /"\.\.\/escape\.txt" has a `\.\.` segment/],
    ['a `..` segment inside a path', [ok, { path: 'lib/../../etc/cron.d/x', body: 'x' }], /`\.\.` segment/],
    ['an absolute path', [{ path: '/etc/passwd', body: 'root::0:0::/:/bin/sh' }], /"\/etc\/passwd" is an absolute path/],
    ['a Windows drive path', [{ path: 'C:\\Windows\\x', body: 'x' }], /is an absolute path/],
    ['a symbolic link to an absolute path', [ok, { path: 'passwd', type: 'SymbolicLink', linkpath: '/etc/passwd' }], /symbolic link to an absolute path/],
    [
      'a symbolic link up and out',
      [ok, { path: 'lib/up', type: 'SymbolicLink', linkpath: '../../outside' }],
      /"lib\/up" is a symbolic link to "\.\.\/\.\.\/outside", outside/,
    ],
    [
      'links that leave only together (a link to `.` then `..` through it)',
      [
        ok,
        { path: 'a/', type: 'Directory' },
        { path: 'a/here', type: 'SymbolicLink', linkpath: '.' },
        { path: 'out', type: 'SymbolicLink', linkpath: 'a/here/../..' },
      ],
      /"out" is a symbolic link to "a\/here\/\.\.\/\.\.", outside/,
    ],
    [
      'an entry written through a symbolic link',
      [ok, { path: 'sub/', type: 'Directory' }, { path: 'link', type: 'SymbolicLink', linkpath: 'sub' }, { path: 'link/file', body: 'x' }],
      /"link" is a symbolic link with entries inside it/,
    ],
    ['symbolic links in a loop', [ok, { path: 'a', type: 'SymbolicLink', linkpath: 'b' }, { path: 'b', type: 'SymbolicLink', linkpath: 'a' }], /in a loop/],
    [
      'a hard link to an absolute path',
      [ok, { path: 'shadow', type: 'Link', linkpath: '/etc/shadow' }],
      /hard link to "\/etc\/shadow", which is an absolute path/,
    ],
    ['a hard link up and out', [ok, { path: 'h', type: 'Link', linkpath: '../outside' }], /hard link to "\.\.\/outside", which has a `\.\.` segment/],
    [
      'a hard link through a symbolic link that leaves',
      [ok, { path: 'up', type: 'SymbolicLink', linkpath: '..' }, { path: 'h', type: 'Link', linkpath: 'up/secret' }],
      /"up" is a symbolic link to "\.\.", outside/,
    ],
    ['a character device', [ok, { path: 'null', type: 'CharacterDevice', devmaj: 1, devmin: 3 }], /"null" is a character device/],
    ['a block device', [ok, { path: 'sda', type: 'BlockDevice', devmaj: 8, devmin: 0 }], /"sda" is a block device/],
    ['a FIFO', [ok, { path: 'pipe', type: 'FIFO' }], /"pipe" is a FIFO/],
  ] as const)('refuses %s', async (_what, entries, message) => {
    await refused(tarGz(entries as never), message);
  });

  it('refuses a `..` path given in a PAX extended header (the name the header block shows is innocent)', async () => {
    const record = (key: string, value: string) => {
      const tail = ` ${key}=${value}\n`;
      let n = tail.length + 2;
      while (String(n).length + tail.length !== n) n++;
      return `${n}${tail}`;
    };
    const pax = record('path', '../pax-escape.txt');
    await refused(
      tarGz([ok, { path: 'PaxHeader/innocent.txt', type: 'ExtendedHeader', body: pax }, { path: 'innocent.txt', body: 'x' }]),
      /"\.\.\/pax-escape\.txt" has a `\.\.` segment/,
    );
  });

  it('refuses an entry type tar does not know (raw header, typeflag `Z`)', async () => {
    const tar = tarOf([ok, { path: 'odd', body: 'x' }]);
    // Rewrite the second header's typeflag to an unknown one and fix its checksum.
    const header = tar.subarray(1024, 1536);
    header[156] = 'Z'.charCodeAt(0);
    header.fill(0x20, 148, 156);
    const sum = header.reduce((n, b) => n + b, 0);
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    await refused(gzipSync(tar), /"odd" is an entry of type Unsupported/);
  });

  it('refuses a gzip bomb once the unpacked bytes pass HATCHERY_SOURCE_MAX_MB, and says so', async () => {
    // 64 MB of zeros in a file entry: about 64 KB compressed, 32 times the limit unpacked.
    const bomb = gzipSync(tarOf([{ path: 'zeros', body: Buffer.alloc(64 * MB) }]));
    expect(bomb.length).toBeLessThan(MB);
    await refused(bomb, /unpacks to more than 2 MB \(HATCHERY_SOURCE_MAX_MB\)/);
  });

  it('stops a gzip bomb while it streams: refused before the client has even finished sending', async () => {
    const bomb = gzipSync(tarOf([{ path: 'zeros', body: Buffer.alloc(64 * MB) }]));
    const before = await storedRows(t);
    let sent = 0;
    // The whole bomb, then a body that never ends: only a check made while reading can answer.
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent < bomb.length) {
          controller.enqueue(bomb.subarray(sent, sent + 16384));
          sent += 16384;
          return;
        }
        return new Promise<void>(() => undefined);
      },
    });
    const res = await upload(t, egg.owner.token, egg.slug, body);
    expectProblem(res, 422, 'validation_failed');
    expect(res.body.errors[0]).toEqual({ field: 'source', message: expect.stringMatching(/unpacks to more than 2 MB/) });
    expect(await storedRows(t)).toEqual(before);
  });

  it('refuses a gzip inside the gzip (no second layer is unpacked unseen)', async () => {
    await refused(gzipSync(gzipSync(tarOf([ok]))), /gzip inside gzip/);
  });

  it.each([
    ['truncated gzip', () => helloEgg().subarray(0, 60), /not a sound gzip stream/],
    ['corrupt gzip data', () => Buffer.concat([helloEgg().subarray(0, 12), Buffer.alloc(200, 0xff)]), /not a sound gzip stream/],
    ['gzip of something that is not tar', () => gzipSync(Buffer.alloc(4096, 'x')), /not a sound tar archive/],
    [
      'a tar cut off inside a file',
      () => gzipSync(tarOf([ok, { path: 'big', body: Buffer.alloc(5000, 'a') }], { end: false }).subarray(0, 2048)),
      /not a sound tar archive/,
    ],
    ['an empty archive (only the end blocks)', () => gzipSync(Buffer.alloc(1024)), /not a sound tar archive \(Unrecognized archive format\)/],
  ] as const)('refuses %s', async (_what, make, message) => {
    await refused(make(), message);
  });

  it('takes what a folder packed by tar holds: files, directories, links that stay inside (also `..` ones that stay)', async () => {
    const res = await upload(
      t,
      egg.owner.token,
      egg.slug,
      tarGz([
        { path: './', type: 'Directory' },
        { path: './package.json', body: '{}' },
        { path: 'node_modules/', type: 'Directory' },
        { path: 'node_modules/pkg/', type: 'Directory' },
        { path: 'node_modules/pkg/cli.js', body: '#!/usr/bin/env node' },
        { path: 'node_modules/.bin/', type: 'Directory' },
        { path: 'node_modules/.bin/pkg', type: 'SymbolicLink', linkpath: '../pkg/cli.js' },
        { path: 'same.json', type: 'Link', linkpath: 'package.json' },
        { path: 'dangling', type: 'SymbolicLink', linkpath: 'not/there' },
        { path: 'self', type: 'SymbolicLink', linkpath: '.' },
      ]),
    );
    expect(res.status).toBe(201);
  });
});
