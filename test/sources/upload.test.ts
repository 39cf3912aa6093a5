import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { EggWithPeople, ISO_MS, makeApp, makeEggWithPeople } from '../support/factories';
import { expectProblem, expectUnauthorized } from '../rest/problem';
import { parse } from 'graphql';
import { drain, helloEgg, sha256, storedRows, tarGz, upload } from './helpers';
import { LINGER_IDLE_MS } from '../../src/rest/uploads';

const SOURCES = parse(/* GraphQL */ `
  query Sources($app: String!, $first: Int, $after: String) {
    sources(app: $app, first: $first, after: $after) {
      nodes {
        id
        sha256
        sizeBytes
        createdAt
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

const SOURCE = parse(/* GraphQL */ `
  query Source($app: String!, $id: ID!) {
    source(app: $app, id: $id) {
      id
      sha256
      sizeBytes
      createdAt
    }
  }
`);

/** POST /v1/apps/{slug}/sources: .tar.gz uploads stored in PostgreSQL, content-addressed per egg. */
describe('uploading sources', () => {
  let t: TestGateway;
  let egg: EggWithPeople;

  beforeAll(async () => {
    // Clients abort uploads here; undici then leaves a connection the server waits the grace period for.
    t = await startGateway({ HATCHERY_SHUTDOWN_GRACE_MS: '1000' });
    egg = await makeEggWithPeople(t);
  });
  afterAll(() => t.stop());

  it('stores a .tar.gz: 201 with its id, SHA-256, size and time; the same bytes again are 200 with the same id', async () => {
    const bytes = helloEgg('first');
    const created = await upload(t, egg.owner.token, egg.slug, bytes);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^src_/),
      sha256: sha256(bytes),
      size_bytes: bytes.length,
      created_at: expect.stringMatching(ISO_MS),
    });
    expect(created.headers.get('api-version')).toBe('2026-09-01');

    const again = await upload(t, egg.collaborator.token, egg.slug, bytes);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);

    const other = await upload(t, egg.owner.token, egg.slug, helloEgg('second'));
    expect(other.status).toBe(201);
    expect(other.body.id).not.toBe(created.body.id);
  });

  it('is per egg: the same bytes for another egg are another source', async () => {
    const bytes = helloEgg('shared');
    const a = await upload(t, egg.owner.token, egg.slug, bytes);
    const otherSlug = (await makeApp(t.url, egg.owner)).slug;
    const b = await upload(t, egg.owner.token, otherSlug, bytes);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.body.sha256).toBe(a.body.sha256);
  });

  it('concurrent uploads of the same new bytes store one source: one 201, the others 200 with its id', async () => {
    const bytes = helloEgg(`race-${randomBytes(4).toString('hex')}`);
    const before = await storedRows(t);
    const answers = await Promise.all([1, 2, 3].map(() => upload(t, egg.owner.token, egg.slug, bytes)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    const after = await storedRows(t);
    expect(after.sources).toBe(before.sources + 1);
    expect(after.chunks).toBe(before.chunks + 1);
  });

  it('collaborators may upload; strangers get 404, no token 401, an unknown egg 404; none of them stores anything', async () => {
    expect((await upload(t, egg.collaborator.token, egg.slug, helloEgg('by the collaborator'))).status).toBe(201);
    const before = await storedRows(t);
    expectProblem(await upload(t, egg.stranger.token, egg.slug, helloEgg('stranger')), 404, 'not_found');
    expectUnauthorized(await upload(t, null, egg.slug, helloEgg('anonymous')));
    expectUnauthorized(await upload(t, 'hatch_not-a-token', egg.slug, helloEgg('bad token')));
    expectProblem(await upload(t, egg.owner.token, 'no-such-egg', helloEgg('nowhere')), 404, 'not_found');
    expect(await storedRows(t)).toEqual(before);
  });

  it('GraphQL sees the sources: `sources(app)` newest first and paged, `source(app, id)` one of them; strangers see nothing', async () => {
    const slug = (await makeApp(t.url, egg.owner)).slug;
    const first = (await upload(t, egg.owner.token, slug, helloEgg('one'))).body;
    const second = (await upload(t, egg.owner.token, slug, helloEgg('two'))).body;
    const data = await gqlOk(t.url, egg.owner.token, SOURCES as never, { app: slug, first: 1 });
    const page = (data as any).sources;
    expect(page.nodes).toEqual([{ id: second.id, sha256: second.sha256, sizeBytes: second.size_bytes, createdAt: second.created_at }]);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const rest2 = await gqlOk(t.url, egg.owner.token, SOURCES as never, { app: slug, after: page.pageInfo.endCursor });
    expect((rest2 as any).sources.nodes.map((n: { id: string }) => n.id)).toEqual([first.id]);
    const one = await gqlOk(t.url, egg.owner.token, SOURCE as never, { app: slug, id: first.id });
    expect((one as any).source).toEqual({ id: first.id, sha256: first.sha256, sizeBytes: first.size_bytes, createdAt: first.created_at });

    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${egg.stranger.token}` },
      body: JSON.stringify({ query: 'query($app: String!) { sources(app: $app) { nodes { id } } }', variables: { app: slug } }),
    });
    const json = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(json.errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('refuses another Content-Type, a missing body and bytes that are not gzip with 415, storing nothing', async () => {
    const before = await storedRows(t);
    const bytes = helloEgg('typed');
    for (const type of ['application/json', 'application/x-tar', 'text/plain', 'application/octet-stream']) {
      const res = await upload(t, egg.owner.token, egg.slug, bytes, { 'content-type': type });
      expectProblem(res, 415, 'unsupported_media_type');
      expect(res.body.detail).toMatch(/application\/gzip/);
    }
    const untyped = await fetch(`${t.url}/v1/apps/${egg.slug}/sources`, { method: 'POST', headers: { authorization: `Bearer ${egg.owner.token}` } });
    expectProblem({ status: untyped.status, headers: untyped.headers, body: await untyped.json() }, 415, 'unsupported_media_type');

    const tar = Buffer.from('not gzip at all, a plain text file');
    const plain = await upload(t, egg.owner.token, egg.slug, tar);
    expectProblem(plain, 415, 'unsupported_media_type');
    expect(plain.body.detail).toMatch(/not gzip/);
    expectProblem(await upload(t, egg.owner.token, egg.slug, Buffer.from([0x1f])), 415, 'unsupported_media_type');
    expectProblem(await upload(t, egg.owner.token, egg.slug, Buffer.alloc(0)), 415, 'unsupported_media_type');
    expect(await storedRows(t)).toEqual(before);
  });

  it('answers the release headers like every REST endpoint: an unknown API-Version is a 400, an unknown query parameter a 422', async () => {
    const bad = await upload(t, egg.owner.token, egg.slug, helloEgg('v'), { 'api-version': '2020-01-01' });
    expectProblem(bad, 400, 'bad_request');
    const pinned = await upload(t, egg.owner.token, egg.slug, helloEgg('pinned'), { 'api-version': '2026-01-15' });
    expect(pinned.status).toBe(201);
    expect(pinned.headers.get('api-version')).toBe('2026-01-15');
    const query = await upload(t, egg.owner.token, egg.slug, helloEgg('q'), {}, '?force=true');
    expectProblem(query, 422, 'validation_failed');
    expect(query.body.errors).toEqual([{ field: 'force', message: 'is not a known query parameter' }]);
  });

  it('stores at most 4 uploads at once per gateway: a fifth is a 429 with Retry-After, and a slot frees when an upload ends', async () => {
    const head = helloEgg('slow').subarray(0, 10);
    const aborts: AbortController[] = [];
    const started: Array<Promise<unknown>> = [];
    for (let i = 0; i < 4; i++) {
      const abort = new AbortController();
      aborts.push(abort);
      let sent = false;
      // A gzip header, then nothing: the upload stays open, holding its slot.
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (!sent) {
            sent = true;
            controller.enqueue(head);
            return;
          }
          return new Promise<void>(() => undefined);
        },
      });
      started.push(
        fetch(`${t.url}/v1/apps/${egg.slug}/sources`, {
          method: 'POST',
          headers: { 'content-type': 'application/gzip', authorization: `Bearer ${egg.owner.token}` },
          body,
          duplex: 'half',
          signal: abort.signal,
        }).catch(() => undefined),
      );
    }
    const sources = t.gateway.services.sources as unknown as { uploading: number };
    for (let i = 0; sources.uploading < 4; i++) {
      if (i > 400) throw new Error('the four uploads never all started');
      await new Promise((r) => setTimeout(r, 10));
    }
    const fifth = await upload(t, egg.owner.token, egg.slug, helloEgg('fifth'));
    expectProblem(fifth, 429, 'rate_limited');
    expect(fifth.headers.get('retry-after')).toBe('1');

    for (const abort of aborts) abort.abort();
    await Promise.all(started);
    for (let i = 0; sources.uploading > 0; i++) {
      if (i > 400) throw new Error('the aborted uploads never let go of their slots');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await upload(t, egg.owner.token, egg.slug, helloEgg('after the rush'))).status).toBe(201);
  });

  it('opens a stored source as a stream read chunk by chunk from the database: the bytes that went in come out', async () => {
    // Random bytes do not compress: a source of several 1 MiB chunks.
    const bytes = tarGz([
      { path: 'blob.bin', body: randomBytes(2_600_000) },
      { path: 'README', body: 'big' },
    ]);
    const res = await upload(t, egg.owner.token, egg.slug, bytes);
    expect(res.status).toBe(201);
    const [row] = await t.gateway.ds.query(
      'SELECT chunk_count, (SELECT count(*)::int FROM source_chunks WHERE source_id = $1) AS n FROM sources WHERE id = $1',
      [res.body.id],
    );
    expect(row).toEqual({ chunk_count: 3, n: 3 });
    const { source, stream } = await t.gateway.services.sources.open(res.body.id);
    expect(source.sha256).toBe(sha256(bytes));
    expect((await drain(stream)).equals(bytes)).toBe(true);
  });

  it('a stream whose stored bytes were tampered with fails instead of handing them on', async () => {
    const res = await upload(t, egg.owner.token, egg.slug, helloEgg('tamper'));
    await t.gateway.ds.query(`UPDATE source_chunks SET data = $2 WHERE source_id = $1 AND seq = 0`, [res.body.id, gzipSync(Buffer.from('other'))]);
    const { stream } = await t.gateway.services.sources.open(res.body.id);
    await expect(drain(stream)).rejects.toThrow(/do not match its SHA-256/);
    await expect(t.gateway.services.sources.open('src_01kzzzzzzzzzzzzzzzzzzzzzzz')).rejects.toThrow(/not found/);
  });
});

