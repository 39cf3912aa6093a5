import { Client, types } from 'pg';
import { createDataSource } from '../../src/data-source';
import { parseTimestamptz } from '../../src/db/timestamps';
import { createTestDatabase, TestDatabase } from '../support/db';

/**
 * The gateway's `timestamptz` reader (src/db/timestamps.ts) gives what pg's own parser gives, for
 * every form PostgreSQL writes: read by position where it can, by pg's parser where it cannot.
 */
const general = types.getTypeParser(types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date | number | null;
const same = (text: string) => {
  const ours = parseTimestamptz(text);
  const theirs = general(text);
  return { text, ours: ours instanceof Date ? ours.getTime() : ours, theirs: theirs instanceof Date ? theirs.getTime() : theirs };
};

describe('reading timestamptz', () => {
  it('as pg does, for each form PostgreSQL writes and some it does not', () => {
    const texts = [
      '2026-11-27 03:59:01+00',
      '2026-11-27 03:59:01.1+00',
      '2026-11-27 03:59:01.123+00',
      '2026-11-27 03:59:01.123456+00',
      '2026-11-27 03:59:01.999999+00',
      '2026-11-27 03:59:01.5+05:30',
      '2026-11-27 03:59:01.25-03',
      '2026-11-27 23:59:59.999-09:30',
      '1883-11-18 11:59:59+05:45',
      '1850-01-01 00:00:00-04:56:02',
      '2024-02-29 12:00:00+14',
      '2000-01-01 00:00:00-12',
      '1000-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999999+00',
      // Left to pg's parser: years outside 1000-9999, BC, infinity, what PostgreSQL does not write.
      '0099-06-01 00:00:00+00',
      '0001-01-01 00:00:00+00 BC',
      '12345-01-01 00:00:00+00',
      'infinity',
      '-infinity',
      '2026-11-27 03:59:01',
      '2026-11-27T03:59:01Z',
      '2026-11-27 03:59:01+0x',
      '2026-11-27 03:59:01.12+00:3',
      '2026-1x-27 03:59:01+00',
    ];
    for (const text of texts) {
      const r = same(text);
      expect(r.ours).toEqual(r.theirs);
    }
  });

  it('as pg does, for 20,000 random instants at random offsets and precisions', () => {
    let seed = 17;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pad = (v: number, w: number) => String(v).padStart(w, '0');
    for (let k = 0; k < 20_000; k++) {
      const fraction = random(7);
      const digits = pad(random(1_000_000), 6).slice(0, fraction);
      const offsetHours = random(15);
      const minutes = random(3) === 0 ? `:${pad(random(60), 2)}` : '';
      const seconds = minutes && random(4) === 0 ? `:${pad(random(60), 2)}` : '';
      const text =
        `${1000 + random(9000)}-${pad(1 + random(12), 2)}-${pad(1 + random(28), 2)} ${pad(random(24), 2)}:${pad(random(60), 2)}:${pad(random(60), 2)}` +
        `${fraction ? `.${digits}` : ''}${random(2) ? '+' : '-'}${pad(offsetHours, 2)}${minutes}${seconds}`;
      const r = same(text);
      if (r.ours !== r.theirs) expect(r).toEqual({ ...r, ours: r.theirs });
    }
  });

  describe('as PostgreSQL writes them', () => {
    let db: TestDatabase;
    let client: Client;
    beforeAll(async () => {
      db = await createTestDatabase();
      client = new Client({ connectionString: db.url });
      await client.connect();
    });
    afterAll(async () => {
      await client.end();
      await db.drop();
    });

    it('the gateway’s data source reads them with it (a Date, to the millisecond)', async () => {
      const ds = createDataSource(db.url);
      await ds.initialize();
      try {
        const [row] = await ds.query<Array<{ t: Date; text: string }>>(`SELECT t, t::text AS text FROM (VALUES (now())) v(t)`);
        expect(row.t).toBeInstanceOf(Date);
        expect(row.t.getTime()).toBe((parseTimestamptz(row.text) as Date).getTime());
        const driver = ds.driver as unknown as { master: { options: { types?: { getTypeParser(oid: number): unknown } } } };
        expect(driver.master.options.types?.getTypeParser(types.builtins.TIMESTAMPTZ)).toBe(parseTimestamptz);
      } finally {
        await ds.destroy();
      }
    });

    it.each(['UTC', 'Asia/Kathmandu', 'America/St_Johns', 'Pacific/Kiritimati', 'America/New_York'])('in time zone %s', async (zone) => {
      await client.query(`SET TIME ZONE '${zone}'`);
      const { rows } = await client.query<{ text: string; ms: string }>(
        `SELECT t::text AS text, floor(extract(epoch FROM t) * 1000)::bigint::text AS ms
           FROM (VALUES (timestamptz '2026-11-27 03:59:01.123456Z'), (timestamptz '1900-01-01 00:00:00Z'), (timestamptz '1850-01-01 00:00:00Z'), (now()), (timestamptz '2026-03-29 01:30:00Z')) v(t)`,
      );
      // A zone with a local mean time before 1883 writes an offset with seconds (New York's -04:56:02).
      if (zone === 'America/New_York') expect(rows.map((r) => r.text)).toContain('1849-12-31 19:03:58-04:56:02');
      for (const row of rows) {
        const r = same(row.text);
        expect(r.ours).toEqual(r.theirs);
        expect(r.ours).toBe(Number(row.ms)); // the instant PostgreSQL stored, to the millisecond
      }
    });
  });
});
