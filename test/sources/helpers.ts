import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Header, HeaderData } from 'tar';
import { TestGateway } from '../support/gateway';
import { checkRestResponse } from '../support/openapi-check';

/** One tar entry: its header fields and, for files, its content. */
export interface TarEntry extends HeaderData {
  path: string;
  body?: Buffer | string;
}

const block = (n: number) => Math.ceil(n / 512) * 512;

/**
 * A tar archive from raw 512-byte headers (tar's Header), so tests can write what a packer would
 * refuse to: absolute and `..` paths, devices, FIFOs, links anywhere.
 */
export function tarOf(entries: TarEntry[], opts: { end?: boolean } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const { body, ...data } of entries) {
    const content = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
    const header = new Header({ mode: 0o644, uid: 1000, gid: 1000, mtime: new Date('2026-11-20T12:00:00Z'), type: 'File', size: content.length, ...data });
    const buf = Buffer.alloc(512);
    header.encode(buf, 0);
    parts.push(buf);
    const padded = Buffer.alloc(block(content.length));
    content.copy(padded);
    parts.push(padded);
  }
  if (opts.end !== false) parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** `tarOf` gzipped: a .tar.gz. */
export const tarGz = (entries: TarEntry[]): Buffer => gzipSync(tarOf(entries));

/** A small, sound egg folder. */
export const helloEgg = (greeting = 'hello'): Buffer =>
  tarGz([
    { path: 'package.json', body: JSON.stringify({ name: 'hello', scripts: { start: 'node server.js' } }) },
    { path: 'lib/', type: 'Directory', mode: 0o755 },
    { path: 'server.js', body: `require('http').createServer((_q, r) => r.end(${JSON.stringify(greeting)})).listen(process.env.PORT);\n` },
    { path: 'lib/util.js', body: 'module.exports = 1;\n' },
    { path: 'bin', type: 'SymbolicLink', linkpath: 'lib' },
  ]);

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export interface UploadResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** POST /v1/apps/{slug}/sources over real HTTP; the answer is checked against the OpenAPI document. */
export async function upload(
  t: { url: string },
  token: string | null,
  slug: string,
  body: Buffer | ReadableStream<Uint8Array> | undefined,
  headers: Record<string, string> = {},
  query = '',
): Promise<UploadResponse> {
  const path = `/v1/apps/${slug}/sources${query}`;
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/gzip', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: leave the text
  }
  checkRestResponse('POST', path, res.status, res.headers, text, parsed);
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Rows of the sources tables, to assert what a request stored. */
export async function storedRows(t: TestGateway): Promise<{ sources: number; chunks: number }> {
  const [row] = await t.gateway.ds.query(`SELECT (SELECT count(*)::int FROM sources) AS sources, (SELECT count(*)::int FROM source_chunks) AS chunks`);
  return row;
}

/** Reads a stream to its end. */
export async function drain(stream: AsyncIterable<Buffer | Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}
