#!/usr/bin/env node
'use strict';
/**
 * The load side of `npm run bench`, run as a separate process so the clients do not share the
 * server's event loop. Every target is 127.0.0.1. Reports one JSON object per line on stdout.
 *
 *   node bench/load.js http '<json>'       autocannon against one URL; prints the result
 *   node bench/load.js subscribe '<json>'  N graphql-ws subscribers; reads commands from stdin
 *   node bench/load.js ws-echo '<json>'    WebSocket round trips to an echo server; prints the result
 */
const autocannon = require('autocannon');
const WebSocket = require('ws');
const readline = require('node:readline');

const [mode, raw] = process.argv.slice(2);
const spec = JSON.parse(raw || '{}');

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function loopbackOnly(url) {
  const host = new URL(url).hostname;
  if (host !== '127.0.0.1') throw new Error(`bench load only targets 127.0.0.1, not ${host}`);
}

function cannon(opts) {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function http() {
  loopbackOnly(spec.url);
  const base = {
    url: spec.url,
    method: spec.method || 'GET',
    headers: spec.headers || {},
    body: spec.body,
    connections: spec.connections || 10,
    pipelining: 1,
    timeout: 10,
  };
  if (spec.warmup > 0) await cannon({ ...base, duration: spec.warmup });
  // The harness starts counting its own CPU here (the servers it runs in its process).
  emit({ event: 'measuring' });
  const r = await cannon({ ...base, duration: spec.duration || 5 });
  emit({
    event: 'result',
    requests: r.requests.total,
    duration: r.duration,
    rps: r.requests.total / r.duration,
    latency: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.average },
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats || {}).map(([code, v]) => [code, v.count])),
  });
}

/** Latency histogram in whole milliseconds; the last bucket holds everything beyond. */
class Histogram {
  constructor(maxMs) {
    this.counts = new Float64Array(maxMs + 2);
    this.max = maxMs + 1;
    this.n = 0;
    this.worst = 0;
  }
  add(ms) {
    const v = ms < 0 ? 0 : ms;
    this.counts[v > this.max ? this.max : Math.floor(v)]++;
    this.n++;
    if (v > this.worst) this.worst = v;
  }
  /** Non-empty buckets as [ms, count]. */
  entries() {
    const out = [];
    for (let i = 0; i <= this.max; i++) if (this.counts[i]) out.push([i, this.counts[i]]);
    return out;
  }
  /** The p-quantile over `total` lines, where lines never delivered count as slower than any; null then. */
  pct(p, total = this.n) {
    if (this.n === 0) return null;
    const target = Math.ceil(total * p);
    if (target > this.n) return null;
    let seen = 0;
    for (let i = 0; i <= this.max; i++) {
      seen += this.counts[i];
      if (seen >= target) return i;
    }
    return this.max;
  }
}

const SEQ = Buffer.from('"seq":');
const TS_FIELD = Buffer.from(',"timestamp":"');
const MSG = Buffer.from('"message":"');
const NEXT = Buffer.from('{"id":"1","type":"next"');

/** Whether `buf` holds the bytes of `part` at `at`. */
function startsAt(buf, at, part) {
  if (at + part.length > buf.length) return false;
  for (let i = 0; i < part.length; i++) if (buf[at + i] !== part[i]) return false;
  return true;
}

/** The unsigned integer written at `at` in `buf` (ASCII digits). */
function digits(buf, at, n) {
  let v = 0;
  for (let i = at; i < at + n; i++) v = v * 10 + buf[i] - 48;
  return v;
}

let dayKey = -1;
let dayMs = 0;
/**
 * Milliseconds since the epoch of the ISO instant `YYYY-MM-DDTHH:MM:SS.mmmZ` at `at` in `buf`,
 * read from its bytes (Date.parse on a decoded string per line was most of this process's time,
 * and a busy measuring process adds its own queueing to every latency it measures).
 */
function isoMs(buf, at) {
  const key = digits(buf, at, 4) * 10000 + digits(buf, at + 5, 2) * 100 + digits(buf, at + 8, 2);
  if (key !== dayKey) {
    dayKey = key;
    dayMs = Date.UTC(Math.floor(key / 10000), (Math.floor(key / 100) % 100) - 1, key % 100);
  }
  return dayMs + ((digits(buf, at + 11, 2) * 60 + digits(buf, at + 14, 2)) * 60 + digits(buf, at + 17, 2)) * 1000 + digits(buf, at + 20, 3);
}

const LINE = Buffer.from('{"seq":');
/** The subscribe mode's latency histogram, and the bytes a counted line's message starts with. */
let hist = null;
let marker = null;

/**
 * Every line of a `next` message, timed if `s` is timed: one line per message (deploymentLogs) or several
 * (deploymentLogBatches). Each line object starts with its seq, then its timestamp, then (after
 * type) its message; a quote inside a JSON string is escaped, so `{"seq":` cannot occur in a
 * message. Returns how many counted (marked) lines it held.
 */