/** HATCHERY_SOURCE_MAX_MB bounds the compressed upload: 413, early, and nothing stored. */
describe('the upload size limit', () => {
  let t: TestGateway;
  let egg: EggWithPeople;
  const MB = 1024 * 1024;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SOURCE_MAX_MB: '1' });
    egg = await makeEggWithPeople(t);
  });
  afterAll(() => t.stop());

  it('refuses a body whose Content-Length is over the limit with 413 naming `source`, before reading it', async () => {
    const bytes = tarGz([{ path: 'big.bin', body: randomBytes(MB + 4096) }]);
    expect(bytes.length).toBeGreaterThan(MB);
    const res = await upload(t, egg.owner.token, egg.slug, bytes);
    expectProblem(res, 413, 'payload_too_large');
    expect(res.body.errors).toEqual([{ field: 'source', message: expect.stringMatching(/1 MB \(HATCHERY_SOURCE_MAX_MB\)/) }]);
    expect(await storedRows(t)).toEqual({ sources: 0, chunks: 0 });
  });

  it('counts a body of unknown length as it arrives: past the limit it is refused while the client is still sending', async () => {
    const head = tarGz([{ path: 'big.bin', body: randomBytes(MB + 4096) }]);
    let pulls = 0;
    // Sends more than the limit, then holds the body open: only a server counting as it reads can answer.
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls * 65536 < head.length) controller.enqueue(head.subarray(pulls * 65536, ++pulls * 65536));
        else return new Promise<void>(() => undefined);
      },
    });
    const res = await upload(t, egg.owner.token, egg.slug, body);
    expectProblem(res, 413, 'payload_too_large');
    expect(res.headers.get('connection')).toBe('close');
    expect(await storedRows(t)).toEqual({ sources: 0, chunks: 0 });
  });

  /**
   * A raw connection that declares `declared` bytes and sends the head: what the server answers,
   * and the socket (half-open allowed, so the server's FIN does not end our side).
   */
  async function refusedUpload(declared: number) {
    const port = Number(new URL(t.url).port);
    const serverSide = new Promise<net.Socket>((r) => t.gateway.server.once('connection', r));
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const errors: Error[] = [];
    socket.on('error', (e) => errors.push(e));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const serverEnded = new Promise<void>((r) => socket.once('end', r));
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.write(
      `POST /v1/apps/${egg.slug}/sources HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/gzip\r\n` +
        `content-length: ${declared}\r\nauthorization: Bearer ${egg.owner.token}\r\n\r\n`,
    );
    // The server answers from Content-Length alone, then closes its sending side.
    await serverEnded;
    return { socket, serverSide: await serverSide, errors, closed, response: () => received };
  }

  const write = (socket: net.Socket, chunk: Buffer) => new Promise<void>((resolve, reject) => socket.write(chunk, (err) => (err ? reject(err) : resolve())));

  it('reads and drops the rest of a refused body: a client still sending gets the 413, never a reset (staged close)', async () => {
    const declared = 3 * MB;
    const { socket, errors, closed, response } = await refusedUpload(declared);
    expect(response()).toMatch(/^HTTP\/1\.1 413 /);
    expect(response()).toMatch(/\r\nconnection: close\r\n/i);
    // A server that closed at once would answer these bytes with a reset: EPIPE or ECONNRESET here.
    for (let sent = 0; sent < declared; sent += 64 * 1024) await write(socket, randomBytes(64 * 1024));
    socket.end();
    await closed;
    expect(errors).toEqual([]);
    expect(await storedRows(t)).toEqual({ sources: 0, chunks: 0 });
  });

  it('cuts a refused upload that goes silent, after LINGER_IDLE_MS', async () => {
    const { socket, serverSide, response } = await refusedUpload(3 * MB);
    expect(response()).toMatch(/^HTTP\/1\.1 413 /);
    const silentSince = Date.now();
    // We never close our side and it sees nothing (the FIN came with the answer): the server's socket goes.
    await new Promise((r) => (serverSide.destroyed ? r(null) : serverSide.once('close', r)));
    expect(Date.now() - silentSince).toBeGreaterThanOrEqual(LINGER_IDLE_MS - 100);
    socket.destroy();
  });

  it('takes an upload just under the limit', async () => {
    const res = await upload(t, egg.owner.token, egg.slug, tarGz([{ path: 'a.bin', body: randomBytes(MB - 64 * 1024) }]));
    expect(res.status).toBe(201);
  });
});
