import { isIP } from 'node:net';
import fc from 'fast-check';
import {
  DocumentNode,
  getNamedType,
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInputType,
  GraphQLList,
  GraphQLNonNull,
  Kind,
  OperationDefinitionNode,
  OperationTypeNode,
  parse,
  print,
  typeFromAST,
} from 'graphql';
import * as generated from '../../src/client/generated';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { CronExpression } from '../../src/modules/crons/cron-expression';
import { API_RELEASES, intParam, Route, routes } from '../../src/rest/routes';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { DatabaseWatch, furnish, Furnished } from './helpers';

/**
 * Property-based fuzzing of every REST route (path parameters, query strings, headers and bodies:
 * random JSON, wrong types, unknown fields, huge numbers, unicode, NUL bytes, arrays, nulls,
 * malformed text, other content types) and of the variables of every typed GraphQL operation.
 * Properties: never a 5xx (nor a masked INTERNAL_SERVER_ERROR); a write that is fuzzed always
 * carries at least one fault and is refused with a 4xx; and after every request the database is
 * exactly as before (row counts and contents of every table).
 *
 * Runs are bounded (FUZZ_RUNS, default below). Each failure prints fast-check's seed and path;
 * FUZZ_SEED=<seed> replays a run. A developer's run draws a new seed each time, to explore; CI
 * (CI=true) uses a fixed one, so a landing is never decided by a new counterexample: explore with
 * `FUZZ_RUNS=200 npx jest test/faults/fuzz` and keep what it finds as a fixed test.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);

// ---------------------------------------------------------------------------------------------
// Values

/**
 * A string the gateway would treat as a URL of a host it must look up: never generated, so the
 * fuzzer cannot make the gateway ask DNS about a random name (no traffic leaves the machine).
 */
function resolvableUrl(s: string): boolean {
  try {
    const u = new URL(s);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    return host !== '' && !isIP(host) && !/(^|\.)invalid\.?$/i.test(host);
  } catch {
    return false;
  }
}
function safe(v: unknown): boolean {
  if (typeof v === 'string') return !resolvableUrl(v);
  if (Array.isArray(v)) return v.every(safe);
  if (v && typeof v === 'object') return Object.entries(v).every(([k, x]) => safe(k) && safe(x));
  return true;
}

const text: fc.Arbitrary<string> = fc
  .oneof(
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
      '../../etc/passwd',
      "' OR 1=1 --",
      '%00',
      '${jndi:ldap://hooks.invalid/a}',
      '<script>alert(1)</script>',
      'null',
      'true',
      '1e999',
      '-0',
      'NaN',
      '9'.repeat(40),
      'x'.repeat(5000),
    ),
  )
  .filter(safe);

const numbers: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.integer({ min: -200, max: 2000 }),
  fc.double(),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2, 1e308, -1e308, 0.5, -0, 5e-324),
);

const { json } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    numbers,
    text,
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(text, tie('json'), { maxKeys: 4 }),
  ),
}));
const jsonValue = json.filter(safe);
const nonObject = jsonValue.filter((v) => v === null || typeof v !== 'object' || Array.isArray(v));
const hex = fc.stringMatching(/^[0-9a-z]{26}$/);

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SLUG = /^[a-z][a-z0-9-]{1,38}[a-z0-9]$/;
const notCron = text.filter((s) => {
  try {
    CronExpression.parse(s);
    return false;
  } catch {
    return true;
  }
});
const notHttpsUrl = fc.oneof(
  fc.constantFrom(
    'http://hooks.invalid/x',
    'ftp://hooks.invalid/x',
    'https://127.0.0.1/x',
    'https://10.1.2.3/x',
    'https://[::1]/x',
    'https://0x7f000001/x',
    'https://169.254.169.254/latest',
    'https://100.64.0.1/x',
    'https://[fd00::1]/x',
    'https://user:pw@hooks.invalid/x',
    'not a url',
    '',
    `https://hooks.invalid/${'x'.repeat(3000)}`,
  ),
  text.filter((s) => {
    try {
      return new URL(s).protocol !== 'https:';
    } catch {
      return true;
    }
  }),
);

