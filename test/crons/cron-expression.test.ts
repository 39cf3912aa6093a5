import { CronExpression, CronSyntaxError } from '../../src/modules/crons/cron-expression';
import { upcoming } from './helpers';

const at = (s: string) => `${s}.000Z`;

/** The CronSyntaxError that parsing `schedule` throws (fails the test if it parses). */
function rejection(schedule: string): CronSyntaxError {
  try {
    CronExpression.parse(schedule);
  } catch (err) {
    expect(err).toBeInstanceOf(CronSyntaxError);
    return err as CronSyntaxError;
  }
  throw new Error(`"${schedule}" was accepted`);
}

describe('CronExpression.next: due times in UTC with Vixie cron semantics', () => {
  it('is strictly after the given time: a time exactly on a match gives the following one', () => {
    expect(upcoming('0 12 * * *', '2026-11-20T12:00:00.000Z', 1)).toEqual([at('2026-11-21T12:00:00')]);
    expect(upcoming('0 12 * * *', '2026-11-20T11:59:59.999Z', 1)).toEqual([at('2026-11-20T12:00:00')]);
    expect(upcoming('0 12 * * *', '2026-11-20T12:00:00.001Z', 1)).toEqual([at('2026-11-21T12:00:00')]);
    expect(upcoming('* * * * *', '2026-11-20T10:00:00.000Z', 2)).toEqual([at('2026-11-20T10:01:00'), at('2026-11-20T10:02:00')]);
    expect(upcoming('* * * * *', '2026-11-20T10:00:30.000Z', 1)).toEqual([at('2026-11-20T10:01:00')]);
    expect(upcoming('*/5 * * * *', '2026-11-20T10:02:00.000Z', 2)).toEqual([at('2026-11-20T10:05:00'), at('2026-11-20T10:10:00')]);
  });

  it("'0 0 31 * *' skips the months that have no 31st", () => {
    expect(upcoming('0 0 31 * *', '2026-01-01T00:00:00.000Z', 8)).toEqual([
      at('2026-01-31T00:00:00'),
      at('2026-03-31T00:00:00'),
      at('2026-05-31T00:00:00'),
      at('2026-07-31T00:00:00'),
      at('2026-08-31T00:00:00'),
      at('2026-10-31T00:00:00'),
      at('2026-12-31T00:00:00'),
      at('2027-01-31T00:00:00'),
    ]);
  });

  it("'0 0 29 2 *' lands on Feb 29 of the next leap year, skipping 2100 (not a leap year)", () => {
    expect(upcoming('0 0 29 2 *', '2026-01-01T00:00:00.000Z', 2)).toEqual([at('2028-02-29T00:00:00'), at('2032-02-29T00:00:00')]);
    expect(upcoming('0 0 29 2 *', '2028-02-29T00:00:00.000Z', 1)).toEqual([at('2032-02-29T00:00:00')]);
    expect(upcoming('0 0 29 2 *', '2096-03-01T00:00:00.000Z', 1)).toEqual([at('2104-02-29T00:00:00')]);
  });

  it("both day fields restricted combine with OR: '0 12 1 * 1' runs on the 1st of the month and on every Monday", () => {
    // 2026-07-01 is a Wednesday; 22 and 29 June, 6 and 13 July are Mondays.
    expect(upcoming('0 12 1 * 1', '2026-06-20T00:00:00.000Z', 5)).toEqual([
      at('2026-06-22T12:00:00'),
      at('2026-06-29T12:00:00'),
      at('2026-07-01T12:00:00'),
      at('2026-07-06T12:00:00'),
      at('2026-07-13T12:00:00'),
    ]);
    // 30 February never exists, but with day-of-week restricted too it still runs on Mondays.
    expect(upcoming('0 0 30 2 1', '2026-01-01T00:00:00.000Z', 2)).toEqual([at('2026-02-02T00:00:00'), at('2026-02-09T00:00:00')]);
  });

  it("a day field starting with * is unrestricted, even '*/2', so the day fields AND: '0 0 */2 * 1' runs on Mondays that are odd days", () => {
    // Were */2 restricted, the days would OR and the odd days 21, 23, … would be due too; were it
    // ignored, every Monday would be (22 June, 6 July). Vixie's cron.c ANDs them.
    expect(upcoming('0 0 */2 * 1', '2026-06-20T00:00:00.000Z', 4)).toEqual([
      at('2026-06-29T00:00:00'),
      at('2026-07-13T00:00:00'),
      at('2026-07-27T00:00:00'),
      at('2026-08-03T00:00:00'),
    ]);
  });

  it("'0 0 1 * */2' (day-of-week starts with *) runs on a 1st that is a Sunday, Tuesday, Thursday or Saturday", () => {
    // 1 July 2026 is a Wednesday; 1 August a Saturday, 1 September a Tuesday, 1 October a Thursday.
    // Were */2 restricted, Sunday 21 June would be due too.
    expect(upcoming('0 0 1 * */2', '2026-06-20T00:00:00.000Z', 3)).toEqual([at('2026-08-01T00:00:00'), at('2026-09-01T00:00:00'), at('2026-10-01T00:00:00')]);
  });

  it("a stepped day field alone still filters: '0 0 */2 * *' is the odd days, '0 0 * * */3' Sunday, Wednesday and Saturday", () => {
    // 31 July then 1 August: the step restarts with each month, as in cron.
    expect(upcoming('0 0 */2 * *', '2026-07-28T00:00:00.000Z', 4)).toEqual([
      at('2026-07-29T00:00:00'),
      at('2026-07-31T00:00:00'),
      at('2026-08-01T00:00:00'),
      at('2026-08-03T00:00:00'),
    ]);
    // 21 June 2026 is a Sunday; */3 in day-of-week is 0, 3, 6.
    expect(upcoming('0 0 * * */3', '2026-06-20T00:00:00.000Z', 4)).toEqual([
      at('2026-06-21T00:00:00'),
      at('2026-06-24T00:00:00'),
      at('2026-06-27T00:00:00'),
      at('2026-06-28T00:00:00'),
    ]);
  });

  it("only one day field restricted: '0 0 * * 1' is Mondays only, '0 0 15 * *' the 15th only", () => {
    expect(upcoming('0 0 * * 1', '2026-06-20T00:00:00.000Z', 2)).toEqual([at('2026-06-22T00:00:00'), at('2026-06-29T00:00:00')]);
    expect(upcoming('0 0 15 * *', '2026-06-20T00:00:00.000Z', 2)).toEqual([at('2026-07-15T00:00:00'), at('2026-08-15T00:00:00')]);
  });

  it('day-of-week 0 and 7 are both Sunday, and so is sun', () => {
    const sundays = [at('2026-06-21T00:00:00'), at('2026-06-28T00:00:00')];
    expect(upcoming('0 0 * * 0', '2026-06-20T00:00:00.000Z', 2)).toEqual(sundays);
    expect(upcoming('0 0 * * 7', '2026-06-20T00:00:00.000Z', 2)).toEqual(sundays);
    expect(upcoming('0 0 * * sun', '2026-06-20T00:00:00.000Z', 2)).toEqual(sundays);
    // A range ending in 7 includes Sunday: Friday, Saturday, Sunday.
    expect(upcoming('0 0 * * 5-7', '2026-06-22T00:00:00.000Z', 4)).toEqual([
      at('2026-06-26T00:00:00'),
      at('2026-06-27T00:00:00'),
      at('2026-06-28T00:00:00'),
      at('2026-07-03T00:00:00'),
    ]);
  });

  it('takes day and month names, in any case, in ranges and lists', () => {
    // From Friday 19 June 2026 after 9:00: the next weekdays.
    const weekdays = [
      at('2026-06-22T09:00:00'),
      at('2026-06-23T09:00:00'),
      at('2026-06-24T09:00:00'),
      at('2026-06-25T09:00:00'),
      at('2026-06-26T09:00:00'),
      at('2026-06-29T09:00:00'),
    ];
    expect(upcoming('0 9 * * mon-fri', '2026-06-19T10:00:00.000Z', 6)).toEqual(weekdays);
    expect(upcoming('0 9 * * MON-Fri', '2026-06-19T10:00:00.000Z', 6)).toEqual(weekdays);
    expect(upcoming('0 9 * * 1-5', '2026-06-19T10:00:00.000Z', 6)).toEqual(weekdays);
    const quarterStarts = [at('2026-03-01T00:00:00'), at('2027-01-01T00:00:00'), at('2027-02-01T00:00:00'), at('2027-03-01T00:00:00')];
    expect(upcoming('0 0 1 jan-mar *', '2026-02-15T00:00:00.000Z', 4)).toEqual(quarterStarts);
    expect(upcoming('0 0 1 JAN-Mar *', '2026-02-15T00:00:00.000Z', 4)).toEqual(quarterStarts);
    expect(upcoming('0 0 * * sat,SUN', '2026-06-22T00:00:00.000Z', 3)).toEqual([
      at('2026-06-27T00:00:00'),
      at('2026-06-28T00:00:00'),
      at('2026-07-04T00:00:00'),
    ]);
    expect(upcoming('0 0 1 Dec *', '2026-06-22T00:00:00.000Z', 1)).toEqual([at('2026-12-01T00:00:00')]);
  });

  it("lists, ranges and steps: '0,30 9-17/2 * * *'", () => {
    expect(upcoming('0,30 9-17/2 * * *', '2026-06-20T08:00:00.000Z', 11)).toEqual([
      at('2026-06-20T09:00:00'),
      at('2026-06-20T09:30:00'),
      at('2026-06-20T11:00:00'),
      at('2026-06-20T11:30:00'),
      at('2026-06-20T13:00:00'),
      at('2026-06-20T13:30:00'),
      at('2026-06-20T15:00:00'),
      at('2026-06-20T15:30:00'),
      at('2026-06-20T17:00:00'),
      at('2026-06-20T17:30:00'),
      at('2026-06-21T09:00:00'),
    ]);
    expect(upcoming('10,20-22,50 * * * *', '2026-06-20T08:00:00.000Z', 6)).toEqual([
      at('2026-06-20T08:10:00'),
      at('2026-06-20T08:20:00'),
      at('2026-06-20T08:21:00'),
      at('2026-06-20T08:22:00'),
      at('2026-06-20T08:50:00'),
      at('2026-06-20T09:10:00'),
    ]);
  });

  it("'5/15 * * * *' starts at 5 and steps by 15: minutes 5, 20, 35, 50", () => {
    expect(upcoming('5/15 * * * *', '2026-06-20T10:00:00.000Z', 5)).toEqual([
      at('2026-06-20T10:05:00'),
      at('2026-06-20T10:20:00'),
      at('2026-06-20T10:35:00'),
      at('2026-06-20T10:50:00'),
      at('2026-06-20T11:05:00'),
    ]);
  });

  it('rolls over month ends and year ends', () => {
    expect(upcoming('59 23 31 12 *', '2026-06-01T00:00:00.000Z', 2)).toEqual([at('2026-12-31T23:59:00'), at('2027-12-31T23:59:00')]);
    expect(upcoming('59 23 31 12 *', '2026-12-31T23:59:00.000Z', 1)).toEqual([at('2027-12-31T23:59:00')]);
    expect(upcoming('0 0 1 1 *', '2026-12-31T23:59:30.000Z', 1)).toEqual([at('2027-01-01T00:00:00')]);
    expect(upcoming('*/20 * * * *', '2026-12-31T23:45:00.000Z', 2)).toEqual([at('2027-01-01T00:00:00'), at('2027-01-01T00:20:00')]);
    expect(upcoming('30 23 * * *', '2026-04-30T23:45:00.000Z', 1)).toEqual([at('2026-05-01T23:30:00')]);
    expect(upcoming('0 0 * * *', '2028-02-28T12:00:00.000Z', 2)).toEqual([at('2028-02-29T00:00:00'), at('2028-03-01T00:00:00')]);
  });

  it('accepts extra whitespace between fields', () => {
    expect(upcoming('  0   12 *\t* *  ', '2026-11-20T00:00:00.000Z', 1)).toEqual([at('2026-11-20T12:00:00')]);
  });
});

