/** What every phase of `npm run bench` shares: its settings from the environment and its table rows. */

/** A non-negative number from the environment, `fallback` when unset or empty. */
export function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return n;
}

/** One row of the printed table and of the JSON written. */
export type Row = {
  measure: string;
  gateway: number | string | null;
  baseline: number | string | null;
  ratio: number | null;
  /** With several rounds (the lists' BENCH_HTTP_ROUNDS): `ratio` is the median round's, this the lowest and highest. */
  range?: [number, number];
  goal: string;
  met: boolean | null;
};

/**
 * Of several rounds, the one whose `ratio` is the median (the lower middle one of an even count),
 * that ratio, and its range over the rounds (none for a single round).
 */
export function medianRound<T>(rounds: readonly T[], ratio: (r: T) => number): { round: T; ratio: number; range?: [number, number] } {
  const sorted = [...rounds].sort((a, b) => ratio(a) - ratio(b));
  const round = sorted[Math.floor((sorted.length - 1) / 2)];
  return { round, ratio: ratio(round), range: rounds.length > 1 ? [ratio(sorted[0]), ratio(sorted[sorted.length - 1])] : undefined };
}
