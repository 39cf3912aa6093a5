import { Deployment, DeploymentStatus } from './deployment.entity';
import { DirectSink, endWithConsumer } from '../../bus/pubsub';
import type { AppLogEvent, DeploymentEvent } from './deployments.topics';
import { LogLine, LogType } from './log-line.entity';

/**
 * The replay-then-live seam of a deployment's streams, free of storage and transport: what the
 * service listens to, reads and checks comes in as functions, so the seam is tested on its own
 * (test/deployments/log-stream.test.ts).
 */
export interface StreamSource {
  /** The deployment's events, listened to before anything was read. */
  events: AsyncIterator<DeploymentEvent, undefined> & { close(): Promise<void>; intercept?: ((event: DeploymentEvent) => boolean) | null };
  /** The deployment as it is now; null once deleted. Throws when the subscriber may no longer see it. */
  check(): Promise<Deployment | null>;
}

export interface LogSource extends StreamSource {
  /** Stored lines after `afterSeq` (already filtered by type and since), oldest first, at most `pageSize`. */
  read(afterSeq: number): Promise<LogLine[]>;
  pageSize: number;
  type: LogType | null;
  since: Date | null;
  /** Whether the build had ended when the stream began. */
  buildOver: boolean;
  /** A filter live lines must pass besides type and since (`q`); `read` applies it itself. */
  match?: ((line: LogLine) => boolean) | null;
  /**
   * Where live batches may go straight to the consumer (see `DIRECT` in src/bus/pubsub.ts): its
   * sink, once the consumer gives one. Only a batch that follows the last line streamed, and that
   * no filter cuts, goes this way; anything else (a gap, a status change, a deletion) goes through
   * the stream as before.
   */
  direct?: { sink: DirectSink<LogLine[]> | null };
}

/**
 * Events no stream here reads, for `listenNow`'s `skip`: a flush's `stored` event is for the other
 * gateways (which expand it from storage); this gateway's streams take the flush's `lines` event.
 * Skipped where they arrive, a busy log's flushes do not wake every waiting subscriber twice.
 */
export const notStreamed = (event: DeploymentEvent | AppLogEvent): boolean => event.kind === 'stored';

/**
 * The next event a stream acts on; null once the events end or the deployment is deleted, or when
 * a change of access leaves it out of the subscriber's sight (access changes that do not are
 * dropped). A function, not a generator a stream iterates: each event of each subscriber (2,000
 * of them following one busy log) would cross one more generator (logBatchStream does this
 * inline, without even this function's promise).
 */
async function nextEvent(src: StreamSource): Promise<Exclude<DeploymentEvent, { kind: 'deleted' | 'access' }> | null> {
  for (;;) {
    const { value, done } = await src.events.next();
    if (done || value.kind === 'deleted') return null;
    if (value.kind === 'access') {
      if (!(await src.check())) return null;
      continue;
    }
    return value;
  }
}

/** The current state, then every change (by revision, so stale or repeated events are dropped); ends when deleted. */
export async function* statusStream(current: Deployment, src: StreamSource): AsyncGenerator<Deployment, void> {
  try {
    let last = current;
    yield current;
    for (let value = await nextEvent(src); value; value = await nextEvent(src)) {
      if (value.kind === 'resync') {
        // Changes may have been missed: the row says where it stands.
        const now = await src.check();
        if (!now) return;
        if (now.revision <= last.revision) continue;
        last = now;
        yield last;
        continue;
      }
      if (value.kind !== 'status' || value.deployment.revision <= last.revision) continue;
      last = value.deployment;
      yield last;
    }
  } finally {
    await src.events.close();
  }
}

/**
 * Stored lines, then live ones, in batches: a page of storage, or the lines stored together by one
 * flush. Live lines at or below the last one streamed are dropped, and a gap before a live batch is
 * filled from storage (its writer stores before it publishes), so nothing is lost or repeated at
 * the seam. A BUILD stream ends with the build: every build line is stored before the status
 * changes. A live batch that nothing filters out is yielded as the very array every subscriber
 * got, so their executions can be shared (see `sharedSubscribe`).
 */
