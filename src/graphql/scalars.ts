import { GraphQLScalarType } from 'graphql';
import { GraphQLDateTime, GraphQLDateTimeISO } from 'graphql-scalars';

/** RFC 3339 timestamps in, ISO 8601 UTC with milliseconds out (`2026-11-20T12:00:00.000Z`). */
export const DateTimeScalar = new GraphQLScalarType({
  ...GraphQLDateTime.toConfig(),
  description: 'A date-time: RFC 3339 on input; ISO 8601 UTC with milliseconds on output.',
  // A valid Date (every one the resolvers give) straight to its ISO form; anything else checked.
  serialize: (value) => (value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : GraphQLDateTimeISO.serialize(value)),
});
