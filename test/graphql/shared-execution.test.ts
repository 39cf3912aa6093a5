import { ExecutionResult, GraphQLInt, GraphQLObjectType, GraphQLSchema, GraphQLString, parse } from 'graphql';
import { sharedSubscribe } from '../../src/graphql/shared-execution';

/**
 * sharedSubscribe: subscribers handed the same event object by the same operation, variables and
 * viewer share one execution; anything that differs executes on its own.
 */
describe('sharedSubscribe', () => {
  /** Every subscriber's source: events pushed by the test, to all of them. */
  let listeners: Array<(e: object) => void>;
  let executions: number;
  let closedSources: number;

  const Tick = new GraphQLObjectType({
    name: 'Tick',
    fields: {
      n: { type: GraphQLInt },
      later: { type: GraphQLInt, resolve: async (tick: { n: number }) => Promise.resolve(tick.n * 10) },
      label: {
        type: GraphQLString,
        args: { prefix: { type: GraphQLString } },
        resolve: (tick: { n: number }, args: { prefix?: string }, ctx: { actor?: { user: { id: string } } }) => {
          executions++;
          return `${args.prefix ?? ''}${tick.n} for ${ctx.actor?.user.id ?? 'nobody'}`;
        },
      },
    },
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
    subscription: new GraphQLObjectType({
      name: 'Subscription',
      fields: {
        ticks: {
          type: Tick,
          args: { fail: { type: GraphQLString } },
          resolve: (tick: unknown) => tick,
          subscribe: (_root: unknown, args: { fail?: string }) => {
            if (args.fail) throw new Error(args.fail);
            const queue: object[] = [];
            let wake: (() => void) | null = null;
            let open = true;
            const push = (e: object) => {
              queue.push(e);
              wake?.();
            };
            listeners.push(push);
            return {
              async next(): Promise<IteratorResult<object>> {
                while (open && queue.length === 0) await new Promise<void>((r) => (wake = r));
                if (!open) return { value: undefined, done: true };
                const value = queue.shift()!;
                if ((value as { explode?: boolean }).explode) throw new Error('source failed');
                return { value, done: false };
              },
              return(): Promise<IteratorResult<object>> {
                open = false;
                closedSources++;
                listeners.splice(listeners.indexOf(push), 1);
                wake?.();
                return Promise.resolve({ value: undefined, done: true });
              },
              [Symbol.asyncIterator]() {
                return this;
              },
            };
          },
        },
      },
    }),
  });

  beforeEach(() => {
    listeners = [];
    executions = 0;
    closedSources = 0;
  });

  const TEXT = 'subscription S($p: String) { ticks { n label(prefix: $p) } }';
  async function open(subscribe: ReturnType<typeof sharedSubscribe>, opts: { viewer?: string | null; p?: string; text?: string; fail?: string } = {}) {
    const result = await subscribe({
      schema,
      // Parsed per subscriber, as graphql-ws does.
      document: parse(opts.fail ? 'subscription S($f: String) { ticks(fail: $f) { n } }' : (opts.text ?? TEXT)),
      variableValues: opts.fail ? { f: opts.fail } : { p: opts.p ?? 'x' },
      contextValue: opts.viewer === null ? {} : { actor: { user: { id: opts.viewer ?? 'usr_a' } } },
    });
    return result as AsyncIterableIterator<ExecutionResult>;
  }
  const emit = (e: object) => [...listeners].forEach((l) => l(e));

  it('one execution per event for subscribers with the same operation, variables and viewer', async () => {
    const subscribe = sharedSubscribe();
    const streams = await Promise.all([1, 2, 3].map(() => open(subscribe)));
    const event = { n: 1 };
    emit(event);
    const results = await Promise.all(streams.map((s) => s.next()));
    expect(results.map((r) => r.value)).toEqual(Array(3).fill({ data: { ticks: { n: 1, label: 'x1 for usr_a' } } }));
    expect(executions).toBe(1);
    // A new event object executes again, once.
    emit({ n: 2 });
    expect((await Promise.all(streams.map((s) => s.next()))).map((r) => r.value.data.ticks.n)).toEqual([2, 2, 2]);
    expect(executions).toBe(2);
  });

  it('executes separately for other variables, another viewer, another text, or equal but distinct events', async () => {
    const subscribe = sharedSubscribe();
    const base = await open(subscribe);
    const otherVars = await open(subscribe, { p: 'y' });
    const otherViewer = await open(subscribe, { viewer: 'usr_b' });
    const anonymous = await open(subscribe, { viewer: null });
    const otherText = await open(subscribe, { text: 'subscription S($p: String) { ticks { label(prefix: $p) n } }' });
    emit({ n: 7 });
    const got = await Promise.all([base, otherVars, otherViewer, anonymous, otherText].map((s) => s.next()));
    expect(got.map((r) => r.value.data.ticks.label)).toEqual(['x7 for usr_a', 'y7 for usr_a', 'x7 for usr_b', 'x7 for nobody', 'x7 for usr_a']);
    expect(executions).toBe(5);
    // Two subscribers of the same audience, each handed its own (equal) object: two executions.
    listeners[0]({ n: 8 });
    listeners[0]({ n: 9 });
    await base.next();
    await base.next();
    expect(executions).toBe(7);
  });

  it('a refused subscription is a result, not a stream; a failing source fails its stream; return closes the source', async () => {
    const subscribe = sharedSubscribe();
    const refused = (await open(subscribe, { fail: 'no such deployment' })) as unknown as ExecutionResult;
    expect(Symbol.asyncIterator in refused).toBe(false);
    expect(refused.errors?.map((e) => e.message)).toEqual(['no such deployment']);

    const failing = await open(subscribe);
    emit({ explode: true });
    await expect(failing.next()).rejects.toThrow('source failed');

    const ended = await open(subscribe);
    const pending = ended.next();
    await ended.return!();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(closedSources).toBeGreaterThanOrEqual(1);
    expect(listeners).not.toContain(undefined);
  });

  it('an asynchronous execution yields its result, not a promise; throw() closes the source', async () => {
    const subscribe = sharedSubscribe();
    const streams = await Promise.all([1, 2].map(() => open(subscribe, { text: 'subscription S($p: String) { ticks { n later label(prefix: $p) } }' })));
    emit({ n: 4 });
    const got = await Promise.all(streams.map((s) => s.next()));
    expect(got).toEqual(Array(2).fill({ value: { data: { ticks: { n: 4, later: 40, label: 'x4 for usr_a' } } }, done: false }));
    expect(executions).toBe(1);
    const closed = closedSources;
    await expect(streams[0].throw!(new Error('client went away'))).rejects.toThrow('client went away');
    expect(closedSources).toBe(closed + 1);
    // The other subscriber carries on.
    emit({ n: 5 });
    expect((await streams[1].next()).value).toEqual({ data: { ticks: { n: 5, later: 50, label: 'x5 for usr_a' } } });
  });
});
