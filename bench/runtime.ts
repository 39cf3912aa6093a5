/**
 * The real runtime (opt-in: BENCH_ONLY=runtime; needs a Docker Engine): a gateway of its own with
 * HATCHERY_RUNTIME=docker on a database of its own, its eggs real containers of a small Node
 * image built offline (test/support/docker.ts), each figure against plain Docker measured in the
 * same run:
 *
 * 1. deploy of a prebuilt image (`deploy(input: {image})`) to LIVE vs `docker run` of the same
 *    image until its published port answers;
 * 2. a rebuild of an unchanged source (its own Dockerfile, the build cache warm) to LIVE vs
 *    `docker build` of the same context + `docker run` until the port answers (the gateway's
 *    deployment is LIVE only once its container listens: both sides do that work);
 * 3. HTTP (autocannon) and WebSocket round trips through the router vs straight to the egg's
 *    container on the port the runtime publishes on 127.0.0.1;
 * 4. a request to a sleeping egg until its first byte, through the router, vs `docker start` of a
 *    stopped container of the same image until the first byte on its published port;
 * 5. the gateway's memory and idle CPU per live egg, from none to BENCH_RUNTIME_EGGS.
 *
 * Only 127.0.0.1 is ever sent traffic (published ports and the router), never a container's
 * address. Everything made on the Engine is named after this run (eggs `brt-<pid>-<nonce>-…`,
 * images `hatchery-bench-*:<pid>-<nonce>…`, containers labelled `hatchery.bench`) and removed at
 * the end; what a killed run left is removed by the next one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
import vm from 'node:vm';
import type Docker from 'dockerode';
import { createClient, Client as WsClient } from 'graphql-ws';
import { Client } from 'pg';
import pino from 'pino';
import * as tar from 'tar';
import WebSocket from 'ws';
import { buildApp, Gateway } from '../src/app';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/log';
import { haproxyHasNamespaces } from '../src/http/edge';
import { EGG_PORT, LABELS, PORT_KEY } from '../src/runtime/docker/docker.runtime';
import { mayEnterNamespaces } from '../src/runtime/namespaces';
import { haproxyInstalled } from '../test/support/haproxy';
import { docker as engine, ensureNodeImage, sourceArchive } from '../test/support/node-image';
import { autocannon, LoadSettings, startLoad } from './load-process';
import { medianRound, num, Row } from './settings';

export const RUNTIME = {
  /** Deploys (1) and rebuilds (2) measured, each side; the median is reported. */
  runs: num('BENCH_RUNTIME_RUNS', 5),
  /** Wakes measured, each side. */
  wakes: num('BENCH_RUNTIME_WAKES', 10),
  /** Eggs live at once for the memory and CPU figures. */
  eggs: num('BENCH_RUNTIME_EGGS', 100),
  /** How long the idle CPU is measured, with no egg and with all of them. */
  idleSeconds: num('BENCH_RUNTIME_IDLE_SECONDS', 30),
  /** The gateway's HATCHERY_SLEEP_AFTER_MS: how soon the free egg of the wake figures sleeps. */
  sleepAfterMs: num('BENCH_RUNTIME_SLEEP_AFTER_MS', 1000),
  /** Every egg's memory (MB, the least the gateway allows). */
  eggMemoryMb: num('BENCH_RUNTIME_EGG_MEMORY_MB', 64),
  /** Deploys under way at once while the eggs of (5) are started. */
  deployConcurrency: num('BENCH_RUNTIME_DEPLOY_CONCURRENCY', 4),
  /** The gateway's HATCHERY_ROUTER_EDGE: HAProxy in front of the router where it is installed, else the Node router alone. */
  edge: (process.env.BENCH_ROUTER_EDGE ?? (haproxyInstalled(process.env.HATCHERY_HAPROXY_BIN || 'haproxy') ? 'haproxy' : 'node')) as 'haproxy' | 'node',
  /**
   * Rounds of the routed HTTP load, each between two loads straight to the container: the rows give
   * the median round's ratio and the range (adjacent loads here differ by 15 % and more).
   */
  routerRounds: num('BENCH_ROUTER_ROUNDS', 1),
  /** The gateway's HATCHERY_ROUTER_EDGE_NAMESPACES: `off` measures HAProxy reaching the egg through its published port. */
  namespaces: (process.env.BENCH_ROUTER_NAMESPACES ?? 'auto') as 'auto' | 'off',
};

/** Labels the containers this phase makes itself (the baselines): the run's tag. */
const BENCH_LABEL = 'hatchery.bench';
const DOMAIN = 'bench.test';

/**
 * The egg: `ok` to any request, and a WebSocket echo (text and binary frames of one fragment,
 * pings answered) written by hand, so it needs nothing but node.
 */
