import 'reflect-metadata';
import { GraphQLSchema, lexicographicSortSchema, printSchema } from 'graphql';
import { buildSchemaSync } from 'type-graphql';
import { GatewayPubSub, resolvers, Topics } from '../modules';
import { createPubSub } from '../bus/pubsub';
import { DateTimeScalar } from './scalars';
import { passEventsThrough } from './event-result';
import { callFieldResolversDirectly } from './direct-fields';

export function buildGatewaySchema(pubSub: GatewayPubSub = createPubSub<Topics>()): GraphQLSchema {
  const schema = buildSchemaSync({
    resolvers: [...resolvers],
    scalarsMap: [{ type: Date, scalar: DateTimeScalar }],
    pubSub,
    validate: false,
    emitSchemaFile: false,
  });
  return callFieldResolversDirectly(passEventsThrough(schema), resolvers);
}

/** The SDL committed as schema/schema.graphql. */
export function printGatewaySchema(): string {
  return printSchema(lexicographicSortSchema(buildGatewaySchema())) + '\n';
}
