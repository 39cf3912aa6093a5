import {
  getNamedType,
  GraphQLEnumType,
  GraphQLField,
  GraphQLInputObjectType,
  GraphQLInputType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLOutputType,
  GraphQLScalarType,
  GraphQLSchema,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql';
import { ErrorCode } from '../errors';
import { ERROR_HTTP } from '../http/problems';
import { IdPrefix } from '../ids';

/** GraphQL types as the JSON Schemas of REST bodies and parameters, in REST's wording. */

export type JsonSchema = { [key: string]: unknown };

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
export const URI: JsonSchema = { type: 'string', format: 'uri' };
export const id = (prefix: IdPrefix): JsonSchema => ({
  type: 'string',
  pattern: `^${prefix}_[0-7][0-9a-hjkmnp-tv-z]{25}$`,
  examples: [`${prefix}_01kf3x7q2m0000000000000000`],
});

/** Component schemas the others refer to by name. */
export const SHARED_SCHEMAS: Record<string, JsonSchema> = {
  Timestamp: {
    type: 'string',
    format: 'date-time',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
    description: 'ISO 8601 UTC with milliseconds.',
    examples: ['2026-11-20T12:00:00.000Z'],
  },
  Slug: { type: 'string', pattern: '^[a-z][a-z0-9-]{1,38}[a-z0-9]$', description: 'An egg’s slug.' },
};

/** The same schema, also allowing null. */
export function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.$ref === 'string') return { anyOf: [schema, { type: 'null' }] };
  const type = schema.type;
  const out: JsonSchema = { ...schema, type: Array.isArray(type) ? [...new Set([...(type as unknown[]), 'null'])] : [type, 'null'] };
  if (Array.isArray(schema.enum)) out.enum = [...(schema.enum as unknown[]), null];
  if ('const' in schema) {
    delete out.const;
    out.enum = [schema.const, null];
  }
  return out;
}

/** The GraphQL schema as the OpenAPI document reads it. */
export class SchemaView {
  private readonly enumValues: Set<string>;

  constructor(readonly schema: GraphQLSchema) {
    this.enumValues = new Set(
      Object.values(schema.getTypeMap())
        .filter(isEnumType)
        .filter((t) => !t.name.startsWith('__'))
        .flatMap((t) => t.getValues().map((v) => v.name)),
    );
  }

  objectType(name: string): GraphQLObjectType {
    const type = this.schema.getType(name);
    if (!isObjectType(type)) throw new Error(`OpenAPI: GraphQL type ${name} is not an object type`);
    return type;
  }

  outputField(type: string, name: string): GraphQLField<unknown, unknown> {
    const field = this.objectType(type).getFields()[name];
    if (!field) throw new Error(`OpenAPI: GraphQL field ${type}.${name} does not exist`);
    return field;
  }

  /** The field at the end of a dotted path (`app.slug`); null when any field on the way may be. */
  outputPath(type: string, path: string): { field: GraphQLField<unknown, unknown>; nonNull: boolean } {
    let owner = type;
    let nonNull = true;
    let field: GraphQLField<unknown, unknown> | undefined;
    for (const name of path.split('.')) {
      if (field) owner = getNamedType(field.type).name;
      field = this.outputField(owner, name);
      nonNull &&= isNonNullType(field.type);
    }
    return { field: field!, nonNull };
  }

  /** REST wording: enum values in lower case, GraphQL page fields by their REST names. */
  text(s: string): string {
    return s
      .replace(/\b[A-Z][A-Z_]+\b/g, (w) => {
        if (this.enumValues.has(w)) return w.toLowerCase();
        return w in ERROR_HTTP ? `${ERROR_HTTP[w as ErrorCode].status} \`${ERROR_HTTP[w as ErrorCode].code}\`` : w;
      })
      .replace(/`pageInfo\.endCursor`/g, '`next_cursor`');
  }

  scalar(type: GraphQLScalarType): JsonSchema {
    switch (type.name) {
      case 'ID':
      case 'String':
        return { type: 'string' };
      case 'Int':
        return { type: 'integer', format: 'int32' };
      case 'Float':
        return { type: 'number' };
      case 'Boolean':
        return { type: 'boolean' };
      case 'DateTime':
        return { type: 'string', format: 'date-time' };
      case 'JSONObject':
        return { type: 'object' };
      default:
        throw new Error(`OpenAPI: no JSON Schema for the GraphQL scalar ${type.name}`);
    }
  }

  /**
   * Response values: REST shows enums in lower case and timestamps in one format; an object type
   * is the `object` schema given (a presented resource), which lists of it take as their items.
   */
  outputSchema(type: GraphQLOutputType, object?: JsonSchema): JsonSchema {
    if (isNonNullType(type)) return this.outputSchema(type.ofType, object);
    if (isListType(type)) {
      const item = type.ofType;
      return { type: 'array', items: isNonNullType(item) ? this.outputSchema(item, object) : nullable(this.outputSchema(item, object)) };
    }
    if (isEnumType(type)) return { type: 'string', enum: type.getValues().map((v) => v.name.toLowerCase()) };
    if (isScalarType(type)) return type.name === 'DateTime' ? ref('Timestamp') : this.scalar(type);
    if (object && isObjectType(type)) return object;
    throw new Error(`OpenAPI: GraphQL type ${String(type)} needs an explicit schema`);
  }

  /**
   * Request values. Enums are upper case in bodies (GraphQL's own input coercion checks them) and
   * lower case in the query string, which the route rows upper-case (`enumParam`).
   */
  inputSchema(type: GraphQLInputType, where: 'body' | 'param'): JsonSchema {
    if (type instanceof GraphQLNonNull) return this.inputSchema(type.ofType, where);
    if (type instanceof GraphQLList) {
      const item = type.ofType;
      return { type: 'array', items: isNonNullType(item) ? this.inputSchema(item, where) : nullable(this.inputSchema(item, where)) };
    }
    if (type instanceof GraphQLEnumType) {
      return { type: 'string', enum: type.getValues().map((v) => (where === 'param' ? v.name.toLowerCase() : v.name)) };
    }
    if (type instanceof GraphQLInputObjectType) throw new Error(`OpenAPI: input object ${type.name} cannot be a parameter`);
    return this.scalar(type);
  }
}
