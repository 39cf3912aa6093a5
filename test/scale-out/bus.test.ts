import { DataSource } from 'typeorm';
import { EventBus, LOCAL_ONLY, TopicCodec } from '../../src/bus/event-bus';
import { PgTransport } from '../../src/bus/pg-transport';
import { createDataSource } from '../../src/data-source';
import { createTestDatabase, TestDatabase } from '../support/db';

/**
 * The event bus itself, two instances over PostgreSQL LISTEN/NOTIFY on one database: events too
 * large for a notification travel by reference, events a codec keeps local stay local, and an
 * expanded event (loaded asynchronously on the receiving side) keeps its place in the order.
 */
describe('event bus over LISTEN/NOTIFY', () => {
  let db: TestDatabase;
  let ds: DataSource;
  const errors: unknown[] = [];
  const buses: EventBus[] = [];

  type Note = { kind: 'note'; text: string } | { kind: 'ref'; n: number } | { kind: 'local'; text: string } | { kind: 'resync' };
  const codec: TopicCodec<Note> = {
    encode: (e) => (e.kind === 'local' ? LOCAL_ONLY : e),
    decode: (d) => d as Note,
    resync: () => ({ kind: 'resync' }),
  };

  async function bus(channel: string): Promise<EventBus> {
    const b = new EventBus({ T: codec }, (err) => errors.push(err));
    await b.connect(new PgTransport(ds, { url: db.url, channel, onError: (err) => errors.push(err) }));
    buses.push(b);
    return b;
  }

  /** Everything `bus` delivers on `name`, and a way to wait for the n-th. */
  function listen(b: EventBus, name: string) {
    const got: Note[] = [];
    const waiters: Array<{ n: number; resolve: () => void }> = [];
    b.addEventListener(name, (e) => {
      got.push((e as CustomEvent<Note>).detail);
      for (const w of waiters.splice(0)) {
        if (got.length >= w.n) w.resolve();
        else waiters.push(w);
      }
    });
    return { got, waitFor: (n: number) => new Promise<void>((resolve) => (got.length >= n ? resolve() : waiters.push({ n, resolve }))) };
  }

  const send = (b: EventBus, name: string, note: Note) => b.dispatchEvent(new CustomEvent(name, { detail: note }));

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource(db.url);
    await ds.initialize();
  });
  afterAll(async () => {
    for (const b of buses) await b.close();
    await ds.destroy();
    await db.drop();
  });

  it('an event beyond a notification arrives whole, by reference, in order with its neighbours; a local one stays local', async () => {
    const [a, b] = [await bus('bus_test_1'), await bus('bus_test_1')];
    const heard = listen(b, 'T:1');
    const big = 'x'.repeat(20_000);
    send(a, 'T:1', { kind: 'note', text: 'first' });
    send(a, 'T:1', { kind: 'local', text: 'only on a' });
    send(a, 'T:1', { kind: 'note', text: big });
    send(a, 'T:1', { kind: 'note', text: 'last' });
    await heard.waitFor(3);
    expect(heard.got).toEqual([
      { kind: 'note', text: 'first' },
      { kind: 'note', text: big },
      { kind: 'note', text: 'last' },
    ]);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM event_payloads WHERE payload::text LIKE '%xxxxxxxxxx%'`);
    expect(n).toBe(1);
    expect(errors).toEqual([]);
  });

  it('an expanded event is preceded by what it expands to, and what came after it waits for the load', async () => {
    const [a, b] = [await bus('bus_test_2'), await bus('bus_test_2')];
    let release!: () => void;
    const loaded = new Promise<void>((r) => (release = r));
    b.expandWith('T', async (_name, value) => {
      const e = value as Note;
      if (e.kind !== 'ref') return [];
      await loaded;
      return [{ kind: 'note', text: `loaded ${e.n}` }];
    });
    const heard = listen(b, 'T:2');
    const unheard = listen(b, 'T:other'); // listened, so expanded too, but not part of this stream
    send(a, 'T:2', { kind: 'note', text: 'before' });
    send(a, 'T:2', { kind: 'ref', n: 7 });
    send(a, 'T:2', { kind: 'note', text: 'after' });
    await heard.waitFor(1);
    expect(heard.got).toEqual([{ kind: 'note', text: 'before' }]);
    release();
    await heard.waitFor(4);
    expect(heard.got).toEqual([
      { kind: 'note', text: 'before' },
      { kind: 'note', text: 'loaded 7' },
      { kind: 'ref', n: 7 },
      { kind: 'note', text: 'after' },
    ]);
    expect(unheard.got).toEqual([]);
  });

  it('an expansion that fails hands listeners a resync instead, and the stream goes on', async () => {
    const [a, b] = [await bus('bus_test_3'), await bus('bus_test_3')];
    b.expandWith('T', (_name, value) => ((value as Note).kind === 'ref' ? Promise.reject(new Error('storage unreachable')) : Promise.resolve([])));
    const heard = listen(b, 'T:3');
    const before = errors.length;
    send(a, 'T:3', { kind: 'ref', n: 1 });
    send(a, 'T:3', { kind: 'note', text: 'next' });
    await heard.waitFor(2);
    expect(heard.got).toEqual([{ kind: 'resync' }, { kind: 'note', text: 'next' }]);
    expect(errors.slice(before).map((e) => (e as Error).message)).toEqual(['storage unreachable']);
  });
});
