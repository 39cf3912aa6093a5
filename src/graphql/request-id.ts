import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLFormattedError } from 'graphql';
import { Context } from './context';

/**
 * Every GraphQL error names the request it happened in (`extensions.requestId`, the same id as
 * REST's `request_id` and the log lines' `reqId`); a masked internal error also has the `errorId`
 * of its log line.
 */
export function withRequestId(error: GraphQLFormattedError, requestId: string): GraphQLFormattedError {
  if (error.extensions?.requestId !== undefined) return error;
  return { ...error, extensions: { ...error.extensions, requestId } };
}

/** `withRequestId` for GraphQL over HTTP. */
export function requestIdPlugin(): ApolloServerPlugin<Context> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        willSendResponse: ({ response, contextValue }) => {
          if (response.body.kind === 'single' && response.body.singleResult.errors && contextValue?.requestId) {
            response.body.singleResult.errors = response.body.singleResult.errors.map((e) => withRequestId(e, contextValue.requestId));
          }
          return Promise.resolve();
        },
      }),
  };
}
