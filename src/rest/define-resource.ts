import { getNamedType, getNullableType, isEnumType } from 'graphql';
import { JsonSchema, nullable, ref, SchemaView } from './json-schema';

/**
 * A REST resource declared once: each REST field names the GraphQL field it is presented from.
 * The declaration gives the GraphQL fragment route operations select, the presenter that turns
 * the operation's data into the REST body, and the body's schema in the OpenAPI document.
 */

/** An operation's data, as GraphQL returns it: JSON, read by path. */
export type Data = Readonly<Record<string, unknown>>;

export interface FieldSpec {
  /** The GraphQL field of the resource's type, or a path through nested objects (`app.slug`). */
  from: string;
  /** The GraphQL field is an enum: REST shows its values in lower case. */
  enum?: true;
  /** The GraphQL field is an object (or a list of them) presented as this resource. */
  resource?: Resource;
  /** Refines the JSON Schema the GraphQL type gives (id patterns, URLs, references). */
  schema?: JsonSchema;
  /** Replaces the GraphQL field's description. */
  description?: string;
}

/** REST name → the GraphQL field it is presented from, as a name or a FieldSpec. */
export type Fields = Record<string, string | FieldSpec>;

export interface Resource<F extends Fields = Fields> {
  readonly kind: 'resource';
  /** The body's schema name in the OpenAPI document (`#/components/schemas/<name>`). */
  readonly name: string;
  readonly graphqlType: string;
  readonly fields: F;
  /** The GraphQL selection it is presented from; nested resources are selected inside their field. */
  readonly selection: string;
  /** `fragment Rest<name> on <graphqlType> { … }`: what an operation selects to present it. */
  readonly fragment: string;
  present(data: unknown): { [K in keyof F]: unknown };
  schema(view: SchemaView): JsonSchema;
}

/** A REST list, `{data, has_more, next_cursor}`, of a resource. */
export interface ResourceList {
  readonly kind: 'list';
  readonly name: string;
  readonly item: Resource;
  /** From a Relay connection (`nodes`, `pageInfo`), or from a plain GraphQL list (one page). */
  present(data: unknown): { data: unknown[]; has_more: boolean; next_cursor: string | null };
  schema(view: SchemaView): JsonSchema;
}

export type ResponseBody = Resource | ResourceList;

const specOf = (spec: string | FieldSpec): FieldSpec => (typeof spec === 'string' ? { from: spec } : spec);

/** The same fields, presented from the object at `path` (a payload's `webhook`, say). */
export function within<F extends Fields>(path: string, fields: F): { [K in keyof F]: FieldSpec } {
  const out: Record<string, FieldSpec> = {};
  for (const [name, spec] of Object.entries(fields)) out[name] = { ...specOf(spec), from: `${path}.${specOf(spec).from}` };
  return out as { [K in keyof F]: FieldSpec };
}

type Selection = Map<string, Selection | string>;

function selectionOf(fields: Fields): Selection {
  const root: Selection = new Map();
  for (const spec of Object.values(fields).map(specOf)) {
    const path = spec.from.split('.');
    let node = root;
    for (const name of path.slice(0, -1)) {
      let next = node.get(name);
      if (typeof next === 'string') throw new Error(`REST resource: ${spec.from} selects ${name} both as a leaf and as an object`);
      if (!next) node.set(name, (next = new Map()));
      node = next;
    }
    const leaf = path[path.length - 1];
    if (node.get(leaf) instanceof Map) throw new Error(`REST resource: ${spec.from} selects ${leaf} both as a leaf and as an object`);
    node.set(leaf, spec.resource ? `{ ${spec.resource.selection} }` : '');
  }
  return root;
}

const printSelection = (selection: Selection): string =>
  [...selection].map(([name, sub]) => (typeof sub === 'string' ? `${name}${sub && ` ${sub}`}` : `${name} { ${printSelection(sub)} }`)).join(' ');