const SERVER = `'use strict';
const http = require('http');
const crypto = require('crypto');
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('ok');
});
function frame(op, payload) {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | op, n]) : Buffer.alloc(n < 65536 ? 4 : 10);
  if (n >= 126 && n < 65536) { head[0] = 0x80 | op; head[1] = 126; head.writeUInt16BE(n, 2); }
  else if (n >= 65536) { head[0] = 0x80 | op; head[1] = 127; head.writeBigUInt64BE(BigInt(n), 2); }
  return Buffer.concat([head, payload]);
}
server.on('upgrade', (req, socket) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  let buf = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    buf = buf.length > 0 ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (buf.length < 2) return;
      const op = buf[0] & 0x0f;
      const masked = (buf[1] & 0x80) !== 0;
      let len = buf[1] & 0x7f;
      let at = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); at = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); at = 10; }
      const end = at + (masked ? 4 : 0) + len;
      if (buf.length < end) return;
      const payload = Buffer.from(buf.subarray(end - len, end));
      if (masked) for (let i = 0; i < len; i++) payload[i] ^= buf[at + (i & 3)];
      buf = buf.subarray(end);
      if (op === 8) return void socket.end(frame(8, Buffer.alloc(0)));
      if (op === 9) socket.write(frame(10, payload));
      else if (op === 1 || op === 2) socket.write(frame(op, payload));
    }
  });
});
server.listen(Number(process.env.PORT) || ${EGG_PORT});
`;

/** The egg's source: its own Dockerfile, so the gateway and `docker build` build the very same context. */
const eggFiles = (base: string): Record<string, string> => ({
  Dockerfile: [`FROM ${base}`, 'WORKDIR /app', 'COPY server.js .', `ENV PORT=${EGG_PORT}`, `EXPOSE ${EGG_PORT}`, 'CMD ["node", "server.js"]', ''].join('\n'),
  'server.js': SERVER,
});

export interface RuntimeContext {
  /** A database URL: the phase makes a database of its own on the same server, and drops it. */
  databaseUrl: string;
  /** A directory for the gateway's data. */
  tmp: string;
  /** The HTTP and WebSocket measurements' connections, seconds and warm-up. */
  load: LoadSettings;
  log: (msg: string) => void;
  /** Over RUNTIME (the environment's): test/bench/runtime-phase.test.ts shrinks the counts. */
  settings?: Partial<typeof RUNTIME>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
/** Nearest rank. */
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(s.length * p) - 1)];
};
const round1 = (v: number) => Math.round(v * 10) / 10;

/** Whether a process of this machine has this id (EPERM: it exists, someone else's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The run tag's process: `<pid in base 36>-<nonce>`. */
const pidOf = (tag: string) => parseInt(tag.split('-')[0], 36);

/**
 * Removes from the Engine what runs tagged `tag` made, or (tag null) what runs whose process is
 * gone made: egg containers (`hatchery.app` = brt-<tag>-…), baseline containers, image tags, volumes.
 */
async function sweep(d: Docker, tag: string | null): Promise<number> {
  const mine = (t: string | undefined) => t !== undefined && (tag === null ? pidOf(t) !== process.pid && !alive(pidOf(t)) : t === tag);
  // A tag is the first two parts of what follows `brt-` (a slug) or the image's name (`:<tag>[-<n>]`).
  const tagIn = (s: string) => s.split('-').slice(0, 2).join('-');
  const slugTag = (slug: string | undefined) => (slug?.startsWith('brt-') ? tagIn(slug.slice('brt-'.length)) : undefined);
  let removed = 0;
  for (const c of await d.listContainers({ all: true })) {
    if (mine(c.Labels?.[BENCH_LABEL]) || mine(slugTag(c.Labels?.[LABELS.app]))) {
      await d
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
      removed++;
    }
  }
  for (const image of await d.listImages()) {
    for (const ref of image.RepoTags ?? []) {
      const [repo, t] = ref.split(':');
      const owner = repo.startsWith('hatchery/brt-') ? slugTag(repo.slice('hatchery/'.length)) : repo.startsWith('hatchery-bench-') ? tagIn(t) : undefined;
      if (!mine(owner)) continue;
      await d
        .getImage(ref)
        .remove()
        .catch(() => undefined);
      removed++;
    }
  }
  const { Volumes } = await d.listVolumes();
  for (const v of Volumes ?? []) {
    if (v.Name.startsWith('hatchery-vol-brt-') && mine(slugTag(v.Name.slice('hatchery-vol-'.length)))) {
      await d
        .getVolume(v.Name)
        .remove()
        .catch(() => undefined);
      removed++;
    }
  }
  return removed;
}

/** One GET to 127.0.0.1:`port` (with a Host, through the router): its status and body, and when its first byte came (performance.now()). */
function get(port: number, host?: string, timeoutMs = 30_000): Promise<{ status: number; body: string; firstByteAt: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/', headers: host ? { host } : {}, agent: false, timeout: timeoutMs }, (res) => {
      const firstByteAt = performance.now();
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), firstByteAt }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from 127.0.0.1:${port} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** GETs 127.0.0.1:`port` every 10 ms until a 200: when its first byte came. */
async function untilAnswers(port: () => Promise<number>, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const r = await get(await port(), undefined, 5000);
      if (r.status === 200) return r.firstByteAt;
      last = `status ${r.status}`;
    } catch (err) {
      last = String(err);
    }
    await sleep(10);
  }
  throw new Error(`no answer within ${timeoutMs} ms: ${last}`);
}

