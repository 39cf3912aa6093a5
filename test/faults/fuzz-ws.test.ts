// The gateway (support/gateway loads src/app) first: it loads reflect-metadata.
import { collect, rest, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import fc from 'fast-check';
import { FormattedExecutionResult, print } from 'graphql';
import { Client as WsClient, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { CreateCronDocument, DeploymentLogStreamDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { ERROR_HTTP } from '../../src/http/problems';
import { DateTimeScalar } from '../../src/graphql/scalars';
import { openStream, LiveStream, runWs } from '../abuse/helpers';
import { deploy, makeApp, settle } from '../support/factories';
import { DatabaseWatch, furnish, Furnished } from './helpers';
import { closeReason } from '../support/errors';

/**
 * Property-based fuzzing of the variables of the graphql-ws subscriptions `deploymentLogs(id, type,
 * since)` and `deploymentStatus(id)`, sent over one real graphql-ws connection, and of `Query.cron(app,
 * id)`'s variables, sent over HTTP POST /graphql and over graphql-ws as a query (test/faults/fuzz.test.ts
 * fuzzes the typed HTTP operations; subscriptions and `cron` have no typed HTTP twin there).
 *
 * Every case is classified by an oracle from the variables alone (the schema's own coercion, the
 * DateTime scalar, and which ids the caller can see): `accept` (a valid stream or result must come
 * back), `refuse` (errors must come back), or `either` (an id that differs from a real one only by
 * case or padding). Properties, after every case:
 *   - a refusal carries errors whose `extensions.code` is a client (4xx) code, never
 *     INTERNAL_SERVER_ERROR; an accepted stream delivers what was asked for (the deployment named,
 *     lines of the type asked, after `since`);
 *   - the socket stays open: no close event, still the one socket the client opened, a follow-up
 *     query on it answers, and a status stream held open for the whole file is neither ended nor
 *     sent an error;
 *   - the database is exactly as before (row counts and contents of every table), and nothing
 *     polluted Object.prototype (the gateway runs in this process).
 *
 * Runs are bounded (FUZZ_RUNS); FUZZ_SEED=<seed> replays a run; CI (CI=true) uses a fixed seed, like
 * fuzz.test.ts.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 50);

/** How long one answer may take before the case fails as unanswered (a bound, not a wait). */
const ANSWER_MS = 10_000;
/** A huge string, well under the 1 MiB graphql-ws message limit (over it, `ws` closes with 1009 by design). */
const HUGE = 300_000;

const LOGS = print(DeploymentLogStreamDocument);
const STATUS = print(DeploymentStatusDocument);
const CRON = 'query CronFuzz($app: String!, $id: ID!) { cron(app: $app, id: $id) { id schedule command enabled } }';

/** Error codes of client faults: every code the gateway maps below 500, and GraphQL's own. */
const CLIENT_CODES = new Set([
  ...Object.entries(ERROR_HTTP)
    .filter(([, v]) => v.status < 500)
    .map(([k]) => k),
  'GRAPHQL_VALIDATION_FAILED',
  'GRAPHQL_PARSE_FAILED',
]);

type GqlError = { message: string; extensions?: Record<string, unknown> };
type Vars = Record<string, unknown>;
type Expect = 'accept' | 'refuse' | 'either';
interface Case {
  fault: string;
  variables: Vars;
}

// ---------------------------------------------------------------------------------------------
// Values

/** Sets a key as an own data property, also `__proto__` (plain assignment would set the prototype). */
function put(o: Vars, key: string, value: unknown): Vars {
  Object.defineProperty(o, key, { value, enumerable: true, configurable: true, writable: true });
  return o;
}
const own = (o: Vars, key: string) => Object.hasOwn(o, key);
const show = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 300 ? `${s.slice(0, 300)}…(${s.length} chars)` : s;
};

const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\uD800',
    '\uDFFFx',
    '😀🥚',
    'ǅ\u200B\u202E',
    "' OR 1=1 --",
    '%00',
    'null',
    'true',
    '1e999',
    'NaN',
    '9'.repeat(40),
  ),
);

const KEYS = fc.oneof(text, fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', 'id', 'type', 'since', 'app'));

const { json } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
    text,
    fc.array(tie('json'), { maxLength: 4 }),
    fc.array(fc.tuple(KEYS, tie('json')), { maxLength: 4 }).map((entries) => entries.reduce((o, [k, v]) => put(o, k, v), {} as Vars)),
  ),
}));

const nested = (depth: number, leaf: unknown, wrap: (v: unknown) => unknown) => {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = wrap(v);
  return v;
};

/** Shapes that no scalar or enum variable takes, whichever real value they carry. */
function hostile(real: string): fc.Arbitrary<unknown> {
  return fc
    .constantFrom<() => unknown>(
      () => JSON.parse(`{"__proto__": {"polluted": "yes", "id": ${JSON.stringify(real)}}}`),
      () => JSON.parse(`{"constructor": {"prototype": {"polluted": "yes"}}}`),
      () => ({ id: real }),
      () => ({ value: real, toString: real }),
      () => [real],
      () => [[real]],
      () => [],
      () => Array.from({ length: 1000 }, () => real),
      () => nested(2000, real, (v) => [v]),
      () => nested(2000, real, (v) => ({ a: v })),
      () => 0.5,
      () => -1e-300,
      () => true,
      () => false,
      () => ({}),
    )
    .map((make) => make());
}

