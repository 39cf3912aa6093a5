import { createSourceEventStream, execute, ExecutionArgs, ExecutionResult } from 'graphql';
// graphql-js's own (what its `subscribe` maps events with); graphql is pinned to 16.
import { mapAsyncIterator } from 'graphql/execution/mapAsyncIterator';
import type { Context } from './context';

type Result = ExecutionResult | Promise<ExecutionResult>;

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> => typeof v === 'object' && v !== null && Symbol.asyncIterator in v;

/**
 * Who an execution is for: the operation's text, name and variables, and the viewer (a field
 * may answer differently to different people). Null when the text is unknown: no sharing.
 */
function audience(args: ExecutionArgs): string | null {
  const text = args.document.loc?.source.body;
  if (text === undefined) return null;
  const viewer = (args.contextValue as Context | undefined)?.actor?.user.id ?? '';
  return JSON.stringify([viewer, args.operationName ?? null, args.variableValues ?? null, text]);
}

/**
 * graphql-ws's `subscribe`: graphql-js's own, except that subscribers handed the very same event
 * object (a status change, a batch of log lines: one object for every subscriber of a
 * deployment) by the same operation with the same variables, as the same viewer, share one
 * execution of it. Five hundred people following one log then cost one execution per batch
 * instead of five hundred. Results are held only as long as the event object lives.
 */
export function sharedSubscribe(): (args: ExecutionArgs) => Promise<AsyncGenerator<ExecutionResult, unknown, void> | ExecutionResult> {
  const results = new WeakMap<object, Map<string, Result>>();
  return async (args) => {
    const source = await createSourceEventStream(args);
    if (!isAsyncIterable(source)) return source;
    const key = audience(args);
    const run = (payload: unknown): Result => {
      if (key === null || typeof payload !== 'object' || payload === null) return execute({ ...args, rootValue: payload });
      let byAudience = results.get(payload);
      if (!byAudience) results.set(payload, (byAudience = new Map<string, Result>()));
      let result = byAudience.get(key);
      if (result === undefined) {
        result = execute({ ...args, rootValue: payload });
        byAudience.set(key, result);
      }
      return result;
    };
    return mapAsyncIterator(source, run);
  };
}
