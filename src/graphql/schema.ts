import 'reflect-metadata';
import { GraphQLSchema, lexicographicSortSchema, printSchema } from 'graphql';
import { buildSchemaSync } from 'type-graphql';
import { GatewayPubSub, resolvers, Topics } from '../modules';
import { createPubSub } from '../bus/pubsub';
import { DateTimeScalar } from './scalars';
import { passEventsThrough } from './event-result';

export function buildGatewaySchema(pubSub: GatewayPubSub = createPubSub<Topics>()): GraphQLSchema {
  return passEventsThrough(
    buildSchemaSync({
      resolvers: [...resolvers],
      scalarsMap: [{ type: Date, scalar: DateTimeScalar }],
      pubSub,
      validate: false,
      emitSchemaFile: false,
    }),
  );
}

/** The SDL committed as schema/schema.graphql. */
export function printGatewaySchema(): string {
  return printSchema(lexicographicSortSchema(buildGatewaySchema())) + '\n';
}