/** Integers beyond the safe range (and huge floats that are integers): ID takes them as strings. */
const bigNumbers = fc.constantFrom(2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, Number.MAX_SAFE_INTEGER + 1, 2 ** 31, -(2 ** 31) - 1);

const hex = fc.stringMatching(/^[0-9a-z]{26}$/);

/** Variants of a real id or slug: another case, padding, a NUL, one character short or long. */
const variants = (real: string) =>
  fc.constantFrom(
    real.toUpperCase(),
    ` ${real}`,
    `${real} `,
    `${real}\n`,
    `\t${real}`,
    `${real}\u0000`,
    real.slice(0, -1),
    `${real}0`,
    `${real}%`,
    `${real}'--`,
  );

/** Values of another kind than the variable's type takes (never coerced). */
function wrongKind(kind: 'ID' | 'String' | 'LogType' | 'DateTime'): fc.Arbitrary<unknown> {
  const obj = fc.dictionary(text, json, { minKeys: 1, maxKeys: 2 });
  const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
  switch (kind) {
    case 'ID':
      return fc.oneof(
        finite.filter((d) => !Number.isInteger(d)),
        fc.boolean(),
        obj,
        fc.array(json, { maxLength: 3 }),
      );
    default:
      return fc.oneof(fc.integer(), finite, bigNumbers, fc.boolean(), obj, fc.array(json, { maxLength: 3 }));
  }
}

const LOG_TYPES = ['BUILD', 'RUNTIME'];
const nearTypes = fc.oneof(
  text,
  fc.constantFrom(
    'build',
    'runtime',
    'Build',
    ' BUILD',
    'BUILD ',
    'BUILD\u0000',
    'BOGUS',
    '',
    'LIVE',
    'FAILED',
    'BUILD,RUNTIME',
    'BUILD|RUNTIME',
    'x'.repeat(HUGE),
  ),
);

/** RFC 3339 date-times over the scalar's whole range (years 0000 to 9999), as clients write them. */
const validSince = fc.oneof(
  fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date('2020-01-01T00:00:00.000Z'), max: new Date('2040-01-01T00:00:00.000Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '0000-01-01T00:00:00+23:59',
    '9999-12-31T23:59:59.999-23:59',
    '2026-11-20t12:00:00z',
    '2026-11-20T12:00:00.123456789Z',
    '2026-11-20T12:00:00-00:00',
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:00:00Z',
  ),
);
const nearSince = fc.oneof(
  text,
  fc.constantFrom(
    'yesterday',
    '',
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2016-12-31T23:59:60Z',
    '2026-11-20',
    '2026-11-20T12:00:00',
    '2026-11-20 12:00:00Z',
    '12:00:00Z',
    '2026-11-20T24:00:00Z',
    '2026-11-20T12:00:00+24:00',
    '2026-11-20T12:00:00|05:00',
    '+275760-09-13T00:00:00.000Z',
    '-000001-01-01T00:00:00Z',
    '10000-01-01T00:00:00Z',
    'Infinity',
    '1e999',
    '2026-11-20T12:00:00Z'.repeat(2),
    'x'.repeat(HUGE),
  ),
  fc.date({ noInvalidDate: true }).map((d) => String(d.getTime())),
  fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
);

