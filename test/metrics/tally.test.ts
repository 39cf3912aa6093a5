import { Counter, Histogram, Registry } from 'prom-client';
import { Tally, TallyMetric } from '../../src/metrics-tally';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const register = (registry: Registry, metric: TallyMetric) => registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);

/** The tally's scrape text is prom-client's own for the same observations. */
describe('Tally: counters and histograms counted in plain numbers', () => {
  const observations: Array<[Record<string, string>, number]> = [
    [{ method: 'GET', route: '/deployments', status_class: '2xx' }, 0.003],
    [{ method: 'GET', route: '/deployments', status_class: '2xx' }, 0.005], // on a bound: counted in it
    [{ method: 'POST', route: '/graphql', status_class: '2xx' }, 0.0101],
    [{ method: 'GET', route: '/deployments', status_class: '2xx' }, 2.5],
    [{ method: 'GET', route: 'unmatched', status_class: '4xx' }, 0],
    [{ method: 'POST', route: '/graphql', status_class: '5xx' }, 12], // past the last bound: +Inf only
    [{ method: 'GET', route: '/deployments/:id', status_class: '2xx' }, 0.7],
  ];
  const key = (l: Record<string, string>) => `${l.method} ${l.status_class} ${l.route}`;

  it('scrapes as prom-client’s Counter and Histogram do', async () => {
    const theirs = new Registry();
    const counter = new Counter({ name: 'x_requests_total', help: 'Requests.', labelNames: ['method', 'route', 'status_class'], registers: [theirs] });
    const histogram = new Histogram({
      name: 'x_duration_seconds',
      help: 'Time.',
      labelNames: ['method', 'route', 'status_class'],
      buckets: BOUNDS,
      registers: [theirs],
    });
    const ours = new Registry();
    const tally = new Tally(BOUNDS);
    register(ours, tally.counter('x_requests_total', 'Requests.'));
    register(ours, tally.histogram('x_duration_seconds', 'Time.'));
    // No observation yet: the same empty metrics.
    expect(await ours.metrics()).toBe(await theirs.metrics());
    for (const [labels, seconds] of observations) {
      counter.inc(labels);
      histogram.observe(labels, seconds);
      tally.add(key(labels), () => ({ ...labels }), seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('x_duration_seconds_bucket{le="0.005",method="GET",route="/deployments",status_class="2xx"} 2');
    expect(text).toContain('x_requests_total{method="GET",route="/deployments",status_class="2xx"} 3');
    // resetMetrics clears it as it clears prom-client's.
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('a counter alone; the labels are made once per series', async () => {
    const ours = new Registry();
    const tally = new Tally();
    register(ours, tally.counter('y_total', 'Ops.'));
    let made = 0;
    const labels = () => {
      made += 1;
      return { operation: 'Q', outcome: 'success' };
    };
    for (let i = 0; i < 5; i++) tally.add('Q success', labels);
    expect(made).toBe(1);
    expect(await ours.metrics()).toBe('# HELP y_total Ops.\n# TYPE y_total counter\ny_total{operation="Q",outcome="success"} 5\n');
  });
});