export async function* logBatchStream(src: LogSource): AsyncGenerator<LogLine[], void> {
  const { type, since, match } = src;
  const wanted = (line: LogLine) => (!type || line.type === type) && (!since || line.timestamp > since) && (!match || match(line));
  // Without a filter every line is wanted: a live batch is not looked through for each subscriber.
  const filtered = Boolean(type || since || match);
  let lastSeq = 0;
  /** Stored lines after the last one streamed and before `before`, a page per batch. */
  const stored = async function* (before = Infinity) {
    for (let more = true; more;) {
      const page = await src.read(lastSeq);
      more = page.length === src.pageSize;
      const kept = page.filter((line) => line.seq < before);
      if (kept.length < page.length) more = false;
      if (kept.length === 0) return;
      lastSeq = kept[kept.length - 1].seq;
      yield kept;
    }
  };
  try {
    yield* stored();
    if (type === LogType.BUILD && src.buildOver) return;
    const { direct } = src;
    // Offered only while the loop below waits for an event, so lastSeq is the last line the
    // consumer has had: a batch that follows it, whole, is the batch this loop would yield.
    if (direct) {
      src.events.intercept = (value) => {
        const sink = direct.sink;
        if (sink === null || value.kind !== 'lines') return false;
        const lines = value.lines;
        if (lines.length === 0 || lines[0].seq !== lastSeq + 1 || (filtered && !lines.every(wanted))) return false;
        if (!sink(lines)) return false;
        lastSeq = lines[lines.length - 1].seq;
        return true;
      };
    }
    for (;;) {
      // nextEvent's work, here: a busy log's every batch, for each subscriber, without a promise more.
      const { value, done } = await src.events.next();
      if (done || value.kind === 'deleted') return;
      if (value.kind === 'access') {
        if (!(await src.check())) return;
        continue;
      }
      if (value.kind === 'resync') {
        // Events may have been missed: lines are in storage, the end of the build in the row.
        const now = await src.check();
        if (now) yield* stored();
        if (!now || (type === LogType.BUILD && now.status !== DeploymentStatus.BUILDING)) return;
        continue;
      }
      if (value.kind === 'status') {
        if (type === LogType.BUILD && value.deployment.status !== DeploymentStatus.BUILDING) return;
        continue;
      }
      // The lines themselves come as `lines` events, on every gateway with subscribers.
      if (value.kind === 'stored') continue;
      const lines = value.lines;
      const first = lines.findIndex((line) => line.seq > lastSeq);
      if (first < 0) continue;
      if (lines[first].seq > lastSeq + 1) yield* stored(lines[first].seq);
      const fresh = first === 0 ? lines : lines.slice(first);
      lastSeq = fresh[fresh.length - 1].seq;
      const kept = !filtered || fresh.every(wanted) ? fresh : fresh.filter(wanted);
      if (kept.length) yield kept;
    }
  } finally {
    await src.events.close();
  }
}

export interface AppLogSource {
  /** The egg's log events, listened to before anything was read. */
  events: AsyncIterator<AppLogEvent, undefined> & { close(): Promise<void> };
  /** The snapshot of storage the replay reads: each deployment's newest stored seq when it began. */
  upTo: Map<string, number>;
  /** The stored lines up to the snapshot, matching, in time order, a page per batch. */
  replay(): AsyncGenerator<LogLine[], void>;
  /** Stored lines of a deployment with seq in (after, before), matching, oldest first, at most `pageSize`. */
  fill(deploymentId: string, after: number, before: number): Promise<LogLine[]>;
  pageSize: number;
  /**
   * After lines may have been missed or access changed: the newest stored seq of each deployment
   * now. Throws when the subscriber may no longer see the egg.
   */
  check(): Promise<Map<string, number>>;
  /** Whether a live line passes the stream's filters. */
  wanted(line: LogLine): boolean;
}

/**
 * An egg's stored lines, then live ones of whichever deployment writes them, in batches. The
 * replay reads a snapshot of storage (each deployment up to its newest seq when the stream began)
 * in time order; after it, each deployment is followed by seq on its own, a gap before a live
 * batch filled from storage, so across redeploys no line is lost or repeated. A deployment that
 * appears later is followed from its first line.
 */
export async function* appLogBatchStream(src: AppLogSource): AsyncGenerator<LogLine[], void> {
  const last = new Map(src.upTo);
  /** Stored lines of a deployment after the last one streamed and before `before`. */
  const stored = async function* (deploymentId: string, before = Infinity) {
    for (;;) {
      const from = last.get(deploymentId) ?? 0;
      if (from >= before - 1) return;
      const page = await src.fill(deploymentId, from, before);
      if (page.length) {
        yield page;
        last.set(deploymentId, page[page.length - 1].seq);
      }
      if (page.length < src.pageSize) {
        // Nothing more matches up to `before`: the lines between are filtered out, or not stored yet.
        if (Number.isFinite(before)) last.set(deploymentId, before - 1);
        return;
      }
    }
  };
  try {
    yield* src.replay();
    for (;;) {
      const { value, done } = await src.events.next();
      if (done) return;
      if (value.kind === 'resync') {
        // Lines may have been missed (or the subscriber lost the egg: check throws): storage has them.
        const newest = await src.check();
        for (const [deploymentId, seq] of newest) if (seq > (last.get(deploymentId) ?? 0)) yield* stored(deploymentId, seq + 1);
        continue;
      }
      // The lines themselves come as `lines` events, on every gateway with subscribers.
      if (value.kind === 'stored') continue;
      const lines = value.lines;
      const deploymentId = lines[0].deploymentId;
      const from = last.get(deploymentId) ?? 0;
      const first = lines.findIndex((line) => line.seq > from);
      if (first < 0) continue;
      if (lines[first].seq > from + 1) yield* stored(deploymentId, lines[first].seq);
      const fresh = first === 0 ? lines : lines.slice(first);
      last.set(deploymentId, fresh[fresh.length - 1].seq);
      const kept = fresh.filter((line) => src.wanted(line));
      if (kept.length) yield kept;
    }
  } finally {
    await src.events.close();
  }
}

/** A stream of batches as one line at a time; ending it (the consumer leaving) ends the batches. */
export function oneByOne(batches: AsyncIterableIterator<LogLine[]>): AsyncIterableIterator<LogLine> {
  const lines = (async function* () {
    for await (const batch of batches) yield* batch;
  })();
  return endWithConsumer(lines, { close: async () => void (await batches.return?.()) });
}