function sinceIsValid(v: unknown): boolean {
  try {
    const d = DateTimeScalar.parseValue(v);
    return d instanceof Date && !Number.isNaN(d.getTime());
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The gateway, its fixtures, the database snapshot

let t: TestGateway;
let f: Furnished;
/** Another account's egg, deployment and cron: the owner's token must never reach them. */
let theirs: { slug: string; deployment: string; cronId: string };
/** Stored log lines of each of the owner's deployments (the fixture writes no more while it runs). */
let stored: Record<string, Array<{ type: string; ms: number }>>;
let watch: DatabaseWatch;

beforeAll(async () => {
  t = await startGateway({
    HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid',
    HATCHERY_WEBHOOK_WORKER: 'off',
    HATCHERY_LOG_DRAIN_WORKER: 'off',
    HATCHERY_SIM_RUNTIME_LOG_MS: '3600000',
  });
  watch = new DatabaseWatch(t.gateway.ds);
  f = await furnish(t);
  const app = await makeApp(t.url, f.stranger);
  const dep = await deploy(t.url, f.stranger, app.slug);
  expect(await settle(t.url, f.stranger, dep.id)).toBe('LIVE');
  const cron = await rest(t.url, f.stranger.token, 'POST', `/v1/apps/${app.slug}/crons`, { schedule: '0 0 1 1 *', command: 'echo theirs' });
  expect(cron.status).toBe(201);
  theirs = { slug: app.slug, deployment: dep.id, cronId: cron.body.id };
  // Quiet: the stranger's deployment has logged its start (like furnish's current one), seen on its log stream.
  const theirClient = wsClient(t.url, f.stranger.token);
  try {
    const lines = collect(theirClient, DeploymentLogStreamDocument, { id: dep.id, type: 'RUNTIME' });
    await waitForItem(lines, (l) => l.deploymentLogs.message === 'Listening on port 8080');
    lines.unsubscribe();
  } finally {
    await theirClient.dispose();
  }
  const rows: Array<{ deployment_id: string; type: string; ms: number }> = await t.gateway.ds.query(
    `SELECT deployment_id, upper(type) AS type, (extract(epoch FROM timestamp) * 1000)::float8 AS ms FROM log_lines WHERE deployment_id = ANY($1)`,
    [f.deployments],
  );
  stored = Object.fromEntries(f.deployments.map((d) => [d, rows.filter((r) => r.deployment_id === d).map((r) => ({ type: r.type, ms: Number(r.ms) }))]));
  for (const d of f.deployments) expect(stored[d].some((l) => l.type === 'BUILD')).toBe(true);
  await rebase();
}, 60_000);
afterAll(() => t?.stop());

const rebase = () => watch.rebase();
const expectUnchanged = (what: string) => watch.expectUnchanged(what);
const check = <T>(arb: fc.Arbitrary<T>, run: (v: T) => Promise<void>, numRuns = RUNS) => watch.check(arb, run, numRuns);

// ---------------------------------------------------------------------------------------------
// One graphql-ws connection for the whole file, watched

interface Watched {
  client: WsClient;
  /** Every socket the client opened: exactly one while nothing closes it. */
  sockets: Set<unknown>;
  closes: Array<{ code: number; reason: string }>;
  /** A status stream held open all along: a refusal must not end it. */
  keeper: LiveStream;
  keeperEnded: boolean;
}

function watchedClient(token: string): Watched {
  const w = { sockets: new Set<unknown>(), closes: [] as Watched['closes'], keeperEnded: false } as Watched;
  w.client = createClient({
    url: t.url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: false,
    retryAttempts: 0,
    onNonLazyError: () => undefined,
    on: {
      connected: (socket) => void w.sockets.add(socket),
      closed: (e) => void w.closes.push({ code: (e as { code: number }).code, reason: closeReason(e) }),
    },
  });
  return w;
}

let ws: Watched;

beforeAll(async () => {
  ws = watchedClient(f.owner.token);
  ws.keeper = openStream(ws.client, STATUS, { id: f.deployments[0] });
  ws.keeper.ended.then(
    () => (ws.keeperEnded = true),
    () => (ws.keeperEnded = true),
  );
  expect(await ws.keeper.first).toMatchObject({ data: { deploymentStatus: { id: f.deployments[0], status: 'LIVE' } } });
});
afterAll(async () => {
  ws?.keeper.unsubscribe();
  await ws?.client.dispose();
});

/** The connection is still the one it was and still answers; the held stream is intact. */
async function expectConnectionUsable(w: Watched, what: string): Promise<void> {
  if (w.closes.length) throw new Error(`the socket was closed (${JSON.stringify(w.closes)}) after ${what}`);
  const follow = await withDeadline(runWs(w.client, '{ viewer { id } }'), `the follow-up query after ${what}`);
  if ((follow.data as { viewer?: { id?: string } } | null | undefined)?.viewer?.id !== f.owner.id)
    throw new Error(`the follow-up query failed after ${what}: ${show(follow)}`);
  if (w.closes.length || w.sockets.size !== 1)
    throw new Error(`the client reconnected or was closed after ${what}: sockets ${w.sockets.size}, closes ${JSON.stringify(w.closes)}`);
  if (w.keeperEnded || w.keeper.items.length !== 1) throw new Error(`the held status stream ended or got more after ${what}: ${show(w.keeper.items)}`);
  if ('polluted' in {}) throw new Error(`Object.prototype was polluted after ${what}`);
}

function withDeadline<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_MS} ms: ${what}`)), ANSWER_MS)));
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

type Item = FormattedExecutionResult<Record<string, unknown>, unknown>;
type Answer = { refused: GqlError[] } | { items: Item[]; completed: boolean };

/**
 * Subscribes and resolves with the refusal (an `error` message, or a `next` carrying errors) or the
 * stream's answer: with `until: 'complete'` every item up to the server's complete (a stream that
 * ends by itself), else the first item, after which it unsubscribes (a stream that never ends by
 * itself: nothing of the server's can cross the unsubscribe). Anything else (a close, a
 * non-GraphQL error) rejects.
 */
function subscribeOnce(client: WsClient, query: string, variables: Vars, until: 'first' | 'complete', what: string): Promise<Answer> {
  return withDeadline(
    new Promise<Answer>((resolve, reject) => {
      const items: Item[] = [];
      let settled = false;
      const settle = (fn: () => void) => {
        if (!settled) {
          settled = true;
          fn();
        }
      };
      const unsubscribe = client.subscribe(
        { query, variables },
        {
          next: (value) => {
            items.push(value);
            // A refusal as `next` is followed by the server's complete: let it come.
            if (value.errors?.length) return settle(() => resolve({ refused: value.errors as unknown as GqlError[] }));
            if (until === 'first') settle(() => (unsubscribe(), resolve({ items, completed: false })));
          },
          error: (err) =>
            settle(() =>
              Array.isArray(err)
                ? resolve({ refused: err as GqlError[] })
                : reject(new Error(`not a GraphQL refusal (${show((err as { code?: number })?.code ?? String(err))}): ${what}`)),
            ),
          complete: () => settle(() => resolve({ items, completed: true })),
        },
      );
    }),
    what,
  );
}

/** Errors are client errors: each with a 4xx-class code, never INTERNAL_SERVER_ERROR, no stack. */
function expectClientErrors(errors: GqlError[], what: string, seen: Map<string, number>): void {
  if (!errors.length) throw new Error(`refused without errors: ${what}`);
  for (const e of errors) {
    const code = e.extensions?.code as string | undefined;
    seen.set(String(code), (seen.get(String(code)) ?? 0) + 1);
    if (!code || !CLIENT_CODES.has(code)) throw new Error(`not a client error (code ${code}): ${what}`);
    if (e.extensions?.stacktrace || e.extensions?.exception) throw new Error(`an error leaked internals: ${what}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The oracle

/** What an ID variable names: a real id of `reals`, a variant of one (either outcome), or nothing. */
function idClass(vars: Vars, key: string, reals: string[]): { expect: Expect; real?: string } {
  if (!own(vars, key) || vars[key] === null || vars[key] === undefined) return { expect: 'refuse' };
  const v = vars[key];
  if (typeof v === 'string') {
    if (reals.includes(v)) return { expect: 'accept', real: v };
    const real = reals.find((r) => r.toLowerCase() === v.replaceAll('\u0000', '').trim().toLowerCase());
    return real ? { expect: 'either', real } : { expect: 'refuse' };
  }
  return { expect: 'refuse' }; // integers are IDs that name nothing; anything else is no ID
}

const worst = (...es: Expect[]): Expect => (es.includes('refuse') ? 'refuse' : es.includes('either') ? 'either' : 'accept');

function logsExpectation(v: Vars): { expect: Expect; real?: string; type: string | null; sinceMs: number | null } {
  const id = idClass(v, 'id', f.deployments);
  const type = own(v, 'type') ? v.type : null;
  const since = own(v, 'since') ? v.since : null;
  const typeOk = type === null || type === undefined || LOG_TYPES.includes(type as string);
  const sinceOk = since === null || since === undefined || sinceIsValid(since);
  return {
    expect: worst(id.expect, typeOk ? 'accept' : 'refuse', sinceOk ? 'accept' : 'refuse'),
    real: id.real,
    type: typeOk ? ((type as string | null | undefined) ?? null) : null,
    sinceMs: sinceOk && since ? DateTimeScalar.parseValue(since).getTime() : null,
  };
}

/**
 * A stream the gateway may accept must answer with an event: a BUILD stream of an ended build
 * completes; any other needs a stored line after `since` (with a millisecond to spare). Else the
 * case asks for BUILD lines instead.
 */
function answerable(v: Vars): Vars {
  const e = logsExpectation(v);
  if (e.expect === 'refuse' || !e.real || e.type === 'BUILD') return v;
  const some = stored[e.real].some((l) => (e.type === null || l.type === e.type) && (e.sinceMs === null || l.ms > e.sinceMs + 1));
  return some ? v : put(v, 'type', 'BUILD');
}

/** Whether a value holds a `__proto__` key, or a `constructor` key whose value holds `prototype`, at any depth. */
function hasPoison(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasPoison);
  if (!v || typeof v !== 'object') return false;
  const o = v as Vars;
  if (own(o, '__proto__')) return true;
  if (own(o, 'constructor') && o.constructor && typeof o.constructor === 'object' && own(o.constructor, 'prototype')) return true;
  return Object.values(o).some(hasPoison);
}

