/** One sample of the Prometheus text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_RE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL_RE = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;

/** Parses the text format strictly: a line that is neither a comment nor a sample fails. */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE_RE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL_RE.lastIndex = 0;
      let consumed = 0;
      for (let l = LABEL_RE.exec(m[2]); l; l = LABEL_RE.exec(m[2])) {
        labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
        consumed = LABEL_RE.lastIndex;
      }
      if (consumed !== m[2].length) throw new Error(`bad labels in: ${line}`);
    }
    // Like Prometheus (Go's ParseFloat), NaN and Inf in any case; prom-client writes `Nan`.
    const raw = m[3].toLowerCase();
    const value = raw === 'nan' ? NaN : raw === '+inf' || raw === 'inf' ? Infinity : raw === '-inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`bad value in: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return samples;
}

/** The `# TYPE` of each metric family. */
export function metricTypes(text: string): Record<string, string> {
  const types: Record<string, string> = {};
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types[m[1]] = m[2];
  return types;
}

export class Scrape {
  readonly samples: Sample[];
  readonly types: Record<string, string>;

  constructor(readonly text: string) {
    this.samples = parseMetrics(text);
    this.types = metricTypes(text);
  }

  /** Samples of `name` whose labels include `labels`. */
  find(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The value of the one sample of `name` with exactly these labels (ignoring `le`); 0 when absent. */
  value(name: string, labels: Record<string, string> = {}): number {
    const want = Object.keys(labels).length;
    const hits = this.find(name, labels).filter((s) => Object.keys(s.labels).filter((k) => k !== 'le').length === want);
    if (hits.length > 1) throw new Error(`${hits.length} samples of ${name} match ${JSON.stringify(labels)}`);
    return hits[0]?.value ?? 0;
  }

  has(name: string, labels: Record<string, string> = {}): boolean {
    return this.find(name, labels).length > 0;
  }
}

/** GET /metrics without a token; checks the status and the exposition content type. */
export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text}`);
  const type = res.headers.get('content-type') ?? '';
  if (!/^text\/plain; version=0\.0\.4/.test(type)) throw new Error(`GET /metrics content-type ${type}`);
  return new Scrape(text);
}

/** Scrapes until `ok` holds (for effects that finish on the server after the client saw the answer). */
export async function scrapeUntil(url: string, ok: (s: Scrape) => boolean, what: string): Promise<Scrape> {
  for (let i = 0; i < 200; i++) {
    const s = await scrape(url);
    if (ok(s)) return s;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`metrics never showed ${what}`);
}
