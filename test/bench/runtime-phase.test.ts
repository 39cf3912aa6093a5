import { tmpdir } from 'node:os';
import type { Row } from '../../bench/settings';
import { runtimePhase } from '../../bench/runtime';
import { LABELS } from '../../src/runtime/docker/docker.runtime';
import { docker, dockerHere } from '../support/docker';

/**
 * The benchmark's real-runtime phase (bench/runtime.ts, `BENCH_ONLY=runtime`), shrunk: one deploy
 * and one rebuild each side, one wake, two eggs, one-second loads. Speed is the benchmark's
 * business: this checks that every row comes out with numbers, and that nothing is left on the
 * Engine. Skipped where no Engine answers, never in CI (which starts one).
 */
// In CI it always runs (.ci/run starts an Engine): a missing one fails it there, never skips it.
(process.env.CI === 'true' || dockerHere ? describe : describe.skip)('bench: the real runtime phase (shrunk)', () => {
  let rows: Row[] = [];
  let raw: any = {};
  const lines: string[] = [];

  beforeAll(async () => {
    ({ rows, raw } = await runtimePhase({
      databaseUrl: process.env.HATCHERY_TEST_SERVER_URL!,
      tmp: tmpdir(),
      load: { connections: 2, seconds: 1, warmup: 0 },
      log: (line) => lines.push(line),
      settings: { runs: 1, wakes: 1, eggs: 2, idleSeconds: 1, deployConcurrency: 2, routerRounds: 2 },
    }));
  }, 300_000);

  const row = (start: string): Row => {
    const r = rows.find((x) => x.measure.startsWith(start));
    if (!r) throw new Error(`no row "${start}" in ${JSON.stringify(rows.map((x) => x.measure))}\n${lines.join('\n')}`);
    return r;
  };

  it('produces every row, each figure a number, each goal judged', () => {
    expect(rows.map((r) => r.measure)).toEqual([
      'Runtime: deploy of a prebuilt image to LIVE vs docker run + port answers (median of 1, ms)',
      'Runtime: rebuild of an unchanged source (warm cache) to LIVE vs docker build + run + port answers (median of 1, ms)',
      'Runtime: HTTP through the router vs straight to the container: throughput (req/s)',
      'Runtime: HTTP through the router vs straight to the container: p99 latency (ms)',
      'Runtime: WebSocket echo through the router vs straight: messages/s',
      'Runtime: wake of a sleeping egg to first byte through the router vs docker start + first byte, p50 of 1 (ms)',
      'Runtime: wake of a sleeping egg to first byte through the router vs docker start + first byte, p99 of 1 (ms)',
      "Runtime: 2 live eggs: the gateway's RSS per egg (MB; no egg → 2)",
      "Runtime: 2 live eggs: the gateway's heap used per egg (MB)",
      "Runtime: 2 live eggs: the gateway's idle CPU per egg (ms per minute; no egg before and after, averaged)",
    ]);
    for (const r of rows.slice(0, 7)) {
      expect(r.gateway).toEqual(expect.any(Number));
      expect(r.baseline).toEqual(expect.any(Number));
      expect((r.gateway as number) > 0 && (r.baseline as number) >= 0).toBe(true);
    }
    for (const r of rows.slice(0, 5)) expect(typeof r.met).toBe('boolean');
    for (const start of [
      'Runtime: deploy',
      'Runtime: rebuild',
      'Runtime: HTTP through the router vs straight to the container: throughput',
      'Runtime: WebSocket',
    ])
      expect(row(start).ratio).toEqual(expect.any(Number));
    for (const r of rows.slice(7)) expect(r.gateway).toEqual(expect.any(Number));
  });

  it('counts right: every run measured on both sides, the eggs all live at once', () => {
    expect(raw.deploy.gatewayMs).toHaveLength(1);
    expect(raw.deploy.baselineMs).toHaveLength(1);
    expect(raw.rebuild.gatewayMs).toHaveLength(1);
    expect(raw.rebuild.baseline).toHaveLength(1);
    expect(raw.wake.gatewayMs).toHaveLength(1);
    expect(raw.wake.baselineMs).toHaveLength(1);
    expect(raw.router.http.router.requests).toBeGreaterThan(0);
    // BENCH_ROUTER_ROUNDS: each routed load between two straight ones; the row is the median round's, with the range.
    expect(raw.router.http.rounds).toHaveLength(2);
    expect(raw.router.http.straight).toHaveLength(3);
    const tput = row('Runtime: HTTP through the router vs straight to the container: throughput');
    const ratios = (raw.router.http.rounds as Array<{ routed: { rps: number }; straight: { rps: number } }>).map((m) => m.routed.rps / m.straight.rps);
    expect(tput.range).toEqual([Math.min(...ratios), Math.max(...ratios)]);
    expect(ratios).toContain(tput.ratio);
    // HAProxy in the egg's own network namespace where the gateway may enter it (CI runs as root, with Debian's HAProxy).
    expect(raw.router.namespaces).toEqual(process.env.CI === 'true' ? true : expect.any(Boolean));
    expect(raw.router.ws.router.messages).toBeGreaterThan(0);
    // HAProxy in front where it is installed (CI installs it), as `npm run bench` measures it.
    expect(raw.router.edge).toEqual(process.env.CI === 'true' ? 'haproxy' : expect.stringMatching(/^(haproxy|node)$/));
    expect(raw.eggs.none.live).toBe(0);
    expect(raw.eggs.all.live).toBe(2);
    expect(raw.eggs.again.live).toBe(0);
  });

  it('leaves nothing on the Engine: no egg container, baseline container or image of the run', async () => {
    const d = docker();
    const tag = String(raw.image).split(':')[1];
    const containers = (await d.listContainers({ all: true })).filter(
      (c) => c.Labels?.['hatchery.bench'] === tag || c.Labels?.[LABELS.app]?.startsWith(`brt-${tag}-`),
    );
    expect(containers).toEqual([]);
    const images = (await d.listImages()).flatMap((i) => i.RepoTags ?? []).filter((t) => t.includes(tag));
    expect(images).toEqual([]);
  });
});