function scanLines(data, s, now) {
  let got = 0;
  // One pass: from each `{` (memchr) to the next; within a line, the few bytes read are checked here.
  const n = data.length - MSG.length;
  for (let i = data.indexOf(123, NEXT.length); i >= 0 && i < n; i = data.indexOf(123, i + 1)) {
    if (!startsAt(data, i + 1, SEQ)) continue; // `{"seq":` opens a line
    let j = i + 1 + SEQ.length;
    let seq = 0;
    for (let c = data[j]; c >= 48 && c <= 57; c = data[++j]) seq = seq * 10 + c - 48;
    if (!startsAt(data, j, TS_FIELD)) continue;
    const at = j + TS_FIELD.length;
    let k = at + 24;
    while (k < n && !startsAt(data, k, MSG)) k++;
    i = k + MSG.length - 1;
    if (!startsAt(data, k + MSG.length, marker)) continue; // a probe line
    if (s.timed) hist.add(now - isoMs(data, at));
    if (seq <= s.lastSeq) s.disorder++;
    s.lastSeq = seq;
    got++;
  }
  return got;
}

/** The seq of the line opening at `at` (`{"seq":N,`), and whether its message is a counted one. */
function lineAt(data, at) {
  let j = at + LINE.length;
  let seq = 0;
  for (let c = data[j]; c >= 48 && c <= 57; c = data[++j]) seq = seq * 10 + c - 48;
  const m = data.indexOf(MSG, j);
  return { seq, marked: m >= 0 && startsAt(data, m + MSG.length, marker) };
}

/**
 * The lines of a `next` message counted without reading each: a message holds consecutive lines
 * of one deployment (a flush's, or a page of storage), so its first and last line say how many.
 * A message with probe and counted lines both (never seen: probes are flushed before counting
 * starts) is read line by line. Untimed: latency is measured on every `timeEvery`-th subscriber.
 */
function countLines(data, s, now) {
  const first = data.indexOf(LINE, NEXT.length);
  if (first < 0) return 0;
  const last = data.lastIndexOf(LINE);
  const a = lineAt(data, first);
  const b = last === first ? a : lineAt(data, last);
  if (!a.marked && !b.marked) return 0;
  if (a.marked !== b.marked) return scanLines(data, s, now);
  if (a.seq <= s.lastSeq || b.seq < a.seq) s.disorder++;
  s.lastSeq = b.seq;
  return b.seq - a.seq + 1;
}

/**
 * graphql-ws subscribers of one deployment's log (the gateway and the bare broadcast speak the
 * same protocol). Lines whose message starts with `marker` are counted; others are probes.
 * stdin: {"cmd":"expect","count":N,"drainMs":M} → waits until every subscriber has N lines or
 * M ms pass, then reports and exits.
 */
