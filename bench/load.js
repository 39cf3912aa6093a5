#!/usr/bin/env node
'use strict';
/**
 * The load side of `npm run bench`, run as a separate process so the clients do not share the
 * server's event loop. Every target is 127.0.0.1. Reports one JSON object per line on stdout.
 *
 *   node bench/load.js http '<json>'       autocannon against one URL; prints the result
 *   node bench/load.js subscribe '<json>'  N graphql-ws subscribers; reads commands from stdin
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

/**
 * graphql-ws subscribers of one deployment's log (the gateway and the bare broadcast speak the
 * same protocol). Lines whose message starts with `marker` are counted; others are probes.
 * stdin: {"cmd":"expect","count":N,"drainMs":M} → waits until every subscriber has N lines or
 * M ms pass, then reports and exits.
 */
async function subscribe() {
  loopbackOnly(spec.url.replace(/^ws/, 'http'));
  const hist = new Histogram(120_000);
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
  const marker = Buffer.from(spec.marker);
  const payload = JSON.stringify({ query: spec.query, variables: spec.variables });

  function open(i) {
    return new Promise((resolve, reject) => {
      const s = { got: 0, lastSeq: -1, disorder: 0, seenAny: false, ws: null, closed: null };
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
          // One line per message (deploymentLogs) or several (deploymentLogBatches): each line
          // object starts with its seq, then its timestamp, then (after type) its message; a
          // quote inside a JSON string is escaped, so `{"seq":` cannot occur in a message.
          const now = Date.now();
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
            hist.add(now - isoMs(data, at));
            if (seq <= s.lastSeq) s.disorder++;
            s.lastSeq = seq;
            got++;
          }
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
      // Over every expected line: one never delivered counts as late beyond measure (null).
      latencyMs: {
        p50: hist.pct(0.5, expected * subs.length),
        p90: hist.pct(0.9, expected * subs.length),
        p99: hist.pct(0.99, expected * subs.length),
        max: delivered === expected * subs.length ? hist.worst : null,
        maxDelivered: hist.worst,
      },
    });
    break;
  }
  rl.close();
  for (const s of subs) s.ws.terminate();
}

// Stopped by the harness: exit normally (so a --cpu-prof given in BENCH_LOAD_NODE_ARGS is written).
process.on('SIGTERM', () => process.exit(0));

const modes = { http, subscribe };
if (!modes[mode]) {
  process.stderr.write(`usage: node bench/load.js http|subscribe '<json>'\n`);
  process.exit(2);
}
modes[mode]().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench load: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