// ---------------------------------------------------------------------------------------------
// Cases

type Patch = (v: Vars) => void;
const set =
  (key: string, value: unknown): Patch =>
  (v) =>
    void put(v, key, value);
const unset =
  (key: string): Patch =>
  (v) =>
    void delete v[key];

/** Unknown variables (also `__proto__` and `constructor`), which the operation ignores. */
const extraKeys: fc.Arbitrary<Array<[string, unknown]>> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Array<[string, unknown]>>([]) },
  {
    weight: 1,
    arbitrary: fc.array(
      fc.tuple(
        KEYS.filter((k) => !['id', 'type', 'since', 'app'].includes(k)),
        json,
      ),
      { minLength: 1, maxLength: 3 },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constant<Array<[string, unknown]>>([
      ['__proto__', { polluted: 'yes', id: 'dep_x' }],
      ['constructor', { prototype: { polluted: 'yes' } }],
    ]),
  },
);

function withFaults(base: fc.Arbitrary<Vars>, faults: Array<fc.Arbitrary<[string, Patch]>>, finish: (v: Vars) => Vars = (v) => v): fc.Arbitrary<Case> {
  const fault = fc.oneof({ weight: 1, arbitrary: fc.constant<[string, Patch]>(['none', () => undefined]) }, { weight: 3, arbitrary: fc.oneof(...faults) });
  return fc.tuple(base, fault, extraKeys).map(([b, [name, patch], extra]) => {
    const variables: Vars = {};
    for (const [k, x] of Object.entries(b)) put(variables, k, x);
    for (const [k, x] of extra) put(variables, k, x);
    patch(variables);
    return { fault: extra.length ? `${name} + unknown variables ${extra.map(([k]) => k).join(',')}` : name, variables: finish(variables) };
  });
}

/** Faults of an ID! variable naming one of `reals` (`prefix` ids). */
function idFaults(key: string, reals: string[], prefix: string, others: string[]): Array<fc.Arbitrary<[string, Patch]>> {
  const real = reals[0];
  return [
    fc
      .oneof(
        text,
        hex.map((h) => `${prefix}_${h}`),
        fc.constantFrom(...others),
        variants(real),
        fc.constant(`${prefix}_${'0'.repeat(HUGE)}`),
      )
      .map((x) => [`unknown ${key}`, set(key, x)]),
    bigNumbers.map((x) => [`${key} beyond safe integers`, set(key, x)]),
    wrongKind('ID').map((x) => [`wrong type of ${key}`, set(key, x)]),
    hostile(real).map((x) => [`hostile ${key}`, set(key, x)]),
    fc.constant([`null ${key}`, set(key, null)]),
    fc.constant([`missing ${key}`, unset(key)]),
  ];
}

