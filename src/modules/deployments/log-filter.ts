import { ValidationFailed } from '../../errors';
import { LogStream, LogType } from './log-line.entity';

/** The longest filter accepted. */
export const MAX_FILTER_LENGTH = 500;

/** A parsed `q`: every `include` must be in the line, no `exclude` may be (case-insensitive). */
export interface LogFilter {
  include: string[];
  exclude: string[];
  type: LogType | null;
  stream: LogStream | null;
  /** `@deployment:<id>`, on an egg's logs only. */
  deployment: string | null;
}

const refuse = (message: string, position: number): never => {
  throw ValidationFailed.field('q', `${message} at position ${position}`);
};

const KEYS = {
  type: { build: LogType.BUILD, runtime: LogType.RUNTIME },
  stream: { stdout: LogStream.STDOUT, stderr: LogStream.STDERR },
} as const;

/** Whether a line passes a filter (the same test the database makes, for live lines). */
export function matchesFilter(f: LogFilter, line: { type: LogType; stream: LogStream | null; message: string; deploymentId: string }): boolean {
  if (f.type && line.type !== f.type) return false;
  if (f.stream && line.stream !== f.stream) return false;
  if (f.deployment && line.deploymentId !== f.deployment) return false;
  if (f.include.length === 0 && f.exclude.length === 0) return true;
  const text = line.message.toLowerCase();
  return f.include.every((w) => text.includes(w.toLowerCase())) && !f.exclude.some((w) => text.includes(w.toLowerCase()));
}

/**
 * Parses a log filter: words and `"phrases"` that must all appear (case-insensitive), `-word` or
 * `-"phrase"` that must not, `@type:build|runtime`, `@stream:stdout|stderr` and, on an egg's logs
 * (`scope: 'app'`), `@deployment:<id>`. A bad filter is a 422 on `q` naming the position (1-based)
 * where it goes wrong.
 */
export function parseLogFilter(q: string | null | undefined, scope: 'deployment' | 'app' = 'deployment'): LogFilter | null {
  if (q === null || q === undefined || q.trim() === '') return null;
  if (q.length > MAX_FILTER_LENGTH) refuse(`is longer than ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH + 1);
  const filter: LogFilter = { include: [], exclude: [], type: null, stream: null, deployment: null };
  const known = scope === 'app' ? '@type, @stream, @deployment' : '@type, @stream';
  let i = 0;
  while (i < q.length) {
    if (/\s/.test(q[i])) {
      i++;
      continue;
    }
    const start = i;
    const negated = q[i] === '-';
    if (negated) i++;
    let term: string;
    if (q[i] === '"') {
      const end = q.indexOf('"', i + 1);
      if (end < 0) refuse('has a phrase with no closing quote', i + 1);
      term = q.slice(i + 1, end);
      if (term.trim() === '') refuse('has an empty phrase', i + 1);
      i = end + 1;
    } else {
      let end = i;
      while (end < q.length && !/\s/.test(q[end])) end++;
      term = q.slice(i, end);
      i = end;
      if (term === '') refuse('has a lone "-"', start + 1);
      if (term.startsWith('@')) {
        if (negated) refuse(`cannot negate ${term}`, start + 1);
        const m = /^@([a-z]+):(.*)$/.exec(term);
        if (!m) refuse(`has "${term}", not @key:value`, start + 1);
        const [, key, value] = m!;
        const valueAt = start + 1 + key.length + 2;
        if (key === 'deployment' && scope === 'app') {
          if (!/^dep_[A-Za-z0-9]+$/.test(value)) refuse(`has @deployment:${value}; give a deployment id (dep_…)`, valueAt);
          if (filter.deployment !== null && filter.deployment !== value) refuse('has two different @deployment', start + 1);
          filter.deployment = value;
          continue;
        }
        if (key !== 'type' && key !== 'stream') refuse(`has an unknown key @${key} (known: ${known})`, start + 1);
        const values = KEYS[key as 'type' | 'stream'] as Record<string, LogType | LogStream>;
        const chosen = Object.hasOwn(values, value.toLowerCase()) ? values[value.toLowerCase()] : null;
        if (chosen === null) refuse(`has @${key}:${value}; @${key} is ${Object.keys(values).join(' or ')}`, valueAt);
        const slot = key as 'type' | 'stream';
        if (filter[slot] !== null && filter[slot] !== chosen) refuse(`has two different @${key}`, start + 1);
        (filter as unknown as Record<string, unknown>)[slot] = chosen;
        continue;
      }
    }
    (negated ? filter.exclude : filter.include).push(term);
  }
  return filter;
}

/** A LIKE pattern matching `text` anywhere, its wildcards and escape character taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
