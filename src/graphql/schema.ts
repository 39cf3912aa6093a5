import 'reflect-metadata';
import { GraphQLSchema, lexicographicSortSchema, printSchema } from 'graphql';
import { buildSchemaSync } from 'type-graphql';
import { GatewayPubSub, resolvers, Topics } from '../modules';
import { createPubSub } from '../bus/pubsub';
import { DateTimeScalar } from './scalars';

export function buildGatewaySchema(pubSub: GatewayPubSub = createPubSub<Topics>()): GraphQLSchema {
  return buildSchemaSync({
    resolvers: [...resolvers],
    scalarsMap: [{ type: Date, scalar: DateTimeScalar }],
    pubSub,
    validate: false,
    emitSchemaFile: false,
  });
}

/** The SDL committed as schema/schema.graphql. */
export function printGatewaySchema(): string {
  return printSchema(lexicographicSortSchema(buildGatewaySchema())) + '\n';
}
