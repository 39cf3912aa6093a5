import { DataSource } from 'typeorm';
import { BuildResult, EggSpec, LogSink, ProvisionedResource } from '../../src/runtime/runtime.port';
import { SimulatedRuntime } from '../../src/runtime/simulated.runtime';
import { rest, TestGateway } from '../support/gateway';
import { makeEggWithPeople } from '../support/factories';
import { asError } from '../support/errors';

export const HOUR_MS = 3600 * 1000;
export const DAY_MS = 24 * HOUR_MS;
/** HATCHERY_PREVIEW_TTL_HOURS defaults to 168. */
export const TTL_MS = 7 * DAY_MS;
export { ISO_MS } from '../support/factories';

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** How one build of a preview ended in the runtime: its result, or aborted. */
export type BuildOutcome = { result: BuildResult } | { aborted: true };

/**
 * The simulated runtime, watched by the test: every build is numbered per preview slug
 * (`<egg>-pr-<n>`) and its end can be awaited; builds of `failing` slugs fail; builds of `held`
 * slugs wait until `release(slug)` (or until the gateway aborts them).
 */
export class PreviewRuntime extends SimulatedRuntime {
  readonly failing = new Set<string>();
  readonly held = new Set<string>();
  private readonly gates = new Map<string, Deferred<void>>();
  private readonly ends = new Map<string, Array<Deferred<BuildOutcome>>>();
  private readonly started = new Map<string, number>();

  constructor(ds: DataSource, buildMs = 150) {
    super(ds, { buildMs, runtimeLogMs: 60_000 });
  }

  async build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult> {
    const n = (this.started.get(spec.slug) ?? 0) + 1;
    this.started.set(spec.slug, n);
    const end = this.end(spec.slug, n);
    try {
      if (this.held.has(spec.slug)) await untilAborted(this.gate(spec.slug).promise, signal);
      const result: BuildResult = this.failing.has(spec.slug) ? { ok: false, reason: 'x' } : await super.build(spec, log, signal);
      end.resolve({ result });
      return result;
    } catch (err) {
      end.resolve({ aborted: true });
      throw err;
    }
  }

  /** How many builds of the preview slug have started. */
  builds(previewSlug: string): number {
    return this.started.get(previewSlug) ?? 0;
  }

  /** Resolves when the `n`th build (1-based) of the preview slug has returned from the runtime. */
  buildEnded(previewSlug: string, n: number): Promise<BuildOutcome> {
    return this.end(previewSlug, n).promise;
  }

  /** Lets the held builds of the slug go on, and its later builds run unheld. */
  release(previewSlug: string): void {
    this.held.delete(previewSlug);
    this.gate(previewSlug).resolve();
    this.gates.delete(previewSlug);
  }

  private teardownHold: { gate: Deferred<void>; started: Deferred<void> } | null = null;

  /** From now on, teardowns wait until `release()`; `started` resolves when the first one is waiting. */
  holdTeardowns(): { started: Promise<void>; release(): void } {
    const hold = { gate: deferred<void>(), started: deferred<void>() };
    this.teardownHold = hold;
    return {
      started: hold.started.promise,
      release: () => {
        if (this.teardownHold === hold) this.teardownHold = null;
        hold.gate.resolve();
      },
    };
  }

  async teardownPreview(resources: ProvisionedResource[]): Promise<void> {
    const hold = this.teardownHold;
    if (hold) {
      hold.started.resolve();
      await hold.gate.promise;
    }
    return super.teardownPreview(resources);
  }

  /** External ids of the preview resources that exist in the runtime. */
  externalIds(): string[] {
    return [...this.previewResources.keys()].sort();
  }

  private gate(slug: string): Deferred<void> {
    let g = this.gates.get(slug);
    if (!g) this.gates.set(slug, (g = deferred<void>()));
    return g;
  }

