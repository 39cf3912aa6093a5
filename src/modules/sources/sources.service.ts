import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../clock';
import { NotFound, PayloadTooLarge, RateLimited, UnsupportedMediaType, ValidationFailed } from '../../errors';
import { newId } from '../../ids';
import { Page, pageByIdDesc } from '../../db/paging';
import type { Actor } from '../accounts/actor';
import { AppsService } from '../apps/apps.service';
import { ArchiveCheck } from './archive';
import { Source } from './source.entity';

/** Bytes per `source_chunks` row: big enough for few round trips, small enough to hold in memory. */
export const CHUNK_BYTES = 1024 * 1024;
/** Uploads this gateway stores at once; each holds a database connection while its body arrives. */
export const UPLOADS_AT_ONCE = 4;

export interface SourcesOptions {
  /** Largest upload, compressed and once unpacked (HATCHERY_SOURCE_MAX_MB). */
  maxBytes: number;
  /** How long a source no deployment references is kept (each egg's newest is always kept). */
  retentionMs: number;
  chunkBytes?: number;
}

/** Sources the prune job removes per transaction. */
const PRUNE_BATCH = 500;

/** Thrown inside the upload's transaction to roll it back when the same bytes are already stored. */
class AlreadyStored extends Error {}

/**
 * Sources: .tar.gz uploads of an egg's folder, stored in PostgreSQL in ~1 MiB chunks (never
 * whole in memory, readable by every gateway), content-addressed per egg. The upload is checked
 * while it streams in (ArchiveCheck) and written in one transaction, rolled back on any refusal.
 */
