/**
 * Labelled observations counted in plain numbers and shown to prom-client's registry as a counter
 * and/or a histogram at scrape time. The hot path (every HTTP request, every GraphQL operation)
 * then costs one Map lookup by a key its caller builds, where prom-client hashes and validates
 * the labels object of every `inc` and `observe`. The text a scrape gets is the one prom-client's
 * own Counter and Histogram give for the same observations.
 */

interface Series {
  labels: Record<string, string>;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative), by the index of its upper bound. */
  buckets: number[];
}

/** What prom-client's registry reads of a metric (its `get`), the values in its own shapes. */
interface MetricValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
}

export interface TallyMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: 'sum' }>;
  reset(): void;
}

export class Tally {
  private readonly series = new Map<string, Series>();

  /** `bounds`: the histogram's bucket upper bounds, ascending (none for a counter alone). */
  constructor(private readonly bounds: readonly number[] = []) {}

  /**
   * One observation of the series `key` (which its labels must determine); `labels` is called
   * only for a series not seen before. `value` counts towards the histogram (seconds).
   */
  add(key: string, labels: () => Record<string, string>, value = 0): void {
    const s = this.series.get(key) ?? this.begin(key, labels());
    s.count += 1;
    s.sum += value;
    for (let i = 0; i < this.bounds.length; i++) {
      if (value <= this.bounds[i]) {
        s.buckets[i] += 1;
        break;
      }
    }
  }

  /** The series `key` shown from now on, at 0 until observed (so that rate() sees its first increase). */
  start(key: string, labels: Record<string, string>): void {
    this.begin(key, labels);
  }

  private begin(key: string, labels: Record<string, string>): Series {
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, count: 0, sum: 0, buckets: this.bounds.map(() => 0) }));
    return s;
  }

  /** The observations' count by series, as a prom-client Counter shows it. */
  counter(name: string, help: string): TallyMetric {
    return this.metric(name, help, 'counter', () => [...this.series.values()].map((s) => ({ labels: s.labels, value: s.count })));
  }

  /** The observations as a prom-client Histogram shows them: cumulative buckets, `+Inf`, sum and count per series. */
  histogram(name: string, help: string): TallyMetric {
    return this.metric(name, help, 'histogram', () => {
      const values: MetricValue[] = [];
      for (const s of this.series.values()) {
        let acc = 0;
        this.bounds.forEach((le, i) => {
          acc += s.buckets[i];
          values.push({ labels: { le }, sharedLabels: s.labels, value: acc, metricName: `${name}_bucket` });
        });
        values.push(
          { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${name}_bucket` },
          { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum` },
          { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count` },
        );
      }
      return values;
    });
  }

  private metric(name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue[]): TallyMetric {
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      get: () => Promise.resolve({ name, help, type, values: values(), aggregator: 'sum' as const }),
      reset: () => this.series.clear(),
    };
  }
}
