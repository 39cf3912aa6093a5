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