describe('CronExpression.parse: rejections', () => {
  it.each(['* * * *', '* * * * * *', '0 0 12 * * ?', '0'])('%j: not exactly 5 fields', (schedule) => {
    const err = rejection(schedule);
    expect(err.message).toMatch(/5/);
  });

  it.each(['@daily', '@hourly', '@reboot'])('%j: macros are not supported', (schedule) => {
    rejection(schedule);
  });

  it.each(['', '   '])('%j: empty', (schedule) => {
    rejection(schedule);
  });

  it.each([
    ['60 * * * *', 'minute'],
    ['-1 * * * *', 'minute'],
    ['0 24 * * *', 'hour'],
    ['0 0 0 * *', 'day-of-month'],
    ['0 0 32 * *', 'day-of-month'],
    ['0 0 * 0 *', 'month'],
    ['0 0 * 13 *', 'month'],
    ['0 0 * * 8', 'day-of-week'],
  ])('%j: out of range in the %s field', (schedule, field) => {
    const err = rejection(schedule);
    expect(err.field).toBe(field);
    expect(err.message).toContain(field);
  });

  it.each([
    ['0 0 L * *', 'day-of-month'],
    ['0 0 ? * 1', 'day-of-month'],
    ['0 0 * * 1#2', 'day-of-week'],
    ['0 0 * * 5L', 'day-of-week'],
    ['0 0 15W * *', 'day-of-month'],
  ])('%j: Quartz-style L, W, # and ? are not Vixie cron (%s)', (schedule, field) => {
    expect(rejection(schedule).field).toBe(field);
  });

  it.each([
    ['*/0 * * * *', 'minute'],
    ['0 */0 * * *', 'hour'],
    ['5-1 * * * *', 'minute'],
    ['0 0 * * fri-mon', 'day-of-week'],
    ['0 0 * dec-jan *', 'month'],
    ['0 0 20-10 * *', 'day-of-month'],
  ])('%j: zero steps and reversed ranges (%s)', (schedule, field) => {
    const err = rejection(schedule);
    expect(err.field).toBe(field);
    expect(err.message).toContain(field);
  });

  it.each([
    ['hello * * * *', 'minute'],
    ['1-2-3 * * * *', 'minute'],
    ['0 noon * * *', 'hour'],
    ['0 0 1st * *', 'day-of-month'],
    ['0 0 * january *', 'month'],
    ['0 0 * * monday', 'day-of-week'],
    ['0 0 * * *x', 'day-of-week'],
    ['0,,5 * * * *', 'minute'],
  ])('%j: garbage in a field (%s)', (schedule, field) => {
    const err = rejection(schedule);
    expect(err.field).toBe(field);
    expect(err.message).toContain(field);
  });

  it.each(['0 0 30 2 *', '0 0 31 2 *', '0 0 31 4,6,9,11 *'])('%j: a schedule that can never run', (schedule) => {
    const err = rejection(schedule);
    expect(err.field).toBe('day-of-month');
  });
});
