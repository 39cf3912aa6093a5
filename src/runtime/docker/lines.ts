/** Cuts text that arrives in pieces into lines (without their `\n` or `\r\n`); `end` gives the last, unterminated one. */
export function lineSplitter(onLine: (line: string) => void): { push(text: string): void; end(): void } {
  let partial = '';
  return {
    push(text: string) {
      const parts = (partial + text).split('\n');
      partial = parts.pop()!;
      for (const p of parts) onLine(p.endsWith('\r') ? p.slice(0, -1) : p);
    },
    end() {
      if (partial) onLine(partial);
      partial = '';
    },
  };
}

/** A line the Engine wrote with `timestamps`: `<RFC 3339 time with ns> <message>`, the time as ns since the epoch. */
export function parseTimestamped(raw: string): { message: string; ns: bigint; at: Date } | null {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z ?(.*)$/s.exec(raw);
  if (!m) return null;
  const ns = BigInt(Date.parse(`${m[1]}Z`)) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
  return { message: m[3], ns, at: new Date(Number(ns / 1_000_000n)) };
}

/**
 * Which of a container's timestamped lines are new, across the follows of its log. The Engine's
 * `since` is whole seconds, so following again after a restart, a wake or an adoption gives the
 * lines of that second again: those at or below the newest line passed on before are dropped.
 * Within one follow every line passes, in the order the Engine gives it: stdout and stderr are
 * copied by separate readers, so a stderr line may come after a stdout line stamped later, and
 * must not be taken for a repeat.
 */
export class FollowedLines {
  /** The newest timestamp passed on, in nanoseconds. */
  private newestNs: bigint;
  /** Lines at or below this were passed on before the current follow began. */
  private repeatsUpToNs: bigint;

  /** `afterNs`: lines up to there were passed on already (stored by an earlier runner). */
  constructor(afterNs = 0n) {
    this.newestNs = afterNs;
    this.repeatsUpToNs = afterNs;
  }

  /** Lines up to the newest stored one (null: none) were passed on: stored times are whole milliseconds, so the rest of that millisecond too. */
  static after(stored: Date | null): FollowedLines {
    return new FollowedLines(stored ? BigInt(stored.getTime()) * 1_000_000n + 999_999n : 0n);
  }

  /** A follow begins: the `since` (whole seconds) to ask the Engine for. */
  follow(): number {
    this.repeatsUpToNs = this.newestNs;
    return Number(this.newestNs / 1_000_000_000n);
  }

  /** Whether a line of the current follow is new; a new one counts as passed on. */
  fresh(ns: bigint): boolean {
    if (ns <= this.repeatsUpToNs) return false;
    if (ns > this.newestNs) this.newestNs = ns;
    return true;
  }
}
