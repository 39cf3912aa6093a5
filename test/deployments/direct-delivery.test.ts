import { createPubSub, DIRECT, deliversDirectly, listenNow } from '../../src/bus/pubsub';
import { Deployment, DeploymentStatus } from '../../src/modules/deployments/deployment.entity';
import type { DeploymentTopics } from '../../src/modules/deployments/deployments.topics';
import { LogLine, LogType } from '../../src/modules/deployments/log-line.entity';
import { logBatchStream, LogSource, notStreamed } from '../../src/modules/deployments/log-stream';

/**
 * Live batches handed straight to the consumer (`DIRECT`, src/bus/pubsub.ts): while the stream
 * waits for an event, a batch that follows the last line streamed goes to the consumer's sink
 * from within the publisher's dispatch; anything else goes through the stream as before, and the
 * two ways together keep every line once, in order.
 */

const at = (seq: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, seq));
const line = (seq: number, type = LogType.RUNTIME): LogLine =>
  Object.assign(new LogLine(), { deploymentId: 'dep_x', seq, type, timestamp: at(seq), message: `line ${seq}` });
const lines = (...seqs: number[]) => seqs.map((n) => line(n));

function setup(store: LogLine[], over: Partial<LogSource> = {}) {
  const pubsub = createPubSub<DeploymentTopics>();
  // As the service listens (DeploymentsService.listenThenGet).
  const events = listenNow(pubsub, 'DEPLOYMENT', 'dep_x', 100, (e) => (e.kind === 'lines' ? e.lines.length : 1), notStreamed);
  // How often the stream asks for an event: each time it woke.
  let asked = 0;
  const next = events.next.bind(events);
  events.next = () => {
    asked++;
    return next();
  };
  const direct: NonNullable<LogSource['direct']> = { sink: null };
  const type = over.type ?? null;
  const stream = logBatchStream({
    events,
    direct,
    check: () => Promise.resolve(Object.assign(new Deployment(), { id: 'dep_x', revision: 1, status: DeploymentStatus.LIVE })),
    read: (afterSeq) => Promise.resolve(store.filter((l) => l.seq > afterSeq && (!type || l.type === type)).slice(0, 3)),
    pageSize: 3,
    type,
    since: null,
    buildOver: true,
    ...over,
  });
  const publish = (batch: LogLine[]) => pubsub.publish('DEPLOYMENT', 'dep_x', { kind: 'lines', lines: batch });
  const publishStored = (after: number, upTo: number) => pubsub.publish('DEPLOYMENT', 'dep_x', { kind: 'stored', after, upTo });
  /** What the sink took, batch by batch; it takes batches while `accept` says so. */
  const taken: LogLine[][] = [];
  let accept = true;
  direct.sink = (batch) => {
    if (!accept) return false;
    taken.push(batch);
    return true;
  };
  return {
    stream,
    events,
    publish,
    publishStored,
    asked: () => asked,
    taken,
    seqs: () => taken.flat().map((l) => l.seq),
    accept: (v: boolean) => (accept = v),
    /** Ends the stream as its consumer leaving does (endWithConsumer): the events first, settling a wait. */
    end: async () => {
      await events.close();
      await stream.return();
    },
  };
}

