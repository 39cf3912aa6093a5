import { createSourceEventStream, execute, ExecutionArgs, ExecutionResult } from 'graphql';
import { DIRECT, DirectDelivery, deliversDirectly } from '../bus/pubsub';
import type { Context } from './context';

type Result = ExecutionResult | Promise<ExecutionResult>;

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> => typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
const isPromise = <T>(v: T | Promise<T>): v is Promise<T> => typeof (v as { then?: unknown }).then === 'function';

/**
 * graphql-js's `mapAsyncIterator` (what its `subscribe` maps events with), with fewer promises
 * per event: one `then` when the execution is synchronous, as a batch of log lines' is, where
 * graphql-js's takes three async functions. Each promise costs more once AsyncLocalStorage is on
 * (the request scope, from the gateway's first HTTP request): with logBatchStream's, the promises
 * saved were about 15 % of the CPU of 2,000 subscribers following one busy log. The same behaviour
 * otherwise: an execution that throws closes the source, and `return`/`throw` reach it.
 */
function mapEvents(iterable: AsyncIterable<unknown>, run: (payload: unknown) => Result): AsyncGenerator<ExecutionResult, unknown, void> {
  const iterator = iterable[Symbol.asyncIterator]();
  const closeQuietly = async () => {
    try {
      await iterator.return?.();
    } catch {
      // Keep the original error when closing the source also fails.
    }
  };
  const fail = (err: unknown): Promise<never> =>
    closeQuietly().then(() => {
      throw err;
    });
  const map = (step: IteratorResult<unknown>): IteratorResult<ExecutionResult> | Promise<IteratorResult<ExecutionResult>> => {
    if (step.done) return step as IteratorResult<ExecutionResult>;
    let result: Result;
    try {
      result = run(step.value);
    } catch (err) {
      return fail(err);
    }
    return isPromise(result) ? result.then((value) => ({ value, done: false as const }), fail) : { value: result, done: false };
  };
  const mapped = {
    next: () => iterator.next().then(map),
    return: () => (typeof iterator.return === 'function' ? iterator.return().then(map) : Promise.resolve({ value: undefined, done: true as const })),
    throw: (error: unknown) => (typeof iterator.throw === 'function' ? iterator.throw(error).then(map) : fail(error)),
    [Symbol.asyncIterator]() {
      return mapped;
    },
  };
  return mapped as unknown as AsyncGenerator<ExecutionResult, unknown, void>;
}

/** Gives `source` a sink that runs each value's execution and, when it is done at once and has no errors, writes it. */
function directly(source: DirectDelivery<unknown>, run: (payload: unknown) => Result, write: (result: ExecutionResult) => boolean): void {
  source[DIRECT]((payload) => {
    let result: Result;
    try {
      result = run(payload);
    } catch {
      return false; // the usual way, where the error ends the stream as graphql-js would
    }
    return !isPromise(result) && !result.errors && write(result);
  });
}

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
 * The one string of each content seen (comparing equal strings is fastest when they are the same
 * string); at most 10,000 kept, then it starts again: only the speed depends on it.
 */
function canonical(strings: Map<string, string>, key: string | null): string | null {
  if (key === null) return null;
  const known = strings.get(key);
  if (known !== undefined) return known;
  if (strings.size >= 10_000) strings.clear();
  strings.set(key, key);
  return key;
}

/**
 * graphql-ws's `subscribe`: graphql-js's own, except that subscribers handed the very same event
 * object (a status change, a batch of log lines: one object for every subscriber of a
 * deployment) by the same operation with the same variables, as the same viewer, share one
 * execution of it. Five hundred people following one log then cost one execution per batch
 * instead of five hundred. Results are held only as long as the event object lives.
 */
export function sharedSubscribe(
  options: {
    /**
     * Where the subscriber's results may be written at once, from the publisher's dispatch (see
     * `DIRECT` in src/bus/pubsub.ts): a function that writes one and answers whether it did; null
     * when this subscriber's cannot be. Only results without errors go this way.
     */
    direct?(args: ExecutionArgs): ((result: ExecutionResult) => boolean) | null;
  } = {},
): (args: ExecutionArgs) => Promise<AsyncGenerator<ExecutionResult, unknown, void> | ExecutionResult> {
  const results = new WeakMap<object, Map<string, Result>>();
  /** One string per audience, so that the subscribers of one compare their keys by identity. */
  const audiences = new Map<string, string>();
  /** The result looked up last: the next subscriber of a busy log most likely wants the same one. */
  let last: { payload: object; key: string; result: Result } | null = null;
  return async (args) => {
    const source = await createSourceEventStream(args);
    if (!isAsyncIterable(source)) return source;
    const key = canonical(audiences, audience(args));
    const run = (payload: unknown): Result => {
      if (key === null || typeof payload !== 'object' || payload === null) return execute({ ...args, rootValue: payload });
      if (last !== null && last.payload === payload && last.key === key) return last.result;
      let byAudience = results.get(payload);
      if (!byAudience) results.set(payload, (byAudience = new Map<string, Result>()));
      let result = byAudience.get(key);
      if (result === undefined) {
        result = execute({ ...args, rootValue: payload });
        byAudience.set(key, result);
      }
      last = { payload, key, result };
      return result;
    };
    if (key !== null && deliversDirectly<unknown>(source)) {
      const write = options.direct?.(args);
      if (write) directly(source, run, write);
    }
    return mapEvents(source, run);
  };
}
