import { upcoming } from './helpers';

/** The next `n` due times of `schedule` strictly after `from`, as dates (YYYY-MM-DD, all at 00:00 UTC). */
function upcomingDays(schedule: string, from: string, n: number): string[] {
  return upcoming(schedule, from, n).map((iso) => {
    expect(iso.slice(10)).toBe('T00:00:00.000Z');
    return iso.slice(0, 10);
  });
}

/**
 * Vixie cron combines day-of-month and day-of-week with OR only when both are restricted, and a
 * field counts as unrestricted when its text starts with `*`, whatever values it stands for. So
 * `1-31/2` (odd days written without a star) is restricted, although the star step `*` + `/2`
 * names the same days.
 * From Saturday 2026-06-20: Mondays are 06-22, 06-29, 07-06; odd days 21, 23, 25, 27, 29, 1, 3, 5, 7.
 */
describe('Vixie day matching: only a leading * makes a day field unrestricted', () => {
  it("'0 0 1-31/2 * 1' (no leading *) is OR: every Monday and every odd day", () => {
    expect(upcomingDays('0 0 1-31/2 * 1', '2026-06-20T00:00:00.000Z', 11)).toEqual([
      '2026-06-21', // Sun, odd
      '2026-06-22', // Mon, even
      '2026-06-23',
      '2026-06-25',
      '2026-06-27',
      '2026-06-29', // Mon and odd: once
      '2026-07-01',
      '2026-07-03',
      '2026-07-05',
      '2026-07-06', // Mon, even
      '2026-07-07',
    ]);
  });

  it("'0 0 */2 * 1' names the same odd days but starts with *, so it is AND: only odd-dated Mondays", () => {
    expect(upcomingDays('0 0 */2 * 1', '2026-06-20T00:00:00.000Z', 2)).toEqual(['2026-06-29', '2026-07-13']);
    expect(upcomingDays('0 0 1-31/2 * 1', '2026-06-20T00:00:00.000Z', 11)).not.toEqual(upcomingDays('0 0 */2 * 1', '2026-06-20T00:00:00.000Z', 11));
  });

  it("'0 0 1-31 * 1' (every day, written as a range) is restricted too: OR with Monday matches every day", () => {
    expect(upcomingDays('0 0 1-31 * 1', '2026-06-20T00:00:00.000Z', 4)).toEqual(['2026-06-21', '2026-06-22', '2026-06-23', '2026-06-24']);
  });
});
