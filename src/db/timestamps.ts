import { types } from 'pg';

const TIMESTAMPTZ: number = types.builtins.TIMESTAMPTZ;
/** pg's own parser (postgres-date): every form PostgreSQL writes, by regular expressions. */
const general = types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date | number | null;

/** The digit at `i`, or -1 when it is not one. */
function digit(text: string, i: number): number {
  const d = text.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : -1;
}

/** Two digits at `i` as a number, or -1. */
function two(text: string, i: number): number {
  const a = digit(text, i);
  const b = digit(text, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

/**
 * A `timestamptz` as PostgreSQL writes it in its default ISO style (`2026-11-27 03:59:01.123456+00`,
 * the offset as `±HH`, `±HH:MM` or `±HH:MM:SS`), read by position into a Date. Any other form (a
 * year before 1000 or after 9999, BC, `infinity`) goes to pg's own parser, as does anything this
 * reading does not recognise: the result is pg's own in every case, at a fraction of the cost
 * (the hottest lists read a dozen timestamps a row).
 */
export function parseTimestamptz(text: string): Date | number | null {
  const n = text.length;
  if (
    n < 22 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58
  ) {
    return general(text);
  }
  const century = two(text, 0);
  const yy = two(text, 2);
  const month = two(text, 5);
  const day = two(text, 8);
  const hour = two(text, 11);
  const minute = two(text, 14);
  const second = two(text, 17);
  if (century < 10 || yy < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return general(text);
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === 46) {
    // Microseconds: a Date keeps the milliseconds (Date.UTC truncates the rest, as pg's parser does).
    let scale = 100;
    for (i++; i < n; i++) {
      const d = digit(text, i);
      if (d < 0) break;
      ms += d * scale;
      scale = scale >= 10 ? scale / 10 : 0;
    }
  }
  const sign = text.charCodeAt(i);
  const hours = two(text, i + 1);
  if ((sign !== 43 && sign !== 45) || hours < 0) return general(text);
  let offset = hours * 3600;
  i += 3;
  for (let part = 60; i < n && part >= 1; part /= 60) {
    const value = text.charCodeAt(i) === 58 ? two(text, i + 1) : -1;
    if (value < 0) return general(text);
    offset += value * part;
    i += 3;
  }
  if (i !== n) return general(text);
  const utc = Date.UTC(century * 100 + yy, month - 1, day, hour, minute, second, ms);
  return new Date(sign === 43 ? utc - offset * 1000 : utc + offset * 1000);
}

/** pg's type parsers with `timestamptz` read by `parseTimestamptz`: a pool's `types` option (the gateway's, in createDataSource). */
export const fastTimestampTypes = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ && format !== 'binary' ? parseTimestamptz : (types.getTypeParser(oid, format ?? 'text') as unknown),
};
