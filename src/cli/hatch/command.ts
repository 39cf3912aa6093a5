import { HatchApi } from './api';
import { Settings } from './config';
import { Colours } from './output';

/** Bad arguments: printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

/** A failure already explained to the user; just the exit code. */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Shown in help, e.g. `<K=V>`. */
  value?: string;
  description: string;
}

export interface Ctx {
  settings: Settings;
  json: boolean;
  /** Colours for stdout and for stderr. */
  c: Colours;
  ce: Colours;
  stderrIsTTY: boolean;
  stdinIsTTY: boolean;
  /** The API with the configured token; fails with a hint when there is none. */
  api(): HatchApi;
  /** The API with a given token (login). */
  apiWith(token: string): HatchApi;
  out(text: string): void;
  err(text: string): void;
}

export type OptionValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface Command {
  /** Words that name it: `['crons', 'create']`. */
  path: string[];
  /** Positionals: `<name>` required, `[name]` optional, `<name...>` the rest (at least one). */
  args: string[];
  summary: string;
  /** More text for `--help`. */
  help?: string;
  options?: Record<string, OptionSpec>;
  run(ctx: Ctx, args: string[], options: OptionValues): Promise<number | void>;
}

export function str(options: OptionValues, name: string): string | undefined {
  const v = options[name];
  return typeof v === 'string' ? v : undefined;
}

export function strings(options: OptionValues, name: string): string[] {
  const v = options[name];
  return Array.isArray(v) ? v.map(String) : typeof v === 'string' ? [v] : [];
}

/** A whole number argument, checked here so the user gets a usage error rather than a type error. */
export function wholeNumber(value: string, what: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`${what} must be a whole number, got "${value}"`);
  return Number(value);
}

/** Reads every page of a connection. */
export async function allPages<T>(
  fetchPage: (after: string | null) => Promise<{ nodes: T[]; pageInfo: { hasNextPage: boolean; endCursor?: string | null } }>,
): Promise<T[]> {
  const items: T[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await fetchPage(after);
    items.push(...page.nodes);
    if (!page.pageInfo.hasNextPage || !page.pageInfo.endCursor) return items;
    after = page.pageInfo.endCursor;
  }
}