/** Lets the stream reach its wait for the next event (a few microtask turns). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('direct delivery of live log batches', () => {
  it('hands a following batch to the sink, the very array published, without the stream yielding it', async () => {
    const s = setup(lines(1, 2));
    expect((await s.stream.next()).value!.map((l) => l.seq)).toEqual([1, 2]);
    const next = s.stream.next(); // the consumer waits for the next batch
    await settle();
    const batch = lines(3, 4);
    s.publish(batch);
    expect(s.taken).toHaveLength(1);
    expect(s.taken[0]).toBe(batch); // shared: one execution for every subscriber
    s.publish(lines(5));
    expect(s.seqs()).toEqual([3, 4, 5]);
    // The stream's own wait is still open: it yields only what the sink declines.
    s.accept(false);
    s.publish(lines(6, 7));
    expect((await next).value!.map((l) => l.seq)).toEqual([6, 7]);
    await s.end();
  });

  it('never takes a batch while the consumer handles an earlier one: those queue and come through the stream, in order', async () => {
    const s = setup([]);
    const first = s.stream.next();
    await settle();
    s.accept(false);
    s.publish(lines(1)); // declined: the stream's wait settles with it
    s.accept(true);
    // The consumer has not asked for more yet (it is "sending" batch 1): these are queued, not offered.
    s.publish(lines(2));
    s.publish(lines(3));
    expect(s.taken).toHaveLength(0);
    expect((await first).value!.map((l) => l.seq)).toEqual([1]);
    expect((await s.stream.next()).value!.map((l) => l.seq)).toEqual([2]);
    expect((await s.stream.next()).value!.map((l) => l.seq)).toEqual([3]);
    // Caught up and waiting again: the next batch goes straight to the sink.
    const waiting = s.stream.next();
    await settle();
    s.publish(lines(4));
    expect(s.seqs()).toEqual([4]);
    await s.end();
    expect(await waiting).toEqual({ value: undefined, done: true });
  });

  it('a batch after a gap goes through the stream, which fills the gap from storage first', async () => {
    const store = [line(1)];
    const s = setup(store);
    expect((await s.stream.next()).value!.map((l) => l.seq)).toEqual([1]);
    const next = s.stream.next();
    await settle();
    store.push(line(2));
    s.publish(lines(2));
    expect(s.seqs()).toEqual([2]);
    // 3 was stored, its event lost on the way; 4 arrives: not offered (it does not follow 2).
    store.push(line(3), line(4));
    s.publish(lines(4));
    expect(s.seqs()).toEqual([2]);
    expect((await next).value!.map((l) => l.seq)).toEqual([3]);
    expect((await s.stream.next()).value!.map((l) => l.seq)).toEqual([4]);
    // Caught up again: straight to the sink.
    const waiting = s.stream.next();
    await settle();
    s.publish(lines(5));
    expect(s.seqs()).toEqual([2, 5]);
    await s.end();
    expect(await waiting).toEqual({ value: undefined, done: true });
  });

  it('a batch partly streamed already, or one a filter cuts, goes through the stream', async () => {
    const s = setup([], { type: LogType.RUNTIME });
    const next = s.stream.next();
    await settle();
    s.publish(lines(1, 2));
    expect(s.seqs()).toEqual([1, 2]);
    // 2 again with 3: the stream drops 2 and yields 3.
    s.publish(lines(2, 3));
    expect((await next).value!.map((l) => l.seq)).toEqual([3]);
    const next2 = s.stream.next();
    await settle();
    // A build line in a RUNTIME stream: the filter cuts the batch, the stream yields what is left.
    s.publish([line(4), line(5, LogType.BUILD), line(6)]);
    expect((await next2).value!.map((l) => l.seq)).toEqual([4, 6]);
    expect(s.seqs()).toEqual([1, 2]);
    await s.end();
  });

  it('a `stored` event (published after each flush’s lines) does not wake the stream', async () => {
    const s = setup([]);
    const next = s.stream.next();
    let settled = false;
    void next.then(() => (settled = true));
    await settle();
    s.accept(false);
    const before = s.asked();
    s.publishStored(0, 2);
    await settle();
    expect(settled).toBe(false);
    expect(s.asked()).toBe(before); // not woken
    s.publish(lines(1, 2));
    expect((await next).value!.map((l) => l.seq)).toEqual([1, 2]);
    await s.end();
  });

  it('status changes and deletion go through the stream; once closed nothing is offered', async () => {
    const pubsub = createPubSub<DeploymentTopics>();
    const events = listenNow(pubsub, 'DEPLOYMENT', 'dep_y');
    const offered: unknown[] = [];
    events.intercept = (e) => {
      offered.push(e);
      return false;
    };
    const next = events.next();
    pubsub.publish('DEPLOYMENT', 'dep_y', { kind: 'deleted', id: 'dep_y' });
    expect(offered).toHaveLength(1);
    expect((await next).value).toEqual({ kind: 'deleted', id: 'dep_y' });
    await events.close();
    pubsub.publish('DEPLOYMENT', 'dep_y', { kind: 'lines', lines: lines(1) });
    expect(offered).toHaveLength(1);
  });

  it('an intercept that throws takes nothing: the wait gets the event, the publisher carries on', async () => {
    const pubsub = createPubSub<DeploymentTopics>();
    const events = listenNow(pubsub, 'DEPLOYMENT', 'dep_z');
    events.intercept = () => {
      throw new Error('sink broke');
    };
    const next = events.next();
    expect(() => pubsub.publish('DEPLOYMENT', 'dep_z', { kind: 'lines', lines: lines(1) })).not.toThrow();
    expect((await next).value).toEqual({ kind: 'lines', lines: lines(1) });
    await events.close();
  });

  it('a stream with DIRECT is told apart from one without', () => {
    expect(deliversDirectly({ [DIRECT]: () => undefined })).toBe(true);
    expect(deliversDirectly((async function* () {})())).toBe(false);
    expect(deliversDirectly(null)).toBe(false);
  });
});
