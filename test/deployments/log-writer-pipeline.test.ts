import { createPubSub } from '../../src/bus/pubsub';
import { systemClock } from '../../src/clock';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { LogWriter } from '../../src/modules/deployments/log-writer';
import type { Topics } from '../../src/modules/topics';
import { startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle } from '../support/factories';

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

  it('sends batch 2’s INSERT before batch 1 is published; publishes 1 then 2, each after it is stored', async () => {
    const user = await makeUser(t.gateway);
    const d = await deploy(t.url, user, (await makeApp(t.url, user)).slug);
    expect(await settle(t.url, user, d.id)).toBe('LIVE');

    // The gateway's database, with every statement sent written down in order.
    const events: string[] = [];
    const ds = new Proxy(t.gateway.ds, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
        return (sql: string, params?: unknown[]) => {
          if (/INSERT INTO log_lines/.test(sql)) events.push(`insert ${(params?.[5] as string[] | undefined)?.join(',')}`);
          return target.query(sql, params);
        };
      },
    });
    const pubsub = createPubSub<Topics>();
    const writer = new LogWriter(ds, pubsub, systemClock);
    pubsub.target.addEventListener(`DEPLOYMENT:${d.id}`, (e) => {
      const event = (e as CustomEvent<{ kind: string; lines?: Array<{ message: string }> }>).detail;
      if (event.kind === 'lines') events.push(`publish ${event.lines!.map((l) => l.message).join(',')}`);
    });
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
    const user = await makeUser(t.gateway);
    const d = await deploy(t.url, user, (await makeApp(t.url, user)).slug);
    expect(await settle(t.url, user, d.id)).toBe('LIVE');
    let failNext = true;
    const ds = new Proxy(t.gateway.ds, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
        return (sql: string, params?: unknown[]) => {
          if (failNext && /INSERT INTO log_lines/.test(sql)) {
            failNext = false;
            return Promise.reject(new Error('the database said no'));
          }
          return target.query(sql, params);
        };
      },
    });
    const pubsub = createPubSub<Topics>();
    const errors: unknown[] = [];
    const writer = new LogWriter(ds, pubsub, systemClock, { onError: (err) => errors.push(err) });
    const published: string[] = [];
    pubsub.target.addEventListener(`DEPLOYMENT:${d.id}`, (e) => {
      const event = (e as CustomEvent<{ kind: string; lines?: Array<{ message: string }> }>).detail;
      if (event.kind === 'lines') published.push(...event.lines!.map((l) => l.message));
    });
    await writer.open(d.id);
    writer.append(d.id, LogType.RUNTIME, 'lost');
    const first = writer.flush();
    writer.append(d.id, LogType.RUNTIME, 'kept');
    await Promise.all([first, writer.flush()]);
    expect(published).toEqual(['kept']);
    expect(errors).toEqual([expect.objectContaining({ message: 'the database said no' })]);
  });
});