async function subscribe() {
  loopbackOnly(spec.url.replace(/^ws/, 'http'));
  hist = new Histogram(120_000);
  marker = Buffer.from(spec.marker);
  // Every timeEvery-th subscriber times each line it gets (reading every line's timestamp costs
  // this process more than the server's sending does); all of them count every line.
  const timeEvery = Math.max(1, Math.floor(spec.timeEvery || 1));
  const subs = [];
  let expected = Infinity;
  let ready = 0;
  let complete = 0;
  let firstAt = 0;
  let lastAt = 0;
  let delivered = 0;
  let messages = 0; // next messages carrying counted lines
  let onProgress = () => undefined;
  const failures = [];
  const payload = JSON.stringify({ query: spec.query, variables: spec.variables });

  function open(i) {
    return new Promise((resolve, reject) => {
      const s = { got: 0, lastSeq: -1, disorder: 0, seenAny: false, timed: i % timeEvery === 0, ws: null, closed: null };
      const ws = new WebSocket(spec.url, 'graphql-transport-ws', { perMessageDeflate: false });
      s.ws = ws;
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${spec.token}` } })));
      ws.on('message', (data) => {
        // Scanned as bytes: the messages are ASCII JSON, written by the server in a fixed order.
        if (data.length > NEXT.length && data.compare(NEXT, 0, NEXT.length, 0, NEXT.length) === 0) {
          if (!s.seenAny) {
            s.seenAny = true;
            if (++ready === spec.subscribers) emit({ event: 'ready' });
          }
          const now = Date.now();
          const got = s.timed ? scanLines(data, s, now) : countLines(data, s, now);
          if (got === 0) return;
          messages++;
          s.got += got;
          delivered += got;
          if (!firstAt) firstAt = now;
          lastAt = now;
          if (s.got >= expected && s.got - got < expected) {
            complete++;
            onProgress();
          }
          return;
        }
        const text = data.toString();
        const msg = JSON.parse(text);
        if (msg.type === 'connection_ack') {
          ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: JSON.parse(payload) }));
          resolve(s);
        } else if (msg.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
        else if (msg.type === 'error' || msg.type === 'complete') failures.push({ subscriber: i, message: msg });
      });
      ws.on('error', (err) => {
        failures.push({ subscriber: i, error: String(err.message || err) });
        reject(err);
      });
      ws.on('close', (code, reason) => {
        s.closed = { code, reason: reason.toString() };
      });
    });
  }

  // Connect in waves: a burst of 500 handshakes at once measures the accept queue, not streaming.
  const wave = 50;
  for (let i = 0; i < spec.subscribers; i += wave) {
    const batch = [];
    for (let j = i; j < Math.min(spec.subscribers, i + wave); j++) batch.push(open(j));
    subs.push(...(await Promise.all(batch)));
  }
  emit({ event: 'connected', subscribers: subs.length });

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const cmd = JSON.parse(line);
    if (cmd.cmd !== 'expect') continue;
    expected = cmd.count;
    for (const s of subs) if (s.got >= expected) complete++;
    const started = Date.now();
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, cmd.drainMs);
      onProgress = () => {
        if (complete >= subs.length) {
          clearTimeout(timer);
          resolve();
        }
      };
      onProgress();
    });
    const got = subs.map((s) => s.got);
    // Latency over every line a timed subscriber was expected to get: one never delivered counts as late beyond measure (null).
    const timed = subs.filter((s) => s.timed);
    const timedTotal = expected * timed.length;
    const timedDelivered = timed.reduce((n, s) => n + s.got, 0);
    emit({
      event: 'report',
      subscribers: subs.length,
      expectedPerSubscriber: expected,
      delivered,
      expectedTotal: expected * subs.length,
      completeSubscribers: subs.filter((s) => s.got === expected).length,
      messages,
      minPerSubscriber: Math.min(...got),
      maxPerSubscriber: Math.max(...got),
      outOfOrder: subs.reduce((n, s) => n + s.disorder, 0),
      closed: subs.filter((s) => s.closed).length,
      failures: failures.slice(0, 5),
      drainWaitMs: Date.now() - started,
      deliverySpanMs: lastAt - firstAt,
      firstAt,
      lastAt,
      timedSubscribers: timed.length,
      timedLines: hist.n,
      latencyMs: {
        p50: hist.pct(0.5, timedTotal),
        p90: hist.pct(0.9, timedTotal),
        p99: hist.pct(0.99, timedTotal),
        max: timedDelivered === timedTotal ? hist.worst : null,
        maxDelivered: hist.worst,
      },
      // The timed lines' latencies, [ms, lines] (one bucket per millisecond): several load processes' merge.
      histogram: hist.entries(),
    });
    break;
  }
  rl.close();
  for (const s of subs) s.ws.terminate();
}

/**
 * WebSocket round trips: `sockets` connections to `url` (with `headers`: a Host for the router),
 * each sending a `bytes`-long text message and waiting for its echo before the next, for
 * `warmup` seconds unmeasured, then `duration` seconds; prints messages/s and round-trip latency.
 */
async function wsEcho() {
  loopbackOnly(spec.url.replace(/^ws/, 'http'));
  const text = 'x'.repeat(spec.bytes || 64);
  const open = () =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(spec.url, { headers: spec.headers || {}, perMessageDeflate: false });
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    });
  const sockets = await Promise.all(Array.from({ length: spec.sockets || 10 }, open));
  let measuring = false;
  let running = true;
  let messages = 0;
  let wrong = 0;
  const failures = [];
  const rtts = [];
  const loops = sockets.map(
    (ws) =>
      new Promise((resolve) => {
        let sent = 0;
        const send = () => {
          sent = performance.now();
          ws.send(text);
        };
        ws.on('message', (data) => {
          if (data.length !== text.length) wrong++;
          if (measuring) {
            messages++;
            rtts.push(performance.now() - sent);
          }
          if (running) send();
          else resolve();
        });
        ws.on('error', (err) => failures.push(String(err.message || err)));
        ws.on('close', () => {
          if (running) failures.push('closed during the run');
          resolve();
        });
        send();
      }),
  );
  await new Promise((r) => setTimeout(r, (spec.warmup || 0) * 1000));
  measuring = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, (spec.duration || 5) * 1000));
  measuring = false;
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 5000))]);
  for (const ws of sockets) ws.terminate();
  rtts.sort((a, b) => a - b);
  const pct = (p) => (rtts.length ? +rtts[Math.min(rtts.length - 1, Math.ceil(rtts.length * p) - 1)].toFixed(2) : null);
  emit({
    event: 'result',
    sockets: sockets.length,
    messages,
    seconds,
    rate: messages / seconds,
    latencyMs: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: rtts.length ? +rtts[rtts.length - 1].toFixed(2) : null },
    wrong,
    failures: failures.slice(0, 5),
  });
}

// Stopped by the harness: exit normally (so a --cpu-prof given in BENCH_LOAD_NODE_ARGS is written).
process.on('SIGTERM', () => process.exit(0));

const modes = { http, subscribe, 'ws-echo': wsEcho };
if (!modes[mode]) {
  process.stderr.write(`usage: node bench/load.js http|subscribe|ws-echo '<json>'\n`);
  process.exit(2);
}
modes[mode]().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench load: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
