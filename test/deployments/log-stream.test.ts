import { Deployment, DeploymentStatus } from '../../src/modules/deployments/deployment.entity';
import type { DeploymentEvent } from '../../src/modules/deployments/deployments.topics';
import { LogLine, LogType } from '../../src/modules/deployments/log-line.entity';
import { logBatchStream, LogSource, statusStream } from '../../src/modules/deployments/log-stream';

/**
 * The replay-then-live seam on its own (src/modules/deployments/log-stream.ts): storage and
 * events are in memory, so each interleaving is written down exactly.
 */

const at = (seq: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, seq));
const line = (seq: number, type = LogType.BUILD): LogLine =>
  Object.assign(new LogLine(), { deploymentId: 'dep_x', seq, type, timestamp: at(seq), message: `line ${seq}` });
const deployment = (revision: number, status = DeploymentStatus.BUILDING): Deployment => Object.assign(new Deployment(), { id: 'dep_x', revision, status });

/** Events the test pushes, read by the stream in order; `end()` closes the stream's listening. */
function eventQueue() {
  const queue: DeploymentEvent[] = [];
  let waiting: ((r: IteratorResult<DeploymentEvent>) => void) | null = null;
  let closed = false;
  return {
    push(e: DeploymentEvent) {
      if (waiting) {
        const w = waiting;
        waiting = null;
        w({ value: e, done: false });
      } else queue.push(e);
    },
    get closed() {
      return closed;
    },
    events: {
      next: (): Promise<IteratorResult<DeploymentEvent>> => {
        if (queue.length) return Promise.resolve({ value: queue.shift()!, done: false });
        if (closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((r) => (waiting = r));
      },
      close: () => {
        closed = true;
        waiting?.({ value: undefined, done: true });
        return Promise.resolve();
      },
    },
  };
}

/** A stream over `store` (every line, oldest first), pages of `pageSize`. */
function logSource(store: LogLine[], q: ReturnType<typeof eventQueue>, over: Partial<LogSource> = {}): LogSource {
  const type = over.type ?? null;
  const since = over.since ?? null;
  return {
    events: q.events,
    check: () => Promise.resolve(deployment(1)),
    read: (afterSeq) =>
      Promise.resolve(store.filter((l) => l.seq > afterSeq && (!type || l.type === type) && (!since || l.timestamp > since)).slice(0, over.pageSize ?? 3)),
    pageSize: 3,
    type,
    since,
    buildOver: false,
    ...over,
  };
}

/** Takes batches until `n` lines came, as seqs. */
async function take(stream: AsyncGenerator<LogLine[], void>, n: number): Promise<number[]> {
  const seqs: number[] = [];
  while (seqs.length < n) {
    const { value, done } = await stream.next();
    if (done) break;
    seqs.push(...value.map((l) => l.seq));
  }
  return seqs;
}

describe('the log stream seam', () => {
  it('replays storage page by page, then goes live, dropping live lines it already replayed', async () => {
    const store = [1, 2, 3, 4, 5].map((n) => line(n));
    const q = eventQueue();
    const stream = logBatchStream(logSource(store, q));
    // Lines 4 to 7 were published while storage was being read: 4 and 5 come once.
    q.push({ kind: 'lines', lines: [4, 5, 6, 7].map((n) => line(n)) });
    expect(await take(stream, 7)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await stream.return();
    expect(q.closed).toBe(true);
  });

  it('fills a gap before a live batch from storage (lines overtaken on the way from another gateway)', async () => {
    const store = [1, 2].map((n) => line(n));
    const q = eventQueue();
    const stream = logBatchStream(logSource(store, q));
    expect(await take(stream, 2)).toEqual([1, 2]);
    // 3..5 were stored and published, but their event was lost; 6 arrives.
    store.push(...[3, 4, 5, 6].map((n) => line(n)));
    q.push({ kind: 'lines', lines: [line(6)] });
    expect(await take(stream, 4)).toEqual([3, 4, 5, 6]);
    await stream.return();
  });

  it('a live batch nothing filters out is the very array every subscriber got (shared executions)', async () => {
    const q = eventQueue();
    const stream = logBatchStream(logSource([], q));
    const batch = [1, 2].map((n) => line(n));
    q.push({ kind: 'lines', lines: batch });
    expect((await stream.next()).value).toBe(batch);
    await stream.return();
  });

  it('filters live lines by type and since, as storage is filtered', async () => {
    const q = eventQueue();
    const stream = logBatchStream(logSource([], q, { type: LogType.RUNTIME, since: at(2) }));
    q.push({ kind: 'lines', lines: [line(1, LogType.RUNTIME), line(2, LogType.RUNTIME), line(3, LogType.BUILD), line(4, LogType.RUNTIME)] });
    expect(await take(stream, 1)).toEqual([4]);
    await stream.return();
  });

  it('a BUILD stream ends with the build, and at once when the build was over', async () => {
    const q = eventQueue();
    const stream = logBatchStream(logSource([line(1)], q, { type: LogType.BUILD }));
    expect(await take(stream, 1)).toEqual([1]);
    q.push({ kind: 'status', deployment: deployment(2, DeploymentStatus.LIVE) });
    expect(await stream.next()).toEqual({ value: undefined, done: true });

    const over = logBatchStream(logSource([line(1)], eventQueue(), { type: LogType.BUILD, buildOver: true }));
    expect(await take(over, 5)).toEqual([1]);
  });

  it('after a resync it reads storage again; a deployment gone ends the stream; one out of sight throws', async () => {
    const store = [line(1)];
    const q = eventQueue();
    let visible = true;
    let exists = true;
    const stream = logBatchStream(
      logSource(store, q, {
        check: () => (visible ? Promise.resolve(exists ? deployment(1) : null) : Promise.reject(new Error('not found'))),
      }),
    );
    expect(await take(stream, 1)).toEqual([1]);
    store.push(line(2), line(3));
    q.push({ kind: 'resync' });
    expect(await take(stream, 2)).toEqual([2, 3]);
    visible = false;
    q.push({ kind: 'access' });
    await expect(stream.next()).rejects.toThrow('not found');

    const q2 = eventQueue();
    const gone = logBatchStream(logSource([], q2, { check: () => Promise.resolve(exists ? deployment(1) : null) }));
    exists = false;
    q2.push({ kind: 'access' });
    expect(await gone.next()).toEqual({ value: undefined, done: true });
  });
});

describe('the status stream', () => {
  it('the current state at once, then each newer revision; stale and repeated events are dropped; deleted ends it', async () => {
    const q = eventQueue();
    const stream = statusStream(deployment(2), { events: q.events, check: () => Promise.resolve(deployment(2)) });
    expect((await stream.next()).value?.revision).toBe(2);
    q.push({ kind: 'status', deployment: deployment(1) });
    q.push({ kind: 'status', deployment: deployment(2) });
    q.push({ kind: 'status', deployment: deployment(3, DeploymentStatus.LIVE) });
    expect((await stream.next()).value).toMatchObject({ revision: 3, status: DeploymentStatus.LIVE });
    q.push({ kind: 'deleted', id: 'dep_x' });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
    expect(q.closed).toBe(true);
  });

  it('after a resync the row says where it stands: a newer revision is sent, once', async () => {
    const q = eventQueue();
    const stream = statusStream(deployment(1), { events: q.events, check: () => Promise.resolve(deployment(4, DeploymentStatus.FAILED)) });
    await stream.next();
    q.push({ kind: 'resync' });
    expect((await stream.next()).value).toMatchObject({ revision: 4 });
    q.push({ kind: 'resync' });
    q.push({ kind: 'deleted', id: 'dep_x' });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });
});
