import { createPubSub } from '../../src/bus/pubsub';
import { systemClock } from '../../src/clock';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { LogWriter } from '../../src/modules/deployments/log-writer';
import type { Topics } from '../../src/modules/topics';
import { startGateway, TestGateway } from '../support/gateway';
import { liveDeployment } from '../support/factories';

/**
 * The log writer stores batch after batch and publishes batch after batch, each once stored; the
 * next batch's INSERT is sent before the batch before it is handed to subscribers (PostgreSQL
 * stores it while this process publishes), so a busy log's lines wait for one of the two.
 */
describe('log writer: storing overlaps publishing', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  /** The gateway's database, each statement handed to `onQuery` first: what it returns (a promise) is answered instead, if anything. */
  const watched = (onQuery: (sql: string, params?: unknown[]) => Promise<unknown> | void) =>
    new Proxy(t.gateway.ds, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
        return (sql: string, params?: unknown[]) => onQuery(sql, params) ?? target.query(sql, params);
      },
    });
  /** A writer on `ds` and the messages of the `lines` events it publishes for `deploymentId`. */
  const writerOn = (ds: ReturnType<typeof watched>, deploymentId: string, published: (messages: string[]) => void, onError?: (err: unknown) => void) => {
    const pubsub = createPubSub<Topics>();
    pubsub.target.addEventListener(`DEPLOYMENT:${deploymentId}`, (e) => {
      const event = (e as CustomEvent<{ kind: string; lines?: Array<{ message: string }> }>).detail;
      if (event.kind === 'lines') published(event.lines!.map((l) => l.message));
    });
    return new LogWriter(ds, pubsub, systemClock, { onError });
  };

  it('sends batch 2’s INSERT before batch 1 is published; publishes 1 then 2, each after it is stored', async () => {
    const d = await liveDeployment(t);
    // The statements sent and the batches published, in order.
    const events: string[] = [];
    const ds = watched((sql, params) => {
      if (/INSERT INTO log_lines/.test(sql)) events.push(`insert ${(params?.[5] as string[] | undefined)?.join(',')}`);
    });
    const writer = writerOn(ds, d.id, (messages) => events.push(`publish ${messages.join(',')}`));
    await writer.open(d.id);

    writer.append(d.id, LogType.RUNTIME, 'one');
    const first = writer.flush();
    writer.append(d.id, LogType.RUNTIME, 'two');
    const second = writer.flush();
    await Promise.all([first, second]);
    expect(events).toEqual(['insert one', 'insert two', 'publish one', 'publish two']);
    const rows: Array<{ message: string }> = await t.gateway.ds.query(
      'SELECT message FROM log_lines WHERE deployment_id = $1 AND message IN ($2, $3) ORDER BY seq',
      [d.id, 'one', 'two'],
    );
    expect(rows.map((r) => r.message)).toEqual(['one', 'two']);
  });

  it('a batch that cannot be stored is not published; the next one is stored and published', async () => {
    const d = await liveDeployment(t);
    let failNext = true;
    const ds = watched((sql) => {
      if (failNext && /INSERT INTO log_lines/.test(sql)) {
        failNext = false;
        return Promise.reject(new Error('the database said no'));
      }
    });
    const errors: unknown[] = [];
    const published: string[] = [];
    const writer = writerOn(
      ds,
      d.id,
      (messages) => published.push(...messages),
      (err) => errors.push(err),
    );
    await writer.open(d.id);
    writer.append(d.id, LogType.RUNTIME, 'lost');
    const first = writer.flush();
    writer.append(d.id, LogType.RUNTIME, 'kept');
    await Promise.all([first, writer.flush()]);
    expect(published).toEqual(['kept']);
    expect(errors).toEqual([expect.objectContaining({ message: 'the database said no' })]);
  });
});
