import { Deployment, DeploymentStatus } from './deployment.entity';
import type { DeploymentEvent } from './deployments.topics';
import { LogLine, LogType } from './log-line.entity';

/**
 * The replay-then-live seam of a deployment's streams, free of storage and transport: what the
 * service listens to, reads and checks comes in as functions, so the seam is tested on its own
 * (test/deployments/log-stream.test.ts).
 */
export interface StreamSource {
  /** The deployment's events, listened to before anything was read. */
  events: AsyncIterator<DeploymentEvent, undefined> & { close(): Promise<void> };
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
}

/**
 * The events a stream acts on. Ends when the events end or the deployment is deleted, and when a
 * change of access leaves it out of the subscriber's sight; access changes that do not are dropped.
 */
async function* streamEvents(src: StreamSource): AsyncGenerator<Exclude<DeploymentEvent, { kind: 'deleted' | 'access' }>, void> {
  for (;;) {
    const { value, done } = await src.events.next();
    if (done || value.kind === 'deleted') return;
    if (value.kind === 'access') {
      if (!(await src.check())) return;
      continue;
    }
    yield value;
  }
}

/** The current state, then every change (by revision, so stale or repeated events are dropped); ends when deleted. */
export async function* statusStream(current: Deployment, src: StreamSource): AsyncGenerator<Deployment, void> {
  try {
    let last = current;
    yield current;
    for await (const value of streamEvents(src)) {
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
  const { type, since } = src;
  const wanted = (line: LogLine) => (!type || line.type === type) && (!since || line.timestamp > since);
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
    for await (const value of streamEvents(src)) {
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
      const kept = fresh.every(wanted) ? fresh : fresh.filter(wanted);
      if (kept.length) yield kept;
    }
  } finally {
    await src.events.close();
  }
}