/** Values a field never accepts, whatever else the request holds (REST and GraphQL names). */
const BAD: Record<string, fc.Arbitrary<unknown>> = {
  memory_mb: fc.oneof(fc.integer({ min: -1000, max: 63 }), fc.integer({ min: 1025, max: 2 ** 31 - 1 })),
  size_mb: fc.oneof(fc.integer({ min: -1000, max: 0 }), fc.integer({ min: 5121, max: 2 ** 31 - 1 })),
  pr_number: fc.integer({ min: -(2 ** 31), max: 0 }),
  schedule: fc.oneof(fc.constantFrom('* * * * * *', '@daily', '*/0 * * * *', '5-1 * * * *', '60 * * * *', '* * 31 2 *', 'MON * * * *'), notCron),
  command: fc.constantFrom('', '   ', 'x'.repeat(4097)),
  url: notHttpsUrl,
  events: fc.oneof(
    fc.constant([]),
    fc.array(
      text.filter((e) => e !== 'deploy'),
      { minLength: 1, maxLength: 3 },
    ),
  ),
  env: fc.oneof(
    fc.dictionary(
      text.filter((k) => !ENV_KEY.test(k)),
      fc.string(),
      { minKeys: 1, maxKeys: 3 },
    ),
    fc.dictionary(
      fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/),
      jsonValue.filter((v) => typeof v !== 'string'),
      { minKeys: 1, maxKeys: 3 },
    ),
    fc.constant({ BIG: 'x'.repeat(70_000) }),
    fc.constant(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`K${i}`, 'v']))),
  ),
  first: fc.oneof(fc.integer({ min: -(2 ** 31), max: 0 }), fc.integer({ min: 1001, max: 2 ** 31 - 1 })),
  expires_in_days: fc.oneof(fc.integer({ min: -(2 ** 31), max: 0 }), fc.integer({ min: 3651, max: 2 ** 31 - 1 })),
  name: fc.constantFrom('', '   ', 'n'.repeat(101)),
  slug: text.filter((s) => !SLUG.test(s)),
  idempotency_key: fc.integer({ min: 256, max: 2000 }).map((n) => 'k'.repeat(n)),
};
const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const badFor = (name: string) => BAD[snake(name)] ?? BAD[name];

/** JSON has no NaN or Infinity (they travel as null, which a nullable type takes): finite only. */
const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
const fractions = finite.filter((d) => !Number.isInteger(d));
const finiteNumbers = fc.oneof(fc.integer(), finite, fc.constantFrom(2 ** 31, 2 ** 53, 1e308, -1e308));