function presentValue(spec: FieldSpec, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  // A plain value, or a list of them, is presented as the operation gave it (no copy).
  if (!spec.resource && !spec.enum) return value;
  if (Array.isArray(value)) return value.map((v) => presentValue(spec, v));
  if (spec.resource) return spec.resource.present(value);
  if (spec.enum && typeof value === 'string') return value.toLowerCase();
  return value;
}

/** The value at a path of an operation's data, its names in order; undefined where it stops. */
function valueAtNames(data: unknown, names: readonly string[]): unknown {
  let value: unknown = data;
  for (let i = 0; i < names.length; i++) value = typeof value === 'object' && value !== null ? (value as Data)[names[i]] : undefined;
  return value;
}

/** The value at a dotted path of an operation's data (`deployment.logs`); undefined where it stops. */
export function valueAt(data: unknown, path: string): unknown {
  return valueAtNames(data, path.split('.'));
}

export function defineResource<const F extends Fields>(declaration: {
  name: string;
  graphqlType: string;
  /** Replaces the GraphQL type's description. */
  description?: string;
  fields: F;
}): Resource<F> {
  const { name, graphqlType, description, fields } = declaration;
  const specs = Object.entries(fields).map(([restName, spec]) => [restName, specOf(spec)] as const);
  // Each field's path split once: a list presents every field of every row.
  const paths = specs.map(([, spec]) => spec.from.split('.'));
  const selection = printSelection(selectionOf(fields));
  return {
    kind: 'resource',
    name,
    graphqlType,
    fields,
    selection,
    fragment: `fragment Rest${name} on ${graphqlType} { ${selection} }`,
    present(data) {
      const body: Record<string, unknown> = {};
      for (let i = 0; i < specs.length; i++) body[specs[i][0]] = presentValue(specs[i][1], valueAtNames(data, paths[i]));
      return body as { [K in keyof F]: unknown };
    },
    schema(view) {
      const properties: Record<string, JsonSchema> = {};
      for (const [restName, spec] of specs) {
        const { field, nonNull } = view.outputPath(graphqlType, spec.from);
        if (isEnumType(getNamedType(field.type)) !== Boolean(spec.enum)) {
          throw new Error(`REST resource ${name}: ${restName} (${spec.from}) must ${spec.enum ? 'not ' : ''}be declared \`enum: true\``);
        }
        const base = spec.schema ?? view.outputSchema(getNullableType(field.type), spec.resource && ref(spec.resource.name));
        properties[restName] = { ...(nonNull ? base : nullable(base)), description: view.text(spec.description ?? field.description ?? '') };
      }
      return {
        type: 'object',
        description: view.text(description ?? view.objectType(graphqlType).description ?? ''),
        required: specs.map(([restName]) => restName),
        properties,
        additionalProperties: false,
      };
    },
  };
}

/** The list of `item`, named `<item>List` in the OpenAPI document. */
export function defineList(item: Resource): ResourceList {
  return {
    kind: 'list',
    name: `${item.name}List`,
    item,
    present(data) {
      if (Array.isArray(data)) return { data: data.map((d) => item.present(d)), has_more: false, next_cursor: null };
      const hasNextPage = valueAt(data, 'pageInfo.hasNextPage') === true;
      const nodes = valueAt(data, 'nodes');
      return {
        data: (Array.isArray(nodes) ? nodes : []).map((d) => item.present(d)),
        has_more: hasNextPage,
        next_cursor: hasNextPage ? (valueAt(data, 'pageInfo.endCursor') as string) : null,
      };
    },
    schema: () => ({
      type: 'object',
      description: `A page of ${item.name} records.`,
      required: ['data', 'has_more', 'next_cursor'],
      properties: {
        data: { type: 'array', items: ref(item.name), description: 'The records of this page.' },
        has_more: { type: 'boolean', description: 'Whether another page follows.' },
        next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` to get the next page; null on the last page.' },
      },
      additionalProperties: false,
    }),
  };
}
