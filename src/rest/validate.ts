import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInputType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLScalarType,
  GraphQLString,
  GraphQLInt,
  GraphQLID,
  GraphQLBoolean,
  GraphQLFloat,
} from 'graphql';
import { FieldError } from '../errors';
import { MAX_LIST_ITEMS } from '../graphql/limits';

/** A field error whose name is exactly what the client sent (an unknown key), not a GraphQL name. */
export interface RestFieldError extends FieldError {
  asSent?: boolean;
}

const SCALAR_WORDS = new Map<GraphQLScalarType, string>([
  [GraphQLString, 'a string'],
  [GraphQLID, 'a string'],
  [GraphQLInt, 'an integer'],
  [GraphQLFloat, 'a number'],
  [GraphQLBoolean, 'a boolean'],
]);

/**
 * Checks a REST value against the GraphQL input type of the operation's variable, so REST gets
 * GraphQL's input rules with errors that name each field: missing, unknown, wrong type.
 */
export function checkInput(value: unknown, type: GraphQLInputType, path: string, errors: RestFieldError[]): void {
  if (type instanceof GraphQLNonNull) {
    if (value === undefined || value === null) {
      errors.push({ field: path, message: 'is required' });
      return;
    }
    checkInput(value, type.ofType, path, errors);
    return;
  }
  if (value === undefined || value === null) return;
  if (type instanceof GraphQLList) {
    // GraphQL coerces a single value to a one-item list; REST JSON follows its OpenAPI schema, an array.
    if (!Array.isArray(value)) {
      errors.push({ field: path, message: 'must be an array' });
      return;
    }
    if (value.length > MAX_LIST_ITEMS) {
      errors.push({ field: path, message: `must have at most ${MAX_LIST_ITEMS} items` });
      return;
    }
    value.forEach((v, i) => checkInput(v, type.ofType, `${path}[${i}]`, errors));
    return;
  }
  if (type instanceof GraphQLInputObjectType) {
    if (typeof value !== 'object' || Array.isArray(value)) {
      errors.push({ field: path, message: 'must be an object' });
      return;
    }
    const fields = type.getFields();
    for (const key of Object.keys(value)) {
      if (!Object.hasOwn(fields, key)) errors.push({ field: join(path, key), message: 'is not a known field', asSent: true });
    }
    for (const [name, field] of Object.entries(fields)) {
      checkInput((value as Record<string, unknown>)[name], field.type, join(path, name), errors);
    }
    return;
  }
  if (Array.isArray(value)) {
    errors.push({ field: path, message: 'must be a single value, not a list' });
    return;
  }
  if (type instanceof GraphQLEnumType) {
    if (typeof value !== 'string' || !type.getValue(value)) {
      errors.push({
        field: path,
        message: `must be one of ${type
          .getValues()
          .map((v) => v.name.toLowerCase())
          .join(', ')}`,
      });
    }
    return;
  }
  // PostgreSQL text cannot hold NUL: refuse it here, naming the field, rather than fail at the database.
  if (typeof value === 'string' && value.includes('\u0000')) {
    errors.push({ field: path, message: 'must not contain NUL (U+0000) characters' });
    return;
  }
  try {
    type.parseValue(value);
  } catch (err) {
    const words = SCALAR_WORDS.get(type);
    errors.push({ field: path, message: words ? `must be ${words}` : (err as Error).message });
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}
