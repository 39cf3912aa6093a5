import type { GraphQLSchema } from 'graphql';

/**
 * The extension (`@Extensions(EVENT_IS_RESULT)`) of a subscription field whose result is its event
 * as it is: its resolver returns its root and ignores its arguments, which only `subscribe` reads.
 * type-graphql would still convert and validate the arguments for every event, asynchronously
 * (even with validation off), so each event's execution would be a promise; with the field's
 * resolver replaced by the identity (`passEventsThrough`) it is synchronous, and a batch of log
 * lines can be written to 2,000 subscribers as it is published (see src/graphql/shared-execution.ts).
 */
export const EVENT_IS_RESULT = { eventIsResult: true } as const;

/** Gives each subscription field marked EVENT_IS_RESULT the identity resolver. */
export function passEventsThrough(schema: GraphQLSchema): GraphQLSchema {
  for (const field of Object.values(schema.getSubscriptionType()?.getFields() ?? {})) {
    if (field.extensions?.eventIsResult === true) field.resolve = (event: unknown) => event;
  }
  return schema;
}
