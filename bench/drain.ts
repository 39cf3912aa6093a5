/**
 * The log drain phase of `npm run bench` (opt-in: BENCH_ONLY=…,drain): lines written through the
 * gateway's log writer at BENCH_LOG_DRAIN_RATE per second for BENCH_LOG_DRAIN_SECONDS, shipped by the
 * gateway's drain shipper to an NDJSON receiver over https on 127.0.0.1 (a self-signed
 * certificate the gateway trusts through HATCHERY_WEBHOOK_CA_FILE). The receiver checks that
 * every line arrived, in order, none lost.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Gateway } from '../src/app';
import { newId } from '../src/ids';
import { App, Tier } from '../src/modules/apps/app.entity';
import { Deployment, DeploymentStatus } from '../src/modules/deployments/deployment.entity';
import { LogType } from '../src/modules/deployments/log-line.entity';
import { num, Row } from './settings';

export const DRAIN = {
  rate: num('BENCH_LOG_DRAIN_RATE', 5000),
  seconds: num('BENCH_LOG_DRAIN_SECONDS', 10),
  /** After the last line is written, how long the receiver may wait for the rest. */
  waitMs: num('BENCH_LOG_DRAIN_WAIT_MS', 30_000),
};

/** Runs the phase; returns its table rows and raw figures. */
export async function drainPhase(
  gateway: Gateway,
  viewer: { id: string; token: string },
  tls: { key: Buffer; cert: Buffer },
  log: (msg: string) => void,
): Promise<{ rows: Row[]; raw: Record<string, unknown> }> {
  log(`Log drain: ${DRAIN.rate} lines/s for ${DRAIN.seconds} s through the log writer, shipped as NDJSON over https to a receiver on 127.0.0.1`);
  // The receiver: every line's seq per deployment, in arrival order, and when it arrived.
  const seqs: number[] = [];
  let requests = 0;
  let bytes = 0;
  let firstAt = 0;
  let lastAt = 0;
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests++;
      bytes += body.length;
      for (const line of body.split('\n')) {
        if (!line) continue;
        const l = JSON.parse(line) as { seq: number; message: string };
        if (l.message.startsWith('drain-')) seqs.push(l.seq);
      }
      lastAt = performance.now();
      if (!firstAt) firstAt = lastAt;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    // An egg of the viewer's own with one deployment, its lines written straight through the writer.
    const at = new Date();
    const slug = `bench-drain-${at.getTime().toString(36)}`;
    const app = Object.assign(new App(), {
      id: newId('app', at),
      slug,
      ownerId: viewer.id,
      tier: Tier.FREE,
      memoryMb: null,
      currentDeploymentId: null,
      createdAt: at,
    });
    await gateway.ds.getRepository(App).insert(app);
    const depId = newId('dep', at);
    await gateway.ds.getRepository(Deployment).insert(
      Object.assign(new Deployment(), {
        id: depId,
        appId: app.id,
        status: DeploymentStatus.LIVE,
        revision: 1,
        url: `https://${slug}--${depId.slice(-8)}.hatchery.run`,
        envSealed: null,
        envKeys: [],
        memoryMb: 256,
        volumeMb: null,
        failureReason: null,
        createdById: viewer.id,
        meteredUntil: null,
        leaseUntil: null,
        createdAt: at,
        updatedAt: at,
        finishedAt: at,
      }),
    );
    const res = await fetch(`${gateway.url}/v1/apps/${slug}/log-drains`, {
      method: 'POST',
      headers: { authorization: `Bearer ${viewer.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `https://127.0.0.1:${port}/drain` }),
    });
    if (res.status !== 201) throw new Error(`creating the drain: ${res.status} ${await res.text()}`);

    const writer = gateway.services.deployments.writer;
    await writer.open(depId);
    const total = Math.round(DRAIN.rate * DRAIN.seconds);
    const started = performance.now();
    let written = 0;
    while (written < total) {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * DRAIN.rate) + 1);
      while (written < due) writer.append(depId, LogType.RUNTIME, `drain-${written++} GET /api/items/${written} 200 4ms`);
      await sleep(2);
    }
    await writer.flush();
    const writeMs = performance.now() - started;
    const writtenAt = performance.now();
    const deadline = writtenAt + DRAIN.waitMs;
    while (seqs.length < total && performance.now() < deadline) await sleep(20);
    const lagMs = seqs.length >= total ? Math.max(0, lastAt - writtenAt) : null;
    // Every line once at least, in order: the first arrival of each seq is 1, 2, 3, …
    const seen = new Set<number>();
    let inOrder = true;
    let next = 1;
    for (const s of seqs) {
      if (seen.has(s)) continue;
      seen.add(s);
      if (s !== next) inOrder = false;
      next = s + 1;
    }
    const delivered = seen.size;
    const writeRate = (total / writeMs) * 1000;
    const shipRate = lastAt > firstAt ? (delivered / (lastAt - firstAt)) * 1000 : 0;
    log(
      `  ${total} lines written at ${writeRate.toFixed(0)} lines/s; received ${delivered}/${total} (${seqs.length - delivered} repeats) in ${requests} requests ` +
        `(${(bytes / 1e6).toFixed(1)} MB), ${inOrder ? 'in order' : 'OUT OF ORDER'}; shipped at ${shipRate.toFixed(0)} lines/s; last line ${lagMs === null ? 'never' : `${lagMs.toFixed(0)} ms`} after the last write`,
    );
    const rows: Row[] = [
      {
        measure: `Log drain: lines/s shipped to an https receiver (target ${DRAIN.rate})`,
        gateway: Math.round(shipRate),
        baseline: null,
        ratio: null,
        goal: `≥ ${DRAIN.rate}`,
        met: shipRate >= DRAIN.rate * 0.98,
      },
      {
        measure: 'Log drain: lines received once at least, in order (share)',
        gateway: +(delivered / total).toFixed(4),
        baseline: null,
        ratio: null,
        goal: 'all (= 1), in order',
        met: delivered === total && inOrder,
      },
      {
        measure: 'Log drain: last line received after the last write (ms)',
        gateway: lagMs === null ? `> ${DRAIN.waitMs}` : Math.round(lagMs),
        baseline: null,
        ratio: null,
        goal: '(reported)',
        met: null,
      },
    ];
    return { rows, raw: { total, writeRate, delivered, repeats: seqs.length - delivered, inOrder, requests, bytes, shipRate, lagMs } };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
