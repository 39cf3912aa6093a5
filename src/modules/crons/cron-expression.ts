/**
 * 5-field cron expressions in UTC with Vixie cron's semantics. Written here because common npm
 * cron libraries get the day rule wrong: day-of-month and day-of-week combine with OR only when
 * both are restricted; a field starting with `*` (even `*\/2`) counts as unrestricted, and then
 * the two combine with AND, as in Vixie's cron.c (`DOM_STAR || DOW_STAR ? dow && dom : dow || dom`):
 * `0 0 *\/2 * *` runs on odd days, `0 0 *\/2 * 1` on Mondays that fall on an odd day.
 */
export type CronField = 'minute' | 'hour' | 'day-of-month' | 'month' | 'day-of-week';

export class CronSyntaxError extends Error {
  constructor(
    readonly field: CronField | null,
    message: string,
  ) {
    super(field ? `${field}: ${message}` : message);
  }
}

interface FieldSpec {
  name: CronField;
  min: number;
  max: number;
  names?: readonly string[];
  /** Names map to min + index. */
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day-of-week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

const PART_RE = /^(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:\/([0-9]+))?$/i;
const DAY_MS = 86_400_000;
/** Long enough for any Feb 29 (across a skipped leap year such as 2100). */
const SEARCH_DAYS = 366 * 9;

function value(spec: FieldSpec, token: string): number {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n < spec.min || n > spec.max) throw new CronSyntaxError(spec.name, `${n} is out of range ${spec.min}-${spec.max}`);
    return n;
  }
  const i = spec.names?.indexOf(token.toLowerCase()) ?? -1;
  if (i < 0) throw new CronSyntaxError(spec.name, `"${token}" is not a number${spec.names ? ' or a name' : ''}`);
  return spec.min + i;
}

function parseField(spec: FieldSpec, text: string): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = PART_RE.exec(part);
    if (!m) throw new CronSyntaxError(spec.name, `"${part}" is not a value, range, list or step`);
    const [, range, stepText] = m;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) throw new CronSyntaxError(spec.name, 'a step must be at least 1');
    let lo: number;
    let hi: number;
    if (range === '*') {
      [lo, hi] = [spec.min, spec.max];
    } else if (range.includes('-')) {
      const [a, b] = range.split('-');
      [lo, hi] = [value(spec, a), value(spec, b)];
      if (lo > hi) throw new CronSyntaxError(spec.name, `range ${range} is reversed`);
    } else {
      lo = value(spec, range);
      hi = stepText === undefined ? lo : spec.max; // `5/15` means 5-max/15, as in cronie
    }
    for (let v = lo; v <= hi; v += step) out.add(spec.name === 'day-of-week' && v === 7 ? 0 : v);
  }
  return out;
}

export class CronExpression {
  private constructor(
    readonly source: string,
    private readonly minutes: Set<number>,
    private readonly hours: Set<number>,
    private readonly daysOfMonth: Set<number>,
    private readonly months: Set<number>,
    private readonly daysOfWeek: Set<number>,
    private readonly domRestricted: boolean,
    private readonly dowRestricted: boolean,
  ) {}

  static parse(source: string): CronExpression {
    if (typeof source !== 'string' || source.trim() === '') throw new CronSyntaxError(null, 'is empty');
    if (source.trim().startsWith('@')) throw new CronSyntaxError(null, 'macros such as @daily are not supported; use 5 fields');
    const parts = source.trim().split(/\s+/);
    if (parts.length !== 5) throw new CronSyntaxError(null, `needs exactly 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`);
    const sets = parts.map((p, i) => parseField(FIELDS[i], p));
    const expr = new CronExpression(source, sets[0], sets[1], sets[2], sets[3], sets[4], !parts[2].startsWith('*'), !parts[4].startsWith('*'));
    if (expr.next(new Date(Date.UTC(2000, 0, 1))) === null) {
      throw new CronSyntaxError('day-of-month', 'no month in the schedule has such a day, so it would never run');
    }
    return expr;
  }

  private dayMatches(d: Date): boolean {
    if (!this.months.has(d.getUTCMonth() + 1)) return false;
    const dom = this.daysOfMonth.has(d.getUTCDate());
    const dow = this.daysOfWeek.has(d.getUTCDay());
    return this.domRestricted && this.dowRestricted ? dom || dow : dom && dow;
  }

  /** The first matching minute strictly after `after`, or null if none within nine years. */
  next(after: Date): Date | null {
    const start = new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000);
    let day = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
    for (let i = 0; i < SEARCH_DAYS; i++, day += DAY_MS) {
      const d = new Date(day);
      if (!this.dayMatches(d)) continue;
      const first = i === 0;
      for (let h = first ? start.getUTCHours() : 0; h < 24; h++) {
        if (!this.hours.has(h)) continue;
        const fromMinute = first && h === start.getUTCHours() ? start.getUTCMinutes() : 0;
        for (let m = fromMinute; m < 60; m++) if (this.minutes.has(m)) return new Date(day + h * 3_600_000 + m * 60_000);
      }
    }
    return null;
  }
}