function logsCases(): fc.Arbitrary<Case> {
  const others = [f.cronId, f.webhookId, f.deliveryId, f.spareTokenId, f.owner.id, theirs.deployment, theirs.cronId];
  const base = fc.record(
    {
      id: fc.constantFrom(...f.deployments),
      type: fc.constantFrom(null, 'BUILD', 'RUNTIME'),
      since: fc.oneof(fc.constant(null), validSince),
    },
    { requiredKeys: ['id'] },
  );
  return withFaults(
    base,
    [
      ...idFaults('id', f.deployments, 'dep', others),
      nearTypes.map((x) => ['bad type', set('type', x)]),
      wrongKind('LogType').map((x) => ['wrong type of type', set('type', x)]),
      hostile('BUILD').map((x) => ['hostile type', set('type', x)]),
      nearSince.map((x) => ['bad since', set('since', x)]),
      wrongKind('DateTime').map((x) => ['wrong type of since', set('since', x)]),
      hostile('2026-11-20T12:00:00.000Z').map((x) => ['hostile since', set('since', x)]),
    ],
    answerable,
  );
}

function statusCases(): fc.Arbitrary<Case> {
  const others = [f.cronId, f.webhookId, f.deliveryId, f.spareTokenId, f.owner.id, theirs.deployment, theirs.cronId];
  return withFaults(fc.record({ id: fc.constantFrom(...f.deployments) }), idFaults('id', f.deployments, 'dep', others));
}

function cronCases(): fc.Arbitrary<Case> {
  const others = [...f.deployments, f.webhookId, f.deliveryId, f.spareTokenId, theirs.cronId, theirs.deployment];
  return withFaults(fc.record({ app: fc.constant(f.slug), id: fc.constant(f.cronId) }), [
    ...idFaults('id', [f.cronId], 'cron', others),
    fc
      .oneof(text, variants(f.slug), fc.constantFrom(theirs.slug, 'a'.repeat(41), 'x'.repeat(HUGE), `${f.slug}-pr-1`))
      .map((x) => ['unknown app', set('app', x)]),
    wrongKind('String').map((x) => ['wrong type of app', set('app', x)]),
    hostile(f.slug).map((x) => ['hostile app', set('app', x)]),
    fc.constant(['null app', set('app', null)]),
    fc.constant(['missing app', unset('app')]),
  ]);
}

type Caller = 'owner' | 'collaborator' | 'stranger';

/** `cron(app, id)` as `caller` sees it: the owner's egg and cron for its owner and collaborator, the stranger's own for the stranger. */
function cronExpectation(v: Vars, caller: Caller = 'owner'): Expect {
  const mine = caller === 'stranger' ? { slug: theirs.slug, cronId: theirs.cronId } : { slug: f.slug, cronId: f.cronId };
  const app = own(v, 'app') && typeof v.app === 'string' ? v.app : null;
  const appClass: Expect = app === mine.slug ? 'accept' : app !== null && app.replaceAll('\u0000', '').trim().toLowerCase() === mine.slug ? 'either' : 'refuse';
  return worst(appClass, idClass(v, 'id', [mine.cronId]).expect);
}

// ---------------------------------------------------------------------------------------------
// Checking one case

interface Tally {
  accepted: number;
  refused: number;
  codes: Map<string, number>;
}
const tally = (): Tally => ({ accepted: 0, refused: 0, codes: new Map() });

/** One subscription case over the shared connection, with every property checked. */
async function subscriptionCase(field: 'deploymentLogs' | 'deploymentStatus', c: Case, tl: Tally): Promise<void> {
  const what = `${field} (fault: ${c.fault}) ${show(c.variables)}`;
  let expect: Expect;
  let real: string | undefined;
  let type: string | null = null;
  let sinceMs: number | null = null;
  if (field === 'deploymentLogs') ({ expect, real, type, sinceMs } = logsExpectation(c.variables));
  else ({ expect, real } = idClass(c.variables, 'id', f.deployments));
  const until = field === 'deploymentLogs' && c.variables.type === 'BUILD' ? 'complete' : 'first';
  const answer = await subscribeOnce(ws.client, field === 'deploymentLogs' ? LOGS : STATUS, c.variables, until, what);
  const described = `${what} → ${show(answer)}`;

  if ('refused' in answer) {
    tl.refused++;
    expectClientErrors(answer.refused, described, tl.codes);
    if (expect === 'accept') throw new Error(`a valid subscription was refused: ${described}`);
  } else {
    tl.accepted++;
    if (expect === 'refuse') throw new Error(`a faulty subscription was not refused: ${described}`);
    const maybe = answer.items.map((i) => (i.data as Record<string, Record<string, unknown>> | null | undefined)?.[field]);
    if (maybe.some((p) => !p)) throw new Error(`an item without data: ${described}`);
    const payloads = maybe as Array<Record<string, unknown>>;
    if (field === 'deploymentStatus') {
      if (payloads.length !== 1 || payloads[0].id !== real) throw new Error(`the status stream is not the deployment's: ${described}`);
    } else {
      if (!answer.completed && payloads.length === 0) throw new Error(`no line: ${described}`);
      for (const line of payloads) {
        if (type && line.type !== type) throw new Error(`a line of another type: ${described}`);
        if (sinceMs !== null && !(Date.parse(line.timestamp as string) > sinceMs - 1)) throw new Error(`a line from before since: ${described}`);
      }
    }
  }
  await expectConnectionUsable(ws, what);
  await expectUnchanged(what);
}

