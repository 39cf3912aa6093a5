/** What the CLI prints: aligned tables for people, JSON for scripts, colour only on a terminal. */

export interface Colours {
  enabled: boolean;
  bold: (s: string) => string;
  dim: (s: string) => string;
  red: (s: string) => string;
  green: (s: string) => string;
  yellow: (s: string) => string;
  cyan: (s: string) => string;
  magenta: (s: string) => string;
}

export function colours(enabled: boolean): Colours {
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return {
    enabled,
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
    magenta: wrap(35, 39),
  };
}

// eslint-disable-next-line no-control-regex -- ESC is exactly what an ANSI colour code starts with
const ANSI = /\x1b\[[0-9;]*m/g;
const width = (s: string) => [...s.replace(ANSI, '')].length;

export type Cell = string | number | boolean | null | undefined;

export function cell(v: Cell): string {
  if (v === null || v === undefined || v === '') return '-';
  return String(v);
}

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(c: Colours, headers: string[], rows: Cell[][]): string {
  const cells = rows.map((r) => r.map(cell));
  const widths = headers.map((h, i) => Math.max(width(h), ...cells.map((r) => width(r[i] ?? ''))));
  const line = (r: string[], style: (s: string) => string = (s) => s) =>
    r
      .map((v, i) => (i === r.length - 1 ? style(v) : style(v) + ' '.repeat(widths[i] - width(v))))
      .join('  ')
      .trimEnd();
  return [line(headers, c.bold), ...cells.map((r) => line(r))].join('\n') + '\n';
}

/** `label  value` lines for a single record. */
export function details(c: Colours, pairs: Array<[string, Cell]>): string {
  const w = Math.max(...pairs.map(([k]) => width(k)));
  return pairs.map(([k, v]) => `${c.bold(k)}${' '.repeat(w - width(k))}  ${cell(v)}`).join('\n') + '\n';
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** A size as people read it: `512 B`, `3.4 kB`, `12 MB` (powers of 1024, as the gateway's limits). */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1023.5 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** Enum values as people write them: `LIVE` → `live`. */
export function lower(v: string | null | undefined): string | null {
  return v ? v.toLowerCase() : null;
}

export function status(c: Colours, v: string | null | undefined): string {
  const s = lower(v);
  if (!s) return '-';
  if (['live', 'ready', 'succeeded', 'success', 'active'].includes(s)) return c.green(s);
  if (['failed', 'disabled'].includes(s)) return c.red(s);
  if (['building', 'pending', 'running', 'grace_deleting', 'skipped_depleted'].includes(s)) return c.yellow(s);
  return s;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * A one-line spinner on a terminal's stderr. Off the terminal it draws nothing; `print` then just
 * writes, so piped output carries no control characters.
 */
export class Spinner {
  private timer: NodeJS.Timeout | null = null;
  private frame = 0;
  private text = '';
  private readonly started = Date.now();

  constructor(
    private readonly enabled: boolean,
    private readonly c: Colours,
  ) {}

  start(text: string): void {
    this.text = text;
    if (!this.enabled || this.timer) return;
    this.timer = setInterval(() => this.draw(), 80);
    this.timer.unref();
    this.draw();
  }

  update(text: string): void {
    this.text = text;
  }

  /** Changes the text and draws it now, rather than at the next turn (progress that must be seen). */
  show(text: string): void {
    this.text = text;
    if (this.timer) this.draw();
  }

  /** Writes a whole line to `out` above the spinner. */
  print(out: NodeJS.WritableStream, line: string): void {
    this.clear();
    out.write(line + '\n');
    if (this.timer) this.draw();
  }

  stop(): void {
    this.clear();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private draw(): void {
    const secs = ((Date.now() - this.started) / 1000).toFixed(1);
    // A line wider than the terminal wraps, and `\r` would then clear only its last row.
    const room = Math.max(10, (process.stderr.columns || 80) - secs.length - 5);
    const text = [...this.text].length > room ? [...this.text].slice(0, room - 1).join('') + '…' : this.text;
    process.stderr.write(`\r\x1b[K${this.c.cyan(FRAMES[this.frame++ % FRAMES.length])} ${text} ${this.c.dim(`${secs}s`)}`);
  }

  private clear(): void {
    if (this.enabled && this.timer) process.stderr.write('\r\x1b[K');
  }
}
