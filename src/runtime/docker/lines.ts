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