/** Checks a `cron` answer, over either transport. */
function cronAnswer(
  expect: Expect,
  cron: { id: string; schedule: string },
  body: { data?: { cron?: Record<string, unknown> | null } | null; errors?: GqlError[] },
  tl: Tally,
  described: string,
): void {
  if (body.errors?.length) {
    tl.refused++;
    expectClientErrors(body.errors, described, tl.codes);
    if (body.data?.cron) throw new Error(`errors and a cron: ${described}`);
    if (expect === 'accept') throw new Error(`a valid cron query was refused: ${described}`);
  } else {
    tl.accepted++;
    if (expect === 'refuse') throw new Error(`a faulty cron query was answered: ${described}`);
    if (body.data?.cron?.id !== cron.id || body.data.cron.schedule !== cron.schedule) throw new Error(`not the cron asked for: ${described}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The tests

describe('the harness notices what it checks for', () => {
  it('an accepted write over graphql-ws changes the snapshot; afterwards the baseline is retaken', async () => {
    const made = await runWs(ws.client, print(CreateCronDocument), { app: f.slug, schedule: '0 0 1 1 *', command: 'echo control' });
    const id = (made.data as { createCron?: { id?: string } } | undefined)?.createCron?.id;
    expect(id).toMatch(/^cron_/);
    await expect(expectUnchanged('the control write')).rejects.toThrow(/public\.crons/);
    expect((await rest(t.url, f.owner.token, 'DELETE', `/v1/apps/${f.slug}/crons/${id}`)).status).toBe(204);
    await rebase();
  });

  it('a socket the server closes is noticed (a connection with an unknown token closes with 4401)', async () => {
    const bad = watchedClient('hatch_not_a_token');
    try {
      await expect(runWs(bad.client, '{ viewer { id } }')).rejects.toMatchObject({ code: 4401 });
      expect(bad.closes.map((c) => c.code)).toEqual([4401]);
      await expect(expectConnectionUsable(bad, 'connecting with an unknown token')).rejects.toThrow(/the socket was closed/);
    } finally {
      await bad.client.dispose();
    }
  });

  it('errors without a client code fail the check', () => {
    const codes = new Map<string, number>();
    expect(() => expectClientErrors([{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }], 'x', codes)).toThrow(/not a client error/);
    expect(() => expectClientErrors([{ message: 'no code' }], 'x', codes)).toThrow(/not a client error/);
    expect(() => expectClientErrors([], 'x', codes)).toThrow(/without errors/);
    expect(() => expectClientErrors([{ message: 'm', extensions: { code: 'NOT_FOUND' } }], 'x', codes)).not.toThrow();
  });

  it('the oracle: valid variables are accepted, named faults refused', () => {
    const dep = f.deployments[0];
    expect(logsExpectation({ id: dep }).expect).toBe('accept');
    expect(logsExpectation({ id: dep, type: 'RUNTIME', since: '0000-01-01T00:00:00Z' }).expect).toBe('accept');
    expect(logsExpectation({ id: dep, type: 'build' }).expect).toBe('refuse');
    expect(logsExpectation({ id: dep, since: '2016-12-31T23:59:60Z' }).expect).toBe('refuse');
    expect(logsExpectation({ id: dep.toUpperCase() }).expect).toBe('either');
    expect(logsExpectation(JSON.parse(`{"__proto__": {"id": "${dep}"}}`)).expect).toBe('refuse');
    expect(cronExpectation({ app: f.slug, id: f.cronId })).toBe('accept');
    expect(cronExpectation({ app: theirs.slug, id: theirs.cronId })).toBe('refuse');
    expect(cronExpectation({ app: f.slug, id: f.cronId }, 'stranger')).toBe('refuse');
    expect(cronExpectation({ app: theirs.slug, id: theirs.cronId }, 'stranger')).toBe('accept');
  });
});

/** Hostile variables named one by one, so that every run sends each whatever the seed draws. */
function namedLogsCases(): Array<[string, Vars]> {
  const dep = f.deployments[0];
  const proto = (json: string) => JSON.parse(json) as Vars;
  return [
    ['__proto__ holding the id (no own id)', proto(`{"__proto__": {"id": "${dep}"}}`)],
    [
      '__proto__ and constructor beside a real id',
      proto(`{"id": "${dep}", "__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}`),
    ],
    ['id as an object with __proto__', proto(`{"id": {"__proto__": {"polluted": "yes"}}}`)],
    ['id as a nested object', { id: { id: dep } }],
    ['id nested 2000 deep', { id: nested(2000, dep, (v) => ({ id: v })) }],
    ['id as an array', { id: [dep] }],
    ['id as an array of 1000', { id: Array.from({ length: 1000 }, () => dep) }],
    ['id huge', { id: `dep_${'z'.repeat(HUGE)}` }],
    ['id with NUL', { id: `${dep}\u0000` }],
    ['id lone surrogate', { id: '\uD800' }],
    ['id 2^53 + 2', { id: 2 ** 53 + 2 }],
    ['id 1e308', { id: 1e308 }],
    ['id -2^63', { id: -(2 ** 63) }],
    ['id 0.5', { id: 0.5 }],
    ['id null', { id: null }],
    ['id missing', {}],
    ['type "build" (lower case)', { id: dep, type: 'build' }],
    ['type "BOGUS"', { id: dep, type: 'BOGUS' }],
    ['type huge', { id: dep, type: 'B'.repeat(HUGE) }],
    ['type ["BUILD"]', { id: dep, type: ['BUILD'] }],
    ['type {"BUILD": true}', { id: dep, type: { BUILD: true } }],
    ['type 0', { id: dep, type: 0 }],
    ['type 2^53 + 2', { id: dep, type: 2 ** 53 + 2 }],
    ['since "2026-02-30T00:00:00Z"', { id: dep, since: '2026-02-30T00:00:00Z' }],
    ['since a leap second', { id: dep, since: '2016-12-31T23:59:60Z' }],
    ['since year +275760', { id: dep, since: '+275760-09-13T00:00:00.000Z' }],
    ['since huge', { id: dep, since: `2026-11-20T12:00:00${'0'.repeat(HUGE)}Z` }],
    ['since a number beyond safe integers', { id: dep, since: 2 ** 53 + 2 }],
    ['since epoch milliseconds', { id: dep, since: 1_700_000_000_000 }],
    ['since an object', { id: dep, since: { $date: '2026-11-20T12:00:00.000Z' } }],
    ['since an array', { id: dep, since: ['2026-11-20T12:00:00.000Z'] }],
    ['since year 0000 (valid), BUILD', { id: dep, type: 'BUILD', since: '0000-01-01T00:00:00Z' }],
    ['since before year 0000 by offset (valid), BUILD', { id: dep, type: 'BUILD', since: '0000-01-01T00:00:00+23:59' }],
    ['since after year 9999 by offset (valid), BUILD', { id: dep, type: 'BUILD', since: '9999-12-31T23:59:59.999-23:59' }],
    ['since lower-case t and z (valid), RUNTIME', { id: dep, type: 'RUNTIME', since: '1970-01-01t00:00:00z' }],
    ["another account's deployment", { id: theirs.deployment }],
    ['a cron id for a deployment id', { id: f.cronId }],
  ];
}

describe('graphql-ws deploymentLogs: hostile variables are refused as client errors, on a socket that stays usable', () => {
  const tl = tally();

  it('named hostile shapes', async () => {
    for (const [name, variables] of namedLogsCases()) await subscriptionCase('deploymentLogs', { fault: name, variables: answerable(variables) }, tl);
    expect(tl.refused).toBeGreaterThan(25);
    expect(tl.accepted).toBeGreaterThanOrEqual(5);
  });

  it('property: random variables', async () => {
    const before = { ...tl, codes: new Map(tl.codes) };
    await check(logsCases(), (c) => subscriptionCase('deploymentLogs', c, tl));
    // Not vacuous: both outcomes were seen, and refusals of both kinds.
    expect(tl.accepted).toBeGreaterThan(before.accepted);
    expect(tl.refused).toBeGreaterThan(before.refused);
    expect(tl.codes.get('BAD_USER_INPUT')).toBeGreaterThan(0);
    expect(tl.codes.get('NOT_FOUND')).toBeGreaterThan(0);
  });
});

describe('graphql-ws deploymentStatus: hostile variables are refused as client errors, on a socket that stays usable', () => {
  const tl = tally();

  it('named hostile shapes', async () => {
    const cases = namedLogsCases().filter(
      ([name]) => name.startsWith('id') || name.includes('__proto__') || name.includes('deployment') || name.includes('cron id'),
    );
    for (const [name, variables] of cases) await subscriptionCase('deploymentStatus', { fault: name, variables }, tl);
    await subscriptionCase('deploymentStatus', { fault: 'none', variables: { id: f.deployments[1] } }, tl);
    expect(tl.refused).toBeGreaterThan(15);
    expect(tl.accepted).toBeGreaterThanOrEqual(2);
  });

  it('property: random variables', async () => {
    const before = { ...tl };
    await check(statusCases(), (c) => subscriptionCase('deploymentStatus', c, tl));
    expect(tl.accepted).toBeGreaterThan(before.accepted);
    expect(tl.refused).toBeGreaterThan(before.refused);
  });
});

describe('Query.cron: hostile variables are refused as client errors, over HTTP and over graphql-ws', () => {
  const callers = () => ({ owner: f.owner, collaborator: f.collaborator, stranger: f.stranger });

  async function overHttp(c: Case, caller: Caller, tl: Tally): Promise<void> {
    const what = `POST /graphql cron as ${caller} (fault: ${c.fault}) ${show(c.variables)}`;
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${callers()[caller].token}` },
      body: JSON.stringify({ query: CRON, variables: c.variables }),
    });
    const body = (await res.json()) as Parameters<typeof cronAnswer>[2];
    const described = `${what} → ${res.status} ${show(body)}`;
    if (res.status >= 500) throw new Error(`5xx: ${described}`);
    // Fastify's JSON parser refuses bodies with a `__proto__` key, or a `constructor` key holding `prototype`,
    // anywhere (400 BAD_REQUEST); graphql-ws takes them. Either is a client error.
    const poisoned = hasPoison(c.variables);
    const cron = caller === 'stranger' ? { id: theirs.cronId, schedule: '0 0 1 1 *' } : { id: f.cronId, schedule: '0 * * * *' };
    cronAnswer(worst(cronExpectation(c.variables, caller), poisoned ? 'either' : 'accept'), cron, body, tl, described);
    if (body.errors?.length && res.status !== 200 && !(res.status >= 400 && res.status < 500)) throw new Error(`refused with ${res.status}: ${described}`);
    if (
      poisoned &&
      body.errors?.length &&
      (res.status !== 400 || body.errors.some((e) => e.extensions?.code !== 'BAD_REQUEST')) &&
      cronExpectation(c.variables, caller) === 'accept'
    ) {
      throw new Error(`a poisoned body was refused otherwise than with 400 BAD_REQUEST: ${described}`);
    }
    await expectUnchanged(what);
  }

  async function overWs(c: Case, tl: Tally): Promise<void> {
    const what = `graphql-ws cron (fault: ${c.fault}) ${show(c.variables)}`;
    const answer = await subscribeOnce(ws.client, CRON, c.variables, 'complete', what);
    const body = 'refused' in answer ? { errors: answer.refused } : (answer.items[0] ?? {});
    const described = `${what} → ${show(answer)}`;
    if (!('refused' in answer) && answer.items.length !== 1) throw new Error(`a query answered ${answer.items.length} times: ${described}`);
    cronAnswer(cronExpectation(c.variables), { id: f.cronId, schedule: '0 * * * *' }, body as Parameters<typeof cronAnswer>[2], tl, described);
    await expectConnectionUsable(ws, what);
    await expectUnchanged(what);
  }

  function namedCronCases(): Array<[string, Vars]> {
    const proto = (json: string) => JSON.parse(json) as Vars;
    return [
      ['valid', { app: f.slug, id: f.cronId }],
      ['__proto__ holding both (no own variables)', proto(`{"__proto__": {"app": "${f.slug}", "id": "${f.cronId}"}}`)],
      [
        '__proto__ and constructor beside valid ones',
        proto(`{"app": "${f.slug}", "id": "${f.cronId}", "__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}`),
      ],
      ['app as an object with __proto__', proto(`{"app": {"__proto__": {"polluted": "yes"}}, "id": "${f.cronId}"}`)],
      ['app as a nested object', { app: { slug: f.slug }, id: f.cronId }],
      ['app nested 2000 deep', { app: nested(2000, f.slug, (v) => [v]), id: f.cronId }],
      ['app as an array', { app: [f.slug], id: f.cronId }],
      ['app huge', { app: 'e'.repeat(HUGE), id: f.cronId }],
      ['app with NUL', { app: `${f.slug}\u0000`, id: f.cronId }],
      ['app a number beyond safe integers', { app: 2 ** 53 + 2, id: f.cronId }],
      ['app null', { app: null, id: f.cronId }],
      ['app missing', { id: f.cronId }],
      ["another account's egg and cron", { app: theirs.slug, id: theirs.cronId }],
      ["another account's cron under the own egg", { app: f.slug, id: theirs.cronId }],
      ['a deployment id for a cron id', { app: f.slug, id: f.deployments[0] }],
      ['id huge', { app: f.slug, id: `cron_${'z'.repeat(HUGE)}` }],
      ['id 2^53 + 2', { app: f.slug, id: 2 ** 53 + 2 }],
      ['id -2^63', { app: f.slug, id: -(2 ** 63) }],
      ['id 1e308', { app: f.slug, id: 1e308 }],
      ['id 0.5', { app: f.slug, id: 0.5 }],
      ['id as an array of 1000', { app: f.slug, id: Array.from({ length: 1000 }, () => f.cronId) }],
      ['id null', { app: f.slug, id: null }],
      ['id missing', { app: f.slug }],
    ];
  }

  it('named hostile shapes, over HTTP (as each kind of caller) and over graphql-ws', async () => {
    const tl = tally();
    for (const [name, variables] of namedCronCases()) {
      for (const caller of ['owner', 'collaborator', 'stranger'] as const) await overHttp({ fault: name, variables }, caller, tl);
      await overWs({ fault: name, variables }, tl);
    }
    expect(tl.accepted).toBeGreaterThanOrEqual(5); // valid (2 callers over HTTP, and over graphql-ws), the stranger's own, the poisoned one over graphql-ws
    expect(tl.codes.get('NOT_FOUND')).toBeGreaterThan(0);
    expect(tl.codes.get('BAD_USER_INPUT')).toBeGreaterThan(0);
  });

  it('HTTP: variables that are not an object are refused with 400', async () => {
    const tl = tally();
    for (const variables of [[], [f.slug, f.cronId], 1, 2 ** 53 + 2, true, 'app']) {
      const res = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${f.owner.token}` },
        body: JSON.stringify({ query: CRON, variables }),
      });
      const body = (await res.json()) as { errors?: GqlError[] };
      const described = `variables ${show(variables)} → ${res.status} ${show(body)}`;
      expect([described, res.status]).toEqual([described, 400]);
      expectClientErrors(body.errors ?? [], described, tl.codes);
      await expectUnchanged(described);
    }
  });

  it('property over HTTP: random variables, random caller', async () => {
    const tl = tally();
    await check(fc.tuple(cronCases(), fc.constantFrom<Caller>('owner', 'collaborator', 'stranger')), ([c, caller]) => overHttp(c, caller, tl));
    expect(tl.accepted).toBeGreaterThan(0);
    expect(tl.refused).toBeGreaterThan(0);
  });

  it('property over graphql-ws: random variables', async () => {
    const tl = tally();
    await check(cronCases(), (c) => overWs(c, tl));
    expect(tl.accepted).toBeGreaterThan(0);
    expect(tl.refused).toBeGreaterThan(0);
  });
});

describe('after all of it', () => {
  it('the shared connection is the one it was, and its held status stream got no error', async () => {
    await expectConnectionUsable(ws, 'the whole file');
    expect(ws.keeper.items).toHaveLength(1);
    expect(ws.keeperEnded).toBe(false);
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
});
