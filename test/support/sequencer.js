// Longest suites first, so that no long one starts last and keeps a worker busy alone at the end.
// Jest orders by the durations of the last run on this machine; a fresh clone (CI) has none and
// would order by file size, which put test/docker/hosting.e2e.test.ts (a few lines that run a
// shared suite for two minutes) last. These are the slow suites' durations in seconds on a 2-core
// CI machine (2026-11-26); a suite not listed counts as short. Only the order depends on them.
const Sequencer = require('@jest/test-sequencer').default;
const path = require('node:path');

const KNOWN_SECONDS = {
  'test/docker/hosting.e2e.test.ts': 120,
  'test/cli-hatch/exit-codes-json.test.ts': 98,
  'test/cli-hatch/hatch.test.ts': 78,
  'test/bench/runtime-phase.test.ts': 63,
  'test/docker/swarm.e2e.test.ts': 59,
  'test/cli/admin.test.ts': 45,
  'test/volumes/usage.test.ts': 45,
  'test/architecture/import-rules.test.ts': 40,
  'test/bench/smoke.test.ts': 38,
  'test/cli-hatch/pack.test.ts': 30,
  'test/scale-out/jobs-once-queues.test.ts': 30,
  'test/docker/previews.e2e.test.ts': 30,
  'test/docker/runtime.test.ts': 27,
  'test/docker/replicas.e2e.test.ts': 27,
  'test/energy/admin-set-energy.test.ts': 25,
  'test/metrics/compiled-start.test.ts': 25,
  'test/cli-hatch/logs-app.test.ts': 22,
  'test/cli-hatch/deploy-source.test.ts': 22,
  'test/faults/fuzz.test.ts': 20,
  'test/drains/cli.test.ts': 20,
};

class LongestFirst extends Sequencer {
  sort(tests) {
    const root = path.join(__dirname, '..', '..');
    const seconds = (test) => {
      const last = this.time(test);
      if (last != null) return last / 1000;
      return KNOWN_SECONDS[path.relative(root, test.path).split(path.sep).join('/')] ?? 0;
    };
    const keyed = tests.map((test) => ({ test, failed: this.hasFailed(test), s: seconds(test) }));
    // Jest's own order (failed first, then by time or size) decides among equals.
    const ordered = super.sort(keyed.map((k) => k.test));
    const rank = new Map(ordered.map((t, i) => [t, i]));
    return keyed.sort((a, b) => Number(b.failed) - Number(a.failed) || b.s - a.s || rank.get(a.test) - rank.get(b.test)).map((k) => k.test);
  }
}

module.exports = LongestFirst;
