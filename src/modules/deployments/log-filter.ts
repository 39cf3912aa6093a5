import { ValidationFailed } from '../../errors';
import { LogType } from './log-line.entity';

/** The longest filter accepted. */
export const MAX_FILTER_LENGTH = 500;

/** A parsed `q`: every `include` must be in the line, no `exclude` may be (case-insensitive). */
export interface LogFilter {
  include: string[];
  exclude: string[];
  type: LogType | null;
}

const refuse = (message: string, position: number): never => {
  throw ValidationFailed.field('q', `${message} at position ${position}`);
};

/**
 * Parses a log filter: words and `"phrases"` that must all appear (case-insensitive), `-word` or
 * `-"phrase"` that must not, and `@type:build|runtime`. A bad filter is a 422 on `q` naming the
 * position (1-based) where it goes wrong.
 */
export function parseLogFilter(q: string | null | undefined): LogFilter | null {
  if (q === null || q === undefined || q.trim() === '') return null;
  if (q.length > MAX_FILTER_LENGTH) refuse(`is longer than ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH + 1);
  const filter: LogFilter = { include: [], exclude: [], type: null };
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
        if (key !== 'type') refuse(`has an unknown key @${key} (known: @type)`, start + 1);
        const type = value.toLowerCase() === 'build' ? LogType.BUILD : value.toLowerCase() === 'runtime' ? LogType.RUNTIME : null;
        if (type === null) refuse(`has @type:${value}; @type is build or runtime`, start + 1 + key.length + 2);
        if (filter.type !== null && filter.type !== type) refuse('has two different @type', start + 1);
        filter.type = type;
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