  private end(slug: string, n: number): Deferred<BuildOutcome> {
    let list = this.ends.get(slug);
    if (!list) this.ends.set(slug, (list = []));
    while (list.length < n) list.push(deferred<BuildOutcome>());
    return list[n - 1];
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(asError(signal.reason));
    const onAbort = () => reject(asError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => reject(asError(e)),
    );
  });
}

export const postPreview = (t: TestGateway, token: string | null, slug: string, body: unknown, headers: Record<string, string> = {}) =>
  rest(t.url, token, 'POST', `/v1/apps/${slug}/previews`, body, headers);

export const listPreviews = (t: TestGateway, token: string | null, slug: string) => rest(t.url, token, 'GET', `/v1/apps/${slug}/previews`);

export const deletePreview = (t: TestGateway, token: string | null, slug: string, pr: string | number) =>
  rest(t.url, token, 'DELETE', `/v1/apps/${slug}/previews/${pr}`);

/** The preview of `pr` as GET /v1/apps/:slug/previews lists it, or undefined. */
export async function listedPreview(t: TestGateway, token: string, slug: string, pr: number) {
  const res = await listPreviews(t, token, slug);
  expect(res.status).toBe(200);
  return (res.body.data as Array<Record<string, unknown>>).find((p) => p.pr_number === pr);
}

/**
 * The preview's status once its `n`th build has ended: awaits that build in the runtime, then
 * reads GET until the status update has landed (a bounded number of reads).
 */
export async function statusAfterBuild(t: TestGateway, sim: PreviewRuntime, token: string, slug: string, pr: number, n = 1): Promise<unknown> {
  await sim.buildEnded(`${slug}-pr-${pr}`, n);
  let status: unknown;
  for (let attempt = 0; attempt < 200; attempt++) {
    status = (await listedPreview(t, token, slug, pr))?.status;
    if (status !== 'building') return status;
    await new Promise((r) => setImmediate(r));
  }
  return status;
}

/** A fresh egg with an owner, a collaborator and a stranger. */
export const eggWithPeople = (t: TestGateway) => makeEggWithPeople(t);

export interface StoredPreview {
  id: string;
  pr_number: number;
  slug: string;
  url: string;
  status: string;
  expires_at: string;
  created_at: string;
}

/** The egg's preview rows (raw SQL), by pr number. */
export async function storedPreviews(t: TestGateway, slug: string): Promise<StoredPreview[]> {
  const rows: Array<Omit<StoredPreview, 'expires_at' | 'created_at'> & { expires_at: Date; created_at: Date }> = await t.gateway.ds.query(
    `SELECT p.id, p.pr_number, p.slug, p.url, p.status, p.expires_at, p.created_at
       FROM previews p JOIN apps a ON a.id = p.app_id WHERE a.slug = $1 ORDER BY p.pr_number`,
    [slug],
  );
  return rows.map((r) => ({ ...r, expires_at: r.expires_at.toISOString(), created_at: r.created_at.toISOString() }));
}

export interface StoredResource {
  preview_id: string;
  kind: string;
  name: string;
  external_id: string;
}

/** The preview_resources rows of the previews with these ids (raw SQL). */
export async function storedResources(t: TestGateway, previewIds: string[]): Promise<StoredResource[]> {
  return t.gateway.ds.query('SELECT preview_id, kind, name, external_id FROM preview_resources WHERE preview_id = ANY($1) ORDER BY preview_id, kind', [
    previewIds,
  ]);
}

/** The preview_resources rows of every preview of the egg (raw SQL). */
export async function eggResources(t: TestGateway, slug: string): Promise<StoredResource[]> {
  return t.gateway.ds.query(
    `SELECT r.preview_id, r.kind, r.name, r.external_id FROM preview_resources r
       JOIN previews p ON p.id = r.preview_id JOIN apps a ON a.id = p.app_id
      WHERE a.slug = $1 ORDER BY r.preview_id, r.kind`,
    [slug],
  );
}