/** Values of another kind than the input type accepts (GraphQL coercion refuses them). */
function wrongFor(type: GraphQLInputType): fc.Arbitrary<unknown> {
  if (type instanceof GraphQLNonNull) return wrongFor(type.ofType);
  if (type instanceof GraphQLList)
    return fc.oneof(
      wrongFor(type.ofType),
      wrongFor(type.ofType).map((v) => [v]),
    );
  if (type instanceof GraphQLInputObjectType) {
    return fc.oneof(
      nonObject.filter((v) => v !== null && (typeof v !== 'number' || Number.isFinite(v))),
      fc.record({ ['not_a_field_' + type.name]: jsonValue }),
    );
  }
  if (type instanceof GraphQLEnumType)
    return fc.oneof(
      finiteNumbers,
      fc.boolean(),
      text.filter((s) => !type.getValue(s)),
      fc.constant({}),
    );
  const obj = fc.dictionary(text, jsonValue, { minKeys: 1, maxKeys: 2 });
  switch (type.name) {
    case 'String':
      return fc.oneof(finiteNumbers, fc.boolean(), obj, fc.constant([[1]]));
    case 'ID':
      return fc.oneof(fractions, fc.boolean(), obj);
    case 'Int':
      return fc.oneof(text, fc.boolean(), fractions, fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e308), obj);
    case 'Boolean':
      return fc.oneof(text, finiteNumbers, obj);
    case 'DateTime':
      return fc.oneof(
        finiteNumbers,
        fc.boolean(),
        obj,
        text.filter((s) => Number.isNaN(Date.parse(s)) || !/^\d{4}-/.test(s)),
      );
    case 'JSONObject':
      return fc.oneof(text, finiteNumbers, fc.boolean(), fc.array(jsonValue, { maxLength: 2 }));
    default:
      throw new Error(`fuzz: no wrong values for scalar ${type.name}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The gateway

let t: TestGateway;
let f: Furnished;
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
  await rebase();
}, 60_000);
afterAll(() => t.stop());

const rebase = () => watch.rebase();
const expectUnchanged = (what: string) => watch.expectUnchanged(what);
const check = <T>(arb: fc.Arbitrary<T>, run: (v: T) => Promise<void>) => watch.check(arb, run, RUNS);

describe('the snapshot notices changes', () => {
  it('an accepted write changes it; afterwards the baseline is retaken', async () => {
    const res = await rest(t.url, f.owner.token, 'POST', `/v1/apps/${f.slug}/crons`, { schedule: '0 0 1 1 *', command: 'echo control' });
    expect(res.status).toBe(201);
    await expect(expectUnchanged('the control write')).rejects.toThrow(/public\.crons/);
    expect((await rest(t.url, f.owner.token, 'DELETE', `/v1/apps/${f.slug}/crons/${res.body.id}`)).status).toBe(204);
    await rebase();
  });
});

// ---------------------------------------------------------------------------------------------
// REST

interface RestCase {
  fault: string;
  params: Record<string, string>;
  query: Array<[string, string]>;
  headers: Record<string, string>;
  /** JSON text or other raw text; undefined: no body. */
  body?: string;
  contentType?: string;
}

const schema = buildGatewaySchema();

/** The GraphQL type of each REST body field, from the route's `$input` variable. */
function bodyTypes(route: Route): Record<string, GraphQLInputType> {
  const def = (parseOp(route.operation).variableDefinitions ?? []).find((v) => v.variable.name.value === 'input');
  if (!route.body || !def) return {};
  const input = getNamedType(typeFromAST(schema, def.type as never) as GraphQLInputType) as GraphQLInputObjectType;
  const fields = input.getFields();
  return Object.fromEntries(Object.entries(route.body).map(([restName, gqlName]) => [restName, fields[gqlName].type]));
}

function parseOp(source: string): OperationDefinitionNode {
  const doc = parse(source);
  return doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
}

const pathParams = (route: Route) => [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]);

function realParam(route: Route, name: string): string {
  if (name === 'slug') return f.slug;
  if (name === 'pr') return String(f.pr);
  if (route.path.includes('/crons/')) return f.cronId;
  if (route.path.includes('/webhooks/')) return f.webhookId;
  return f.deployments[0];
}

/** A parameter that names nothing the owner has (also not by case, padding or leading zeros). */
function otherParam(route: Route, name: string): fc.Arbitrary<string> {
  const real = realParam(route, name);
  return fc
    .oneof(
      text,
      hex.map((h) => `${real.split('_')[0]}_${h}`),
      fc.integer({ min: -5, max: 2 ** 31 }).map(String),
      fc.constantFrom('9'.repeat(30), '0x10', '1e3', ' 1', '%', '.', '..'),
    )
    .filter(
      (s) =>
        !/[\uD800-\uDFFF]/u.test(s) && s.trim().toLowerCase() !== real.toLowerCase() && intParam(s) !== intParam(real) && intParam(s.trim()) !== intParam(real),
    );
}

/** Query values: what the parameter takes, and anything else. */
function queryValue(name: string): fc.Arbitrary<string> {
  const fits: Record<string, fc.Arbitrary<string>> = {
    limit: fc.integer({ min: -5, max: 1200 }).map(String),
    status: fc.constantFrom('building', 'live', 'failed'),
    type: fc.constantFrom('build', 'runtime'),
    since: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    project: fc.constant(f.slug),
    now: fc.constantFrom('true', 'false'),
  };
  return fc.oneof(fits[name] ?? text, text);
}

/** Values a body field takes (so that a request's one fault is what refuses it), or anything. */
function bodyValue(name: string, type: GraphQLInputType): fc.Arbitrary<unknown> {
  const fits: Record<string, fc.Arbitrary<unknown>> = {
    project: fc.constant(f.slug),
    env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), text, { maxKeys: 3 }),
    memory_mb: fc.oneof(fc.integer({ min: 64, max: 512 }), fc.constant(null)),
    size_mb: fc.integer({ min: 1, max: 1024 }),
    pr_number: fc.integer({ min: 1, max: 50 }),
    schedule: fc.constantFrom('*/5 * * * *', '0 0 * * MON', '15 3 1 * *'),
    command: text.filter((c) => c.trim() !== '' && c.length <= 4096),
    url: fc.constant('https://hooks.invalid/fuzz'),
    events: fc.constant(['deploy']),
  };
  return fc.oneof({ weight: 3, arbitrary: fits[name] ?? jsonValue }, { weight: 1, arbitrary: jsonValue }, { weight: 1, arbitrary: wrongFor(type) });
}

const MALFORMED = [
  '{',
  '{"a":',
  "{'single': 1}",
  '{"a":1,}',
  '{"__proto__": {"polluted": true}}',
  '{"constructor": {"prototype": {"polluted": true}}}',
  '[]',
  'null',
  '"text"',
  '1e999',
  '\u0000',
  '{"a": 1e999}',
  '['.repeat(5000) + ']'.repeat(5000),
  '{"x":'.repeat(3000) + '1' + '}'.repeat(3000),
  '\uFEFF[]',
];

function restCase(route: Route): fc.Arbitrary<RestCase> {
  const mutating = route.method !== 'GET';
  const names = pathParams(route);
  const types = bodyTypes(route);
  const required = Object.entries(types)
    .filter(([, ty]) => ty instanceof GraphQLNonNull)
    .map(([n]) => n);
  const takesBody = route.method !== 'GET';

  const base = fc.record({
    params: fc.record(
      Object.fromEntries(
        names.map((n) => [n, fc.oneof({ weight: 4, arbitrary: fc.constant(realParam(route, n)) }, { weight: 1, arbitrary: otherParam(route, n) })]),
      ),
    ),
    query: route.query?.length
      ? fc.array(
          fc.constantFrom(...route.query).chain((k) => queryValue(k).map((v) => [k, v] as [string, string])),
          { maxLength: 3 },
        )
      : fc.constant([] as Array<[string, string]>),
    body: route.body
      ? fc.record(Object.fromEntries(Object.entries(types).map(([n, ty]) => [n, bodyValue(n, ty)])), { requiredKeys: required })
      : fc.constant(undefined),
  });

  // The faults this route can carry; a write always carries one.
  const faults: Record<string, fc.Arbitrary<(c: RestCase) => void>> = {
    unknownQuery: fc
      .tuple(
        text.filter((k) => !(route.query ?? []).includes(k) && k !== ''),
        text,
      )
      .map(
        ([k, v]) =>
          (c) =>
            void c.query.push([k, v]),
      ),
    apiVersion: fc
      .oneof(fc.stringMatching(/^[\x21-\x7e]{1,20}$/), fc.constantFrom('2026-01-14', '2027-01-01', 'latest', ' 2026-09-01'))
      .filter((v) => !(API_RELEASES as readonly string[]).includes(v.trim()))
      .map((v) => (c) => void (c.headers['api-version'] = v)),
  };
  if (names.length) {
    faults.otherParam = fc.constantFrom(...names).chain((n) => otherParam(route, n).map((v) => (c: RestCase) => void (c.params[n] = v)));
  }
  if (takesBody) {
    faults.unknownField = fc
      .tuple(
        text.filter((k) => !Object.hasOwn(route.body ?? {}, k)),
        jsonValue,
      )
      .map(([k, v]) => (c) => {
        const body = c.body ? JSON.parse(c.body) : {};
        Object.defineProperty(body, k, { value: v, enumerable: true, configurable: true, writable: true });
        c.body = JSON.stringify(body);
      });
    faults.nonObject = nonObject.map((v) => (c) => void (c.body = JSON.stringify(v)));
    faults.malformed = fc
      .oneof(fc.constantFrom(...MALFORMED), text)
      .filter(notAnObject)
      .map((s) => (c) => void (c.body = s));
  }
  if (route.body) {
    // Routes that take a body document 413 and 415; a body-less DELETE answers them too, undocumented.
    faults.contentType = fc
      .tuple(
        fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/octet-stream'),
        fc.string({ maxLength: 50 }),
      )
      .map(([ct, s]) => (c) => {
        c.body = s;
        c.contentType = ct;
      });
    faults.tooLarge = fc.constant((c: RestCase) => void (c.body = JSON.stringify({ [Object.keys(route.body ?? {})[0] ?? 'x']: 'x'.repeat(1024 * 1024 + 10) })));
  }
  const badFields = Object.keys(types).filter((n) => badFor(n));
  if (badFields.length) {
    faults.badField = fc
      .constantFrom(...badFields)
      .chain((n) =>
        fc.oneof(badFor(n), wrongFor(types[n])).map((v) => (c: RestCase) => void (c.body = JSON.stringify({ ...(c.body ? JSON.parse(c.body) : {}), [n]: v }))),
      );
  }
  if (required.length) {
    faults.missingField = fc.constantFrom(...required).map((n) => (c: RestCase) => {
      const { [n]: _gone, ...rest } = c.body ? JSON.parse(c.body) : {};
      c.body = JSON.stringify(rest);
    });
  }
  if ((route.query ?? []).includes('now')) {
    faults.badQuery = text.filter((v) => v !== 'true' && v !== 'false').map((v) => (c) => void c.query.push(['now', v]));
  }
  if ((route.headers ?? []).includes('Idempotency-Key')) {
    faults.idempotencyKey = BAD.idempotency_key.map((v) => (c) => void (c.headers['idempotency-key'] = v as string));
  }
  const faultNames = Object.keys(faults);
  const chosen = mutating
    ? fc.constantFrom(...faultNames)
    : fc.oneof({ weight: 2, arbitrary: fc.constant('none') }, { weight: 3, arbitrary: fc.constantFrom(...faultNames) });

  return fc.tuple(base, chosen).chain(([b, fault]) =>
    (fault === 'none' ? fc.constant(() => undefined) : faults[fault]).map((apply) => {
      const c: RestCase = {
        fault,
        params: { ...b.params },
        query: [...b.query],
        headers: {},
        body: b.body === undefined ? (takesBody && route.body ? '{}' : undefined) : JSON.stringify(b.body),
      };
      apply(c);
      return c;
    }),
  );
}

/** Whether the gateway must refuse `s` as a JSON body: not an object (a BOM is allowed; an empty body is no body). */
function notAnObject(s: string): boolean {
  if (s === '') return false;
  try {
    const v = JSON.parse(s.replace(/^\uFEFF/, ''));
    return v === null || typeof v !== 'object' || Array.isArray(v);
  } catch {
    return true;
  }
}

function requestPath(route: Route, c: RestCase): string {
  const path = route.path.replace(/:(\w+)/g, (_, n: string) => encodeURIComponent(c.params[n]));
  const qs = new URLSearchParams(c.query).toString();
  return qs ? `${path}?${qs}` : path;
}

describe('REST fuzzing: 4xx only, the database unchanged', () => {
  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as [string, Route]))('%s', async (_name, route) => {
    const seen = new Set<number>();
    await check(restCase(route), async (c) => {
      const path = requestPath(route, c);
      const headers: Record<string, string> = { ...c.headers };
      if (c.body !== undefined) headers['content-type'] = c.contentType ?? 'application/json';
      const res = await rest(t.url, f.owner.token, route.method, path, c.body, headers);
      seen.add(res.status);
      const what = `${route.method} ${path.slice(0, 300)} (fault: ${c.fault}) → ${res.status} ${JSON.stringify(res.body)?.slice(0, 500)}`;
      if (res.status >= 500) throw new Error(`5xx: ${what}`);
      if (route.method !== 'GET' && (res.status < 400 || res.status >= 500)) throw new Error(`a faulty write was not refused: ${what}`);
      if (res.status >= 400) {
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(res.body.status).toBe(res.status);
      }
      await expectUnchanged(what);
    });
    // Not vacuous: the fuzzer got past the front door and was refused for what it sent.
    expect([...seen].some((s) => s === 400 || s === 404 || s === 415 || s === 422)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// GraphQL

interface Slot {
  /** The variable, and for a field of an input-object variable, the field. */
  path: [string] | [string, string];
  type: GraphQLInputType;
  name: string;
}

const IDENTIFIERS = new Set(['app', 'slug', 'project', 'id', 'to', 'email']);
/** Variables that name something new rather than something that exists: their faults are bad values. */
const NEW_NAMES: Record<string, string[]> = { CreateApp: ['slug'] };

function realIdentifiers(name: string): string[] {
  if (name === 'email') return [f.collaborator.email, f.spare.email, f.stranger.email];
  if (name === 'id' || name === 'to') return [...f.deployments, f.cronId, f.webhookId, f.deliveryId, f.spareTokenId];
  return [f.slug];
}

/** Free values of a slot: often what it takes, sometimes anything of its type, sometimes null. */
function slotValue(slot: Slot): fc.Arbitrary<unknown> {
  const { type, name } = slot;
  const inner = type instanceof GraphQLNonNull ? type.ofType : type;
  let fits: fc.Arbitrary<unknown>;
  if (IDENTIFIERS.has(name)) fits = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...realIdentifiers(name)) }, { weight: 1, arbitrary: text });
  else fits = typed(inner, name);
  return type instanceof GraphQLNonNull ? fits : fc.oneof({ weight: 4, arbitrary: fits }, { weight: 1, arbitrary: fc.constant(null) });
}

function typed(type: GraphQLInputType, name: string): fc.Arbitrary<unknown> {
  if (type instanceof GraphQLNonNull) return typed(type.ofType, name);
  if (type instanceof GraphQLList) return fc.array(typed(type.ofType, name), { maxLength: 3 });
  if (type instanceof GraphQLEnumType) return fc.constantFrom(...type.getValues().map((v) => v.name));
  if (type instanceof GraphQLInputObjectType) {
    const fields = Object.values(type.getFields());
    return fc.record(Object.fromEntries(fields.map((fl) => [fl.name, slotValue({ path: [fl.name], type: fl.type, name: fl.name })])), {
      requiredKeys: fields.filter((fl) => fl.type instanceof GraphQLNonNull).map((fl) => fl.name),
    });
  }
  switch (type.name) {
    case 'Int':
      return name === 'first' ? fc.integer({ min: -5, max: 120 }) : numbers.filter((n) => Number.isInteger(n) && Math.abs(n) < 2 ** 31);
    case 'Boolean':
      return fc.boolean();
    case 'DateTime':
      return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date('9999-01-01') }).map((d) => d.toISOString());
    case 'JSONObject':
      return fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), text, { maxKeys: 3 });
    case 'ID':
      return fc.oneof(
        text,
        hex.map((h) => `dep_${h}`),
        fc.integer(),
      );
    default:
      return text;
  }
}

interface GqlCase {
  fault: string;
  variables: Record<string, unknown>;
}

function slotsOf(op: OperationDefinitionNode): Slot[] {
  const slots: Slot[] = [];
  for (const def of op.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    const type = typeFromAST(schema, def.type as never) as GraphQLInputType;
    slots.push({ path: [name], type, name });
    const named = getNamedType(type);
    if (named instanceof GraphQLInputObjectType) {
      for (const fl of Object.values(named.getFields())) slots.push({ path: [name, fl.name], type: fl.type, name: fl.name });
    }
  }
  return slots;
}

function gqlCase(op: OperationDefinitionNode): fc.Arbitrary<GqlCase> {
  const fresh = NEW_NAMES[op.name?.value ?? ''] ?? [];
  const identifies = (s: Slot) => IDENTIFIERS.has(s.name) && !fresh.includes(s.name);
  const slots = slotsOf(op);
  const top = slots.filter((s) => s.path.length === 1);
  const base = fc.record(Object.fromEntries(top.map((s) => [s.name, slotValue(s)])), {
    requiredKeys: top.filter((s) => s.type instanceof GraphQLNonNull).map((s) => s.name),
  });

  type Patch = (v: Record<string, unknown>) => void;
  const set =
    (s: Slot, value: unknown): Patch =>
    (v) => {
      if (s.path.length === 1) v[s.path[0]] = value;
      else v[s.path[0]] = { ...(v[s.path[0]] ?? {}), [s.path[1]]: value };
    };
  const unset =
    (s: Slot): Patch =>
    (v) => {
      if (s.path.length === 1) delete v[s.path[0]];
      else if (v[s.path[0]] && typeof v[s.path[0]] === 'object') delete (v[s.path[0]] as Record<string, unknown>)[s.path[1]];
    };
  const faults: Array<fc.Arbitrary<[string, Patch]>> = [];
  for (const s of slots) {
    // A field nested in an input object is only reached when the object itself is sent.
    faults.push(wrongFor(s.type).map((w) => [`wrong type of ${s.path.join('.')}`, set(s, w)]));
    if (s.type instanceof GraphQLNonNull) {
      faults.push(fc.constant([`null ${s.path.join('.')}`, set(s, null)]));
      faults.push(fc.constant([`missing ${s.path.join('.')}`, unset(s)]));
    }
    const bad = badFor(s.name);
    if (bad && !identifies(s)) faults.push(bad.map((b) => [`bad ${s.path.join('.')}`, set(s, b)]));
    if (identifies(s)) {
      const real = new Set(realIdentifiers(s.name).map((r) => r.toLowerCase()));
      faults.push(text.filter((x) => !real.has(x.trim().toLowerCase())).map((x) => [`unknown ${s.path.join('.')}`, set(s, x)]));
    }
  }
  const mutation = op.operation === OperationTypeNode.MUTATION;
  const fault: fc.Arbitrary<[string, Patch]> = mutation
    ? fc.oneof(...faults)
    : fc.oneof({ weight: 1, arbitrary: fc.constant(['none', () => undefined] as [string, Patch]) }, { weight: 2, arbitrary: fc.oneof(...faults) });
  return fc.tuple(base, fault).map(([b, [name, patch]]) => {
    const variables = structuredClone(b) as Record<string, unknown>;
    // Nested faults need their input object present.
    for (const s of slots)
      if (s.path.length === 2 && name.endsWith(` ${s.path.join('.')}`) && (variables[s.path[0]] === null || variables[s.path[0]] === undefined))
        variables[s.path[0]] = {};
    patch(variables);
    return { fault: name, variables };
  });
}

const operations = Object.entries(generated as Record<string, unknown>)
  .filter(([k, v]) => k.endsWith('Document') && (v as DocumentNode)?.kind === Kind.DOCUMENT)
  .map(([k, v]) => {
    const doc = v as DocumentNode;
    const op = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
    return { name: k.replace(/Document$/, ''), doc, op };
  })
  .filter(({ op }) => op.operation !== OperationTypeNode.SUBSCRIPTION && (op.variableDefinitions ?? []).length > 0);

describe('GraphQL fuzzing of the typed operations: client errors only, the database unchanged', () => {
  it('covers every typed query and mutation that takes variables', () => {
    expect(operations.length).toBeGreaterThanOrEqual(35);
  });

  it.each(operations.map((o) => [o.name, o] as [string, (typeof operations)[number]]))('%s', async (_name, { doc, op }) => {
    const query = print(doc);
    const field = (op.selectionSet.selections[0] as { name: { value: string } }).name.value;
    let refused = 0;
    await check(gqlCase(op), async (c) => {
      const res = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${f.owner.token}` },
        body: JSON.stringify({ query, variables: c.variables }),
      });
      const body = (await res.json()) as { data?: Record<string, unknown> | null; errors?: Array<{ message: string; extensions?: { code?: string } }> };
      const what = `${op.name?.value} (fault: ${c.fault}) ${JSON.stringify(c.variables).slice(0, 300)} → ${res.status} ${JSON.stringify(body).slice(0, 500)}`;
      if (res.status >= 500) throw new Error(`5xx: ${what}`);
      const codes = (body.errors ?? []).map((e) => e.extensions?.code);
      if (codes.includes('INTERNAL_SERVER_ERROR') || codes.some((x) => x === undefined)) throw new Error(`not a client error: ${what}`);
      if (body.errors?.length) refused++;
      if (op.operation === OperationTypeNode.MUTATION && (!body.errors?.length || (body.data && body.data[field] != null)))
        throw new Error(`a faulty mutation was not refused: ${what}`);
      await expectUnchanged(what);
    });
    expect(refused).toBeGreaterThan(0);
  });
});