/** The host port a container's $PORT is published on (127.0.0.1). */
async function publishedPort(c: Docker.Container): Promise<number> {
  const info = await c.inspect();
  const port = info.NetworkSettings.Ports?.[PORT_KEY]?.[0]?.HostPort;
  if (!port) throw new Error(`container ${info.Name} publishes no port`);
  return Number(port);
}

/** The baseline's `docker run -d -p 127.0.0.1::8080 -e PORT=8080 <image>` (created, not started). */
function plainContainer(d: Docker, image: string, tag: string): Promise<Docker.Container> {
  return d.createContainer({
    Image: image,
    Env: [`PORT=${EGG_PORT}`],
    Labels: { [BENCH_LABEL]: tag },
    ExposedPorts: { [PORT_KEY]: {} },
    HostConfig: { PortBindings: { [PORT_KEY]: [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
}

/** `docker build` through the Engine API, to its end; throws what the build said went wrong. */
async function dockerBuild(d: Docker, context: NodeJS.ReadableStream, opts: Record<string, unknown>): Promise<string[]> {
  const stream = await d.buildImage(context, opts);
  const out: string[] = [];
  const outcome: { failure: string | null } = { failure: null };
  await new Promise<void>((resolve, reject) =>
    d.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(err) : resolve()),
      (e: { stream?: string; error?: string }) => {
        if (e.stream) out.push(e.stream);
        if (e.error) outcome.failure = e.error;
      },
    ),
  );
  if (outcome.failure) throw new Error(`docker build failed: ${outcome.failure}`);
  return out;
}

/** Calls the gateway's GraphQL API; throws its errors. */
async function gql(url: string, token: string, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const started = performance.now();
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  }).catch((err: Error) => {
    throw new Error(`${query.slice(0, 60)} ${JSON.stringify(variables)}: ${err.message} after ${Math.round(performance.now() - started)} ms`, { cause: err });
  });
  const body = (await res.json()) as { data?: any; errors?: unknown[] };
  if (body.errors?.length || !body.data) throw new Error(`GraphQL: ${JSON.stringify(body.errors ?? body).slice(0, 500)}`);
  return body.data;
}

/** Runs `work` on every item, `n` at a time. */
async function inParallel<T>(items: T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(n, items.length)) }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
}