export class SourcesService {
  private uploading = 0;
  private readonly chunkBytes: number;

  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly opts: SourcesOptions,
  ) {
    this.chunkBytes = opts.chunkBytes ?? CHUNK_BYTES;
  }

  get maxBytes(): number {
    return this.opts.maxBytes;
  }

  /**
   * Stores `body` (a .tar.gz) as a source of the egg: `created` false when the egg already has
   * these exact bytes (then it is that source). `declaredBytes` is the Content-Length, if sent.
   */
  async upload(actor: Actor, slug: string, body: AsyncIterable<Buffer | string>, declaredBytes: number | null): Promise<{ source: Source; created: boolean }> {
    const app = await this.apps.getVisible(actor, slug);
    if (declaredBytes !== null && declaredBytes > this.opts.maxBytes) throw this.tooLarge();
    if (this.uploading >= UPLOADS_AT_ONCE) throw new RateLimited(`This gateway is storing ${UPLOADS_AT_ONCE} uploads already; retry shortly`, 1);
    this.uploading++;
    const check = new ArchiveCheck(this.opts.maxBytes);
    let sha256 = '';
    try {
      const source = await this.ds.transaction(async (tx) => {
        const id = newId('src', this.clock.now());
        const hash = createHash('sha256');
        let size = 0;
        let seq = 0;
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        let magic = Buffer.alloc(0);
        const flush = async () => {
          if (pendingBytes === 0) return;
          const data = Buffer.concat(pending, pendingBytes);
          pending = [];
          pendingBytes = 0;
          await tx.query('INSERT INTO source_chunks (source_id, seq, data) VALUES ($1, $2, $3)', [id, seq++, data]);
        };
        for await (const piece of body) {
          const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
          if (chunk.length === 0) continue;
          if (magic.length < GZIP_MAGIC.length) {
            magic = Buffer.concat([magic, chunk.subarray(0, GZIP_MAGIC.length - magic.length)]);
            if (!magic.equals(GZIP_MAGIC.subarray(0, magic.length))) throw notGzip();
          }
          size += chunk.length;
          if (size > this.opts.maxBytes) throw this.tooLarge();
          hash.update(chunk);
          await check.write(chunk);
          if (check.refusal) throw refused(check.refusal);
          pending.push(chunk);
          pendingBytes += chunk.length;
          if (pendingBytes >= this.chunkBytes) await flush();
        }
        if (magic.length < GZIP_MAGIC.length) throw notGzip();
        await check.end();
        if (check.refusal) throw refused(check.refusal);
        await flush();
        sha256 = hash.digest('hex');
        const source = tx.create(Source, { id, appId: app.id, sha256, sizeBytes: size, chunkCount: seq, createdAt: this.clock.now() });
        // A concurrent upload of the same bytes waits here for the other to commit or roll back.
        const inserted = await tx.query<unknown[]>(
          `INSERT INTO sources (id, app_id, sha256, size_bytes, chunk_count, created_at) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (app_id, sha256) DO NOTHING RETURNING id`,
          [source.id, source.appId, source.sha256, source.sizeBytes, source.chunkCount, source.createdAt],
        );
        if (inserted.length === 0) throw new AlreadyStored();
        return source;
      });
      return { source, created: true };
    } catch (err) {
      if (!(err instanceof AlreadyStored)) throw err;
      return { source: await this.ds.getRepository(Source).findOneByOrFail({ appId: app.id, sha256 }), created: false };
    } finally {
      this.uploading--;
      check.destroy();
    }
  }

  /** A source of an egg the caller can see. */
  async get(actor: Actor, slug: string, id: string): Promise<Source> {
    const app = await this.apps.getVisible(actor, slug);
    const source = await this.ds.getRepository(Source).findOneBy({ id, appId: app.id });
    if (!source) throw new NotFound('Source', id);
    return source;
  }

  /** The egg's sources, newest first. */
  async list(actor: Actor, slug: string, page: { first?: number | null; after?: string | null }): Promise<Page<Source>> {
    const app = await this.apps.getVisible(actor, slug);
    return pageByIdDesc(this.ds.getRepository(Source).createQueryBuilder('s').where('s.app_id = :appId', { appId: app.id }), 'src', page);
  }

  /**
   * The source `id` of the egg `appId`, held (FOR KEY SHARE) until `tx` ends so that it cannot be
   * removed under a deployment about to reference it; a 422 on `source` when the egg has no such source.
   */
  async claimForDeploy(tx: EntityManager, appId: string, id: string): Promise<Source> {
    const [row] = await tx.query<Array<{ id: string }>>('SELECT id FROM sources WHERE id = $1 AND app_id = $2 FOR KEY SHARE', [id, appId]);
    if (!row) throw ValidationFailed.field('source', 'is not a source of this egg (upload one with POST /v1/apps/{slug}/sources)');
    return tx.findOneByOrFail(Source, { id });
  }

  /** The egg's newest source, if it has one, held like `claimForDeploy`. */
  async claimLatest(tx: EntityManager, appId: string): Promise<Source | null> {
    const [row] = await tx.query<Array<{ id: string }>>('SELECT id FROM sources WHERE app_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1 FOR KEY SHARE', [
      appId,
    ]);
    return row ? tx.findOneByOrFail(Source, { id: row.id }) : null;
  }

  /**
   * The bytes of a stored source (the .tar.gz as uploaded), read chunk by chunk from the database
   * as the consumer pulls; the stream fails if a chunk is missing or the bytes do not match the
   * source's SHA-256. NotFound when there is no such source.
   */
  async open(id: string): Promise<{ source: Source; stream: Readable }> {
    const source = await this.ds.getRepository(Source).findOneBy({ id });
    if (!source) throw new NotFound('Source', id);
    const ds = this.ds;
    async function* chunks(): AsyncGenerator<Buffer> {
      const hash = createHash('sha256');
      for (let seq = 0; seq < source!.chunkCount; seq++) {
        const [row] = await ds.query<Array<{ data: Buffer }>>('SELECT data FROM source_chunks WHERE source_id = $1 AND seq = $2', [id, seq]);
        if (!row) throw new Error(`source ${id}: chunk ${seq} of ${source!.chunkCount} is missing (pruned while read?)`);
        hash.update(row.data);
        yield row.data;
      }
      if (hash.digest('hex') !== source!.sha256) throw new Error(`source ${id}: the stored bytes do not match its SHA-256`);
    }
    return { source, stream: Readable.from(chunks(), { objectMode: false }) };
  }

  /**
   * Removes the sources no deployment or preview references that were uploaded more than the retention ago,
   * except each egg's newest (what a deploy without `source` builds). Candidates are locked first,
   * skipping any a deploy holds (claimForDeploy), and the references are counted again in a later
   * statement, so a deployment committed meanwhile keeps its source. Returns how many it removed.
   */
  async prune(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.opts.retentionMs);
    let removed = 0;
    for (;;) {
      const batch = await this.pruneBatch(cutoff);
      removed += batch.removed;
      if (batch.candidates < PRUNE_BATCH || batch.removed === 0) return removed;
    }
  }

  private pruneBatch(cutoff: Date): Promise<{ candidates: number; removed: number }> {
    return this.ds.transaction(async (tx) => {
      const candidates = await tx.query<Array<{ id: string }>>(
        `SELECT s.id FROM sources s
          WHERE s.created_at < $1
            AND EXISTS (SELECT 1 FROM sources n WHERE n.app_id = s.app_id AND (n.created_at, n.id) > (s.created_at, s.id))
            AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.source_id = s.id)
            AND NOT EXISTS (SELECT 1 FROM previews p WHERE p.source_id = s.id)
          ORDER BY s.id LIMIT ${PRUNE_BATCH}
          FOR UPDATE OF s SKIP LOCKED`,
        [cutoff],
      );
      if (candidates.length === 0) return { candidates: 0, removed: 0 };
      const [, removed] = await tx.query<[unknown[], number]>(
        `DELETE FROM sources s WHERE s.id = ANY($1)
            AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.source_id = s.id)
            AND NOT EXISTS (SELECT 1 FROM previews p WHERE p.source_id = s.id)`,
        [candidates.map((c) => c.id)],
      );
      return { candidates: candidates.length, removed };
    });
  }

  private tooLarge(): PayloadTooLarge {
    return new PayloadTooLarge('source', `The upload is larger than ${Math.round(this.opts.maxBytes / (1024 * 1024))} MB (HATCHERY_SOURCE_MAX_MB)`);
  }
}

const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
const notGzip = () => new UnsupportedMediaType('The body is not gzip data: send a .tar.gz of the egg’s folder');
const refused = (problem: string) => ValidationFailed.field('source', `the archive ${problem}`);
