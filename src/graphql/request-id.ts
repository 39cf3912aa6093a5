import { GraphQLFormattedError } from 'graphql';

/**
 * Every GraphQL error names the request it happened in (`extensions.requestId`, the same id as
 * REST's `request_id` and the log lines' `reqId`); a masked internal error also has the `errorId`
 * of its log line.
 */
export function withRequestId(error: GraphQLFormattedError, requestId: string): GraphQLFormattedError {
  if (error.extensions?.requestId !== undefined) return error;
  return { ...error, extensions: { ...error.extensions, requestId } };
}