/** Runs the phase; returns its table rows and raw figures. Everything it made is removed, whatever happens. */
export async function runtimePhase(ctx: RuntimeContext): Promise<{ rows: Row[]; raw: Record<string, unknown> }> {
  const { log } = ctx;
  const R = { ...RUNTIME, ...ctx.settings };
  const d = engine();
  const tag = `${process.pid.toString(36)}-${randomBytes(2).toString('hex')}`;
  const eggImage = `hatchery-bench-egg:${tag}`;
  const dbName = `hatchery_bench_rt_${randomBytes(4).toString('hex')}`;
  const dbUrl = new URL(ctx.databaseUrl);
  dbUrl.pathname = `/${dbName}`;
  const contextDir = mkdtempSync(path.join(os.tmpdir(), 'hatchery-bench-rt-'));
  let dataDir: string | null = null;
  let gateway: Gateway | null = null;
  let ws: WsClient | null = null;
  let dbMade = false;
  const onSignal = () => void sweep(d, tag).catch(() => undefined);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const stale = await sweep(d, null);
    if (stale > 0) log(`  removed ${stale} containers, image tags and volumes an interrupted run left`);
    const base = await ensureNodeImage(d);
    log(
      `The real runtime: Docker ${(await d.version()).Version}, eggs of ${base}; ${R.runs} deploys and rebuilds, ${R.wakes} wakes, ${R.eggs} eggs (${R.eggMemoryMb} MB each)`,
    );
    // The egg image, built once: the prebuilt image of (1), (3), (4), (5), and the warm cache of (2).
    const files = eggFiles(base);
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(contextDir, name), content);
    const context = () => tar.c({ cwd: contextDir, portable: true }, Object.keys(files)) as unknown as NodeJS.ReadableStream;
    await dockerBuild(d, context(), { t: eggImage, labels: { [BENCH_LABEL]: tag } });

    const admin = new Client({ connectionString: ctx.databaseUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${dbName}`);
      dbMade = true;
    } finally {
      await admin.end();
    }
    dataDir = mkdtempSync(path.join(ctx.tmp, 'hatchery-bench-rt-data-'));
    const config = loadConfig({
      HATCHERY_RUNTIME: 'docker',
      HATCHERY_NODE_IMAGE: base,
      HATCHERY_APPS_DOMAIN: DOMAIN,
      HATCHERY_ROUTER_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: dbUrl.toString(),
      HATCHERY_DATA_DIR: dataDir,
      HATCHERY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      HATCHERY_JOBS: 'off',
      HATCHERY_CRON_TICK_MS: '0',
      HATCHERY_HEALTH_TIMEOUT_MS: '30000',
      HATCHERY_SLEEP_AFTER_MS: String(R.sleepAfterMs),
      HATCHERY_MAX_EGGS_PER_ACCOUNT: String(R.eggs + R.runs + 10),
      HATCHERY_ENERGY_FREE_DAILY: '1000000',
      HATCHERY_ENERGY_FREE_WEEKLY: '10000000',
      HATCHERY_ENERGY_ALWAYS_ON_DAILY: '1000000',
      HATCHERY_ENERGY_ALWAYS_ON_WEEKLY: '10000000',
      HATCHERY_RATE_LIMIT_PER_MIN: '100000000',
      HATCHERY_RATE_LIMIT_ANON_PER_MIN: '100000000',
      HATCHERY_MAX_CONNECTIONS_PER_IP: String(ctx.load.connections + 100),
      HATCHERY_LOG_DRAIN_WORKER: 'off',
      HATCHERY_ROUTER_EDGE: R.edge,
      HATCHERY_ROUTER_EDGE_NAMESPACES: R.namespaces,
    });
    const logger = createLogger(process.env.BENCH_LOG_LEVEL ?? 'info', pino.destination({ dest: '/dev/null', sync: true }));
    gateway = buildApp(config, { logger });
    const url = await gateway.start(0);
    const gw = gateway;
    const routerPort = Number(new URL(gw.routerUrl).port);
    const { token } = await gw.services.accounts.createUser(`bench-runtime-${tag}@example.com`);
    ws = createClient({
      url: url.replace(/^http/, 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}` },
      lazy: false,
    });
    const statusClient = ws;

    /** Resolves when the deployment leaves BUILDING (performance.now() then); throws if it failed. */
    const settled = (id: string) =>
      new Promise<number>((resolve, reject) => {
        const stop = statusClient.subscribe<{ deploymentStatus: { status: string; failureReason: string | null } }>(
          { query: 'subscription($id: ID!) { deploymentStatus(id: $id) { status failureReason } }', variables: { id } },
          {
            next: ({ data, errors }) => {
              if (errors?.length) return reject(new Error(JSON.stringify(errors)));
              const s = data?.deploymentStatus;
              if (!s || s.status === 'BUILDING') return;
              const at = performance.now();
              stop();
              if (s.status === 'LIVE') resolve(at);
              else reject(new Error(`deployment ${id} is ${s.status}: ${s.failureReason}`));
            },
            error: reject,
            complete: () => reject(new Error(`the status of ${id} ended before it settled`)),
          },
        );
      });
    const eggs: Array<{ slug: string; deployments: string[] }> = [];
    let n = 0;
    const newEgg = async (kind: string, tier: 'free' | 'always_on') => {
      const egg = { slug: `brt-${tag}-${kind}${n++}`, deployments: [] as string[] };
      await gql(url, token, 'mutation($slug: String!) { createApp(input: { slug: $slug }) { id } }', { slug: egg.slug });
      await gql(url, token, 'mutation($app: String!, $mb: Int!) { updateResources(app: $app, input: { memoryMb: $mb }) { id } }', {
        app: egg.slug,
        mb: R.eggMemoryMb,
      });
      if (tier !== 'free') await gw.services.apps.setTier(egg.slug, tier);
      eggs.push(egg);
      return egg;
    };
    /** Deploys and waits until LIVE: how long from the mutation (ms). */
    const deploy = async (egg: { slug: string; deployments: string[] }, input: { image?: string; source?: string }) => {
      const started = performance.now();
      const { deploy: made } = await gql(url, token, 'mutation($input: DeployInput!) { deploy(input: $input) { id } }', {
        input: { project: egg.slug, ...input },
      });
      egg.deployments.push(made.id);
      return { ms: (await settled(made.id)) - started, id: made.id as string };
    };
    const viaRouter = (slug: string) => get(routerPort, `${slug}.${DOMAIN}`);
    const expectOk = (what: string, r: { status: number; body: string }) => {
      if (r.status !== 200 || r.body !== 'ok') throw new Error(`${what}: ${r.status} ${r.body.slice(0, 300)}`);
    };
    const eggPort = async (deploymentId: string) => {
      const [c] = await d.listContainers({ filters: { label: [`${LABELS.deployment}=${deploymentId}`] } });
      const port = c?.Ports.find((p) => p.PrivatePort === EGG_PORT && p.PublicPort)?.PublicPort;
      if (!port) throw new Error(`deployment ${deploymentId} has no running container with a published port`);
      return port;
    };
    /** Until the egg has one container left (its superseded one drained and removed). */
    const untilAlone = async (slug: string) => {
      const deadline = Date.now() + 30_000;
      while ((await d.listContainers({ all: true, filters: { label: [`${LABELS.app}=${slug}`] } })).length > 1 && Date.now() < deadline) await sleep(100);
    };
    const rows: Row[] = [];
    const raw: Record<string, unknown> = { settings: R, docker: (await d.version()).Version, image: eggImage, base };

    // 1. Deploy of a prebuilt image to LIVE, vs docker run until the port answers.
    log(`  (1) deploy of a prebuilt image to LIVE vs docker run + port answers, ${R.runs} each`);
    const deployEggs: Array<{ slug: string; deployments: string[] }> = [];
    for (let i = 0; i < R.runs; i++) deployEggs.push(await newEgg('d', 'always_on'));
    const dGateway: number[] = [];
    const dBase: number[] = [];
    const dRouter: number[] = [];
    const plainRun = async () => {
      const started = performance.now();
      const c = await plainContainer(d, eggImage, tag);
      try {
        await c.start();
        const port = await publishedPort(c);
        return (await untilAnswers(() => Promise.resolve(port))) - started;
      } finally {
        await c.remove({ force: true });
      }
    };
    for (let i = 0; i < R.runs; i++) {
      const gatewaySide = async () => {
        const { ms, id } = await deploy(deployEggs[i], { image: eggImage });
        const live = performance.now();
        const r = await viaRouter(deployEggs[i].slug);
        expectOk(`the router to ${deployEggs[i].slug}`, r);
        dRouter.push(r.firstByteAt - live);
        dGateway.push(ms);
        return id;
      };
      if (i % 2 === 0) {
        dBase.push(await plainRun());
        await sleep(500);
        await gatewaySide();
      } else {
        await gatewaySide();
        await sleep(500);
        dBase.push(await plainRun());
      }
      log(`    run ${i + 1}: gateway ${dGateway[i].toFixed(0)} ms, docker run ${dBase[i].toFixed(0)} ms`);
      await sleep(500);
    }
    raw.deploy = { gatewayMs: dGateway, baselineMs: dBase, routerFirstByteAfterLiveMs: dRouter };
    rows.push({
      measure: `Runtime: deploy of a prebuilt image to LIVE vs docker run + port answers (median of ${R.runs}, ms)`,
      gateway: Math.round(median(dGateway)),
      baseline: Math.round(median(dBase)),
      ratio: median(dGateway) / median(dBase),
      goal: '≤ 1.3',
      met: median(dGateway) / median(dBase) <= 1.3,
    });

    // 2. A rebuild of an unchanged source (warm cache) to LIVE, vs docker build + docker run until the port answers.
    log(`  (2) rebuild of an unchanged source (warm cache) to LIVE vs docker build + run + port answers, ${R.runs} each`);
    const buildEgg = await newEgg('b', 'always_on');
    const archive = await sourceArchive(files);
    const up = await fetch(`${url}/v1/apps/${buildEgg.slug}/sources`, {
      method: 'POST',
      headers: { 'content-type': 'application/gzip', authorization: `Bearer ${token}` },
      body: archive,
    });
    const upBody = (await up.json()) as { id?: string };
    if (!upBody.id) throw new Error(`uploading the source: ${up.status} ${JSON.stringify(upBody)}`);
    const sourceId = upBody.id;
    const bGateway: number[] = [];
    const bBase: Array<{ build: number; run: number; total: number }> = [];
    const plainBuild = async (i: number) => {
      const started = performance.now();
      const out = await dockerBuild(d, context(), { t: `hatchery-bench-build:${tag}-${i}`, labels: { [BENCH_LABEL]: tag, 'hatchery.bench.build': String(i) } });
      if (i === 0 && !out.some((l) => l.includes('Using cache'))) log('    (the baseline build used no cache)');
      const built = performance.now();
      const c = await plainContainer(d, `hatchery-bench-build:${tag}-${i}`, tag);
      try {
        await c.start();
        const port = await publishedPort(c);
        const answered = await untilAnswers(() => Promise.resolve(port));
        return { build: built - started, run: answered - built, total: answered - started };
      } finally {
        await c.remove({ force: true });
      }
    };
    // Unmeasured, once each: the source's first build (from the egg image's cache already) and the baseline's.
    await deploy(buildEgg, { source: sourceId });
    await plainBuild(0);
    for (let i = 1; i <= R.runs; i++) {
      const gatewaySide = async () => {
        bGateway.push((await deploy(buildEgg, { source: sourceId })).ms);
        await untilAlone(buildEgg.slug);
      };
      if (i % 2 === 1) {
        bBase.push(await plainBuild(i));
        await sleep(500);
        await gatewaySide();
      } else {
        await gatewaySide();
        await sleep(500);
        bBase.push(await plainBuild(i));
      }
      const b = bBase[bBase.length - 1];
      log(`    run ${i}: gateway ${bGateway[i - 1].toFixed(0)} ms, docker build ${b.build.toFixed(0)} ms + run ${b.run.toFixed(0)} ms`);
      await sleep(500);
    }
    const bTotals = bBase.map((b) => b.total);
    raw.rebuild = { gatewayMs: bGateway, baseline: bBase };
    rows.push({
      measure: `Runtime: rebuild of an unchanged source (warm cache) to LIVE vs docker build + run + port answers (median of ${R.runs}, ms)`,
      gateway: Math.round(median(bGateway)),
      baseline: Math.round(median(bTotals)),
      ratio: median(bGateway) / median(bTotals),
      goal: '≤ 1.2',
      met: median(bGateway) / median(bTotals) <= 1.2,
    });

    // 3. HTTP and WebSockets through the router vs straight to the egg's published port.
    // HAProxy reaches the egg in its own network namespace (on its loopback) where the gateway may enter it, else through the published port.
    const viaNamespace =
      R.edge === 'haproxy' && R.namespaces === 'auto' && mayEnterNamespaces() && haproxyHasNamespaces(process.env.HATCHERY_HAPROXY_BIN || 'haproxy');
    log(
      `  (3) HTTP and WebSocket round trips through the router (${R.edge === 'haproxy' ? `HAProxy in front of the Node router, to the egg ${viaNamespace ? 'in its own network namespace' : 'through its published port'}` : 'the Node router alone'}) vs straight to the container's published port`,
    );
    const target = deployEggs[deployEggs.length - 1];
    const targetDeployment = target.deployments[target.deployments.length - 1];
    const direct = await eggPort(targetDeployment);
    const host = `${target.slug}.${DOMAIN}`;
    expectOk('straight to the egg', await get(direct));
    expectOk('through the router', await viaRouter(target.slug));
    const straightT = { url: `http://127.0.0.1:${direct}/` };
    const routerT = { url: `http://127.0.0.1:${routerPort}/`, headers: { host } };
    // The gateway runs in this process: its CPU per request while it routes (warm-up included, as loaded as the rest).
    const cpuPerRequest = async (label: string, t: { url: string; headers?: Record<string, string> }) => {
      const cpu0 = process.cpuUsage();
      const r = await autocannon(label, t, ctx.load);
      const cpu = process.cpuUsage(cpu0);
      return { ...r, gatewayCpuUsPerRequest: +((cpu.user + cpu.system) / Math.max(1, r.rps * (ctx.load.seconds + ctx.load.warmup))).toFixed(1) };
    };
    const rounds = Math.max(1, R.routerRounds);
    const of = (i: number) => (rounds > 1 ? ` (round ${i + 1} of ${rounds})` : '');
    // Each routed load between two straight ones (averaged), a straight load shared by the rounds either side.
    const straights = [await cpuPerRequest('straight to the container', straightT)];
    const measured: Array<{ routed: Awaited<ReturnType<typeof cpuPerRequest>>; straight: { rps: number; p99: number } }> = [];
    for (let i = 0; i < rounds; i++) {
      const routedRound = await cpuPerRequest(`through the router${of(i)}`, routerT);
      straights.push(await cpuPerRequest(`straight to the container, again${of(i)}`, straightT));
      const [b, a] = straights.slice(-2);
      measured.push({ routed: routedRound, straight: { rps: (b.rps + a.rps) / 2, p99: (b.latency.p99 + a.latency.p99) / 2 } });
    }
    const tput = medianRound(measured, (m) => m.routed.rps / m.straight.rps);
    const tail = medianRound(measured, (m) => m.routed.latency.p99 / Math.max(m.straight.p99, 1));
    const { routed, straight } = tput.round;
    log(`    the gateway's CPU per request routed: ${routed.gatewayCpuUsPerRequest} µs`);
    const wsEcho = async (label: string, wsUrl: string, headers?: Record<string, string>) => {
      const child = startLoad('ws-echo', {
        url: wsUrl,
        headers,
        sockets: ctx.load.connections,
        bytes: 64,
        warmup: ctx.load.warmup,
        duration: ctx.load.seconds,
      });
      try {
        const r = (await child.next('result', (ctx.load.seconds + ctx.load.warmup + 30) * 1000)) as {
          rate: number;
          messages: number;
          wrong: number;
          failures: string[];
          latencyMs: { p50: number; p99: number };
        };
        if (r.failures.length || r.wrong || r.messages === 0) throw new Error(`${label}: ${JSON.stringify(r)}`);
        log(`  ${label.padEnd(34)} ${r.rate.toFixed(0).padStart(6)} msg/s  p50 ${r.latencyMs.p50} ms  p99 ${r.latencyMs.p99} ms`);
        return r;
      } finally {
        await child.stop();
      }
    };
    const wsBefore = await wsEcho('ws straight to the container', `ws://127.0.0.1:${direct}/`);
    const wsRouted = await wsEcho('ws through the router', `ws://127.0.0.1:${routerPort}/`, { host });
    const wsAfter = await wsEcho('ws straight to the container, again', `ws://127.0.0.1:${direct}/`);
    const wsStraight = (wsBefore.rate + wsAfter.rate) / 2;
    raw.router = {
      edge: R.edge,
      namespaces: viaNamespace,
      http: { straight: straights, router: routed, ...(rounds > 1 ? { rounds: measured } : {}) },
      ws: { straight: [wsBefore, wsAfter], router: wsRouted },
    };
    rows.push(
      {
        measure: 'Runtime: HTTP through the router vs straight to the container: throughput (req/s)',
        gateway: Math.round(routed.rps),
        baseline: Math.round(straight.rps),
        ratio: routed.rps / straight.rps,
        range: tput.range,
        goal: '≥ 0.7',
        met: routed.rps / straight.rps >= 0.7,
      },
      {
        measure: 'Runtime: HTTP through the router vs straight to the container: p99 latency (ms)',
        gateway: tail.round.routed.latency.p99,
        baseline: round1(tail.round.straight.p99),
        ratio: tail.round.routed.latency.p99 / Math.max(tail.round.straight.p99, 1),
        range: tail.range,
        goal: '≤ 2',
        met: tail.round.routed.latency.p99 <= 2 * Math.max(tail.round.straight.p99, 1),
      },
      {
        measure: 'Runtime: WebSocket echo through the router vs straight: messages/s',
        gateway: Math.round(wsRouted.rate),
        baseline: Math.round(wsStraight),
        ratio: wsRouted.rate / wsStraight,
        goal: '≥ 0.7',
        met: wsRouted.rate / wsStraight >= 0.7,
      },
    );

    // 4. Wake of a sleeping egg to its first byte through the router, vs docker start of a stopped container + first byte.
    log(`  (4) wake of a sleeping egg to first byte through the router vs docker start + first byte, ${R.wakes} each`);
    const sleeper = await newEgg('w', 'free');
    const sleeperDeployment = (await deploy(sleeper, { image: eggImage })).id;
    const stopped = await plainContainer(d, eggImage, tag);
    await stopped.start();
    await untilAnswers(() => publishedPort(stopped));
    await stopped.kill();
    await stopped.wait();
    const wGateway: number[] = [];
    const wBase: number[] = [];
    const asleep = async () => {
      const deadline = Date.now() + R.sleepAfterMs + 30_000;
      for (;;) {
        const [row] = await gw.ds.query<Array<{ slept_at: Date | null }>>('SELECT slept_at FROM deployments WHERE id = $1', [sleeperDeployment]);
        if (row?.slept_at) return;
        if (Date.now() > deadline) throw new Error(`${sleeper.slug} did not fall asleep`);
        await sleep(50);
      }
    };
    const wakeGateway = async () => {
      await asleep();
      const started = performance.now();
      const r = await viaRouter(sleeper.slug);
      expectOk(`waking ${sleeper.slug}`, r);
      wGateway.push(r.firstByteAt - started);
    };
    const wakeBase = async () => {
      const started = performance.now();
      await stopped.start();
      const port = await publishedPort(stopped);
      wBase.push((await untilAnswers(() => Promise.resolve(port))) - started);
      await stopped.kill();
      await stopped.wait();
    };
    for (let i = 0; i < R.wakes; i++) {
      if (i % 2 === 0) {
        await wakeBase();
        await wakeGateway();
      } else {
        await wakeGateway();
        await wakeBase();
      }
      log(`    wake ${i + 1}: gateway ${wGateway[i].toFixed(0)} ms, docker start ${wBase[i].toFixed(0)} ms`);
    }
    await stopped.remove({ force: true });
    raw.wake = { gatewayMs: wGateway, baselineMs: wBase };
    for (const [p, name] of [
      [0.5, 'p50'],
      [0.99, 'p99'],
    ] as const) {
      rows.push({
        measure: `Runtime: wake of a sleeping egg to first byte through the router vs docker start + first byte, ${name} of ${R.wakes} (ms)`,
        gateway: Math.round(pct(wGateway, p)),
        baseline: Math.round(pct(wBase, p)),
        ratio: pct(wGateway, p) / pct(wBase, p),
        goal: '(reported)',
        met: null,
      });
    }

    // 5. The gateway's memory and idle CPU per live egg: none live, then R.eggs, then none again.
    log(`  (5) the gateway's memory and idle CPU with no egg live, then ${R.eggs}, then none again`);
    /** Deletes the eggs' deployments (the current one of each egg last) and waits until none of the run's eggs runs. */
    const noneLive = async (of: Array<{ slug: string; deployments: string[] }>) => {
      await inParallel(of, R.deployConcurrency, async (egg) => {
        for (const id of egg.deployments.splice(0)) await gql(url, token, 'mutation($id: ID!) { deleteDeployment(id: $id) }', { id });
      });
      const deadline = Date.now() + 60_000;
      while ((await d.listContainers({ filters: { label: [LABELS.app] } })).some((c) => c.Labels[LABELS.app].startsWith(`brt-${tag}-`))) {
        if (Date.now() > deadline) throw new Error('the deleted deployments’ containers are still running');
        await sleep(200);
      }
    };
    await noneLive(eggs);
    const idle = async () => {
      // What the last changes set off (runners starting or stopping, their lines stored) settles first, and the garbage of the earlier measurements goes.
      await sleep(Math.min(10_000, Math.max(1000, (R.idleSeconds * 1000) / 3)));
      collectGarbage();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await sleep(R.idleSeconds * 1000);
      const cpu = process.cpuUsage(cpu0);
      const seconds = (performance.now() - t0) / 1000;
      collectGarbage();
      const mem = process.memoryUsage();
      const live = (await d.listContainers({ filters: { label: [LABELS.app] } })).filter((c) => c.Labels[LABELS.app].startsWith(`brt-${tag}-`)).length;
      return { live, seconds, cpuMsPerMinute: ((cpu.user + cpu.system) / 1000 / seconds) * 60, rssMb: mem.rss / 2 ** 20, heapUsedMb: mem.heapUsed / 2 ** 20 };
    };
    const none = await idle();
    log(
      `    no egg: RSS ${none.rssMb.toFixed(1)} MB, heap ${none.heapUsedMb.toFixed(1)} MB, CPU ${none.cpuMsPerMinute.toFixed(0)} ms per minute (${none.live} containers)`,
    );
    const many: Array<{ slug: string; deployments: string[] }> = [];
    for (let i = 0; i < R.eggs; i++) many.push(await newEgg('e', 'always_on'));
    const deploying = performance.now();
    await inParallel(many, R.deployConcurrency, async (egg) => void (await deploy(egg, { image: eggImage })));
    const deploySeconds = (performance.now() - deploying) / 1000;
    log(`    ${R.eggs} eggs deployed in ${deploySeconds.toFixed(1)} s`);
    for (const egg of [many[0], many[many.length - 1]]) expectOk(`the router to ${egg.slug}`, await viaRouter(egg.slug));
    const all = await idle();
    log(
      `    ${R.eggs} eggs: RSS ${all.rssMb.toFixed(1)} MB, heap ${all.heapUsedMb.toFixed(1)} MB, CPU ${all.cpuMsPerMinute.toFixed(0)} ms per minute (${all.live} containers)`,
    );
    if (all.live !== R.eggs) throw new Error(`expected ${R.eggs} egg containers running, found ${all.live}`);
    await noneLive(many);
    const again = await idle();
    log(
      `    no egg again: RSS ${again.rssMb.toFixed(1)} MB, heap ${again.heapUsedMb.toFixed(1)} MB, CPU ${again.cpuMsPerMinute.toFixed(0)} ms per minute (${again.live} containers)`,
    );
    raw.eggs = { none, all, again, deploySeconds };
    // Memory against the gateway before the eggs; CPU against the two windows without, averaged (the machine's drift cancels).
    const per = (k: 'rssMb' | 'heapUsedMb' | 'cpuMsPerMinute') =>
      (all[k] - (k === 'cpuMsPerMinute' ? (none[k] + again[k]) / 2 : none[k])) / Math.max(1, R.eggs);
    rows.push(
      {
        measure: `Runtime: ${R.eggs} live eggs: the gateway's RSS per egg (MB; no egg → ${R.eggs})`,
        gateway: +per('rssMb').toFixed(3),
        baseline: null,
        ratio: null,
        goal: '(reported)',
        met: null,
      },
      {
        measure: `Runtime: ${R.eggs} live eggs: the gateway's heap used per egg (MB)`,
        gateway: +per('heapUsedMb').toFixed(3),
        baseline: null,
        ratio: null,
        goal: '(reported)',
        met: null,
      },
      {
        measure: `Runtime: ${R.eggs} live eggs: the gateway's idle CPU per egg (ms per minute; no egg before and after, averaged)`,
        gateway: +per('cpuMsPerMinute').toFixed(2),
        baseline: null,
        ratio: null,
        goal: '(reported)',
        met: null,
      },
    );
    return { rows, raw };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await ws?.dispose();
    // Stopped, the gateway leaves its eggs' containers running (another would adopt them): removed here.
    await gateway?.stop().catch((err) => log(`runtime gateway stop: ${err}`));
    const removed = await sweep(d, tag).catch((err) => {
      log(`runtime cleanup: ${err}`);
      return 0;
    });
    log(`  removed ${removed} containers, image tags and volumes`);
    if (dbMade) {
      const admin = new Client({ connectionString: ctx.databaseUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err) => log(`runtime database drop: ${err}`));
      await admin.end();
    }
    rmSync(contextDir, { recursive: true, force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}
