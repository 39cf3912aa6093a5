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
