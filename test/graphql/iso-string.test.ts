import { DateTimeScalar, isoString } from '../../src/graphql/scalars';

/** The DateTime scalar's output (src/graphql/scalars.ts): `toISOString()`'s text, worked out by hand where the year has four digits. */
describe('isoString', () => {
  const same = (ms: number) => {
    const date = new Date(ms);
    return { ms, ours: isoString(date), v8: date.toISOString() };
  };

  it('is toISOString at the edges: the epoch, leap days, centuries, the first and last instant of four-digit years, and beyond', () => {
    const edges = [
      0,
      -1,
      1,
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
      Date.UTC(2000, 1, 29),
      Date.UTC(1900, 1, 28, 12),
      Date.UTC(1900, 2, 1),
      Date.UTC(2100, 2, 1),
      Date.UTC(1600, 1, 29),
      Date.UTC(1000, 0, 1),
      Date.UTC(1000, 0, 1) - 1, // 0999: toISOString's own
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(10000, 0, 1), // +010000: toISOString's own
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      Date.UTC(2026, 10, 27, 3, 59, 1, 123),
      -62135596800000, // 0001-01-01
      8.64e15, // the last instant a Date holds
    ];
    for (const ms of edges) {
      const r = same(ms);
      expect(r.ours).toBe(r.v8);
    }
  });

  it('is toISOString for 200,000 random instants from year 1000 to 9999, and around now', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const from = Date.UTC(1000, 0, 1);
    const until = Date.UTC(10000, 0, 1);
    for (let i = 0; i < 200_000; i++) {
      const ms = i % 2 ? Math.floor(from + random() * (until - from)) : Date.UTC(2026, 0, 1) + Math.floor(random() * 3e10);
      const r = same(ms);
      if (r.ours !== r.v8) expect(r).toEqual({ ...r, ours: r.v8 });
    }
  });

  it('is what the DateTime scalar answers for a Date; an invalid one is still refused', () => {
    const date = new Date(Date.UTC(2026, 10, 27, 3, 59, 1, 5));
    expect(DateTimeScalar.serialize(date)).toBe('2026-11-27T03:59:01.005Z');
    expect(() => DateTimeScalar.serialize(new Date(NaN))).toThrow();
  });
});
