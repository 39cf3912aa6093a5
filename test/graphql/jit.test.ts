import {
  execute,
  GraphQLError,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  ValidationRule,
} from 'graphql';
import { JitExecutor } from '../../src/graphql/jit';

/** The REST table's executor (src/graphql/jit.ts): graphql-jit where it can, graphql-js's own answers where a request is wrong. */
describe('JitExecutor', () => {
  const Input = new GraphQLInputObjectType({ name: 'Input', fields: { a: { type: GraphQLInt }, b: { type: GraphQLInt } } });
  const schema = new GraphQLSchema({
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        // Which input fields the resolver sees as present, and whether an own `__proto__` came through.
        keys: {
          type: GraphQLString,
          args: { input: { type: Input } },
          resolve: (_root, args: { input: Record<string, unknown> }) => `${Object.keys(args.input).join(',')}|${Object.getPrototypeOf(args.input) === null}`,
        },
      },
    }),
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        echo: {
          type: GraphQLString,
          args: { times: { type: new GraphQLNonNull(GraphQLInt) }, word: { type: GraphQLString } },
          resolve: (_root, args: { times: number; word?: string }, ctx: { who: string }) => `${ctx.who}:${(args.word ?? 'egg').repeat(args.times)}`,
        },
        broken: {
          type: GraphQLString,
          resolve: () => {
            throw new Error('resolver failed');
          },
        },
      },
    }),
  });
  const jit = new JitExecutor(schema);
  const both = async (source: string, variableValues: Record<string, unknown>, operationName?: string) => {
    const document = parse(source);
    const contextValue = { who: 'me' };
    return {
      jit: JSON.parse(JSON.stringify(await jit.run(document, { contextValue, variableValues, operationName }))),
      js: JSON.parse(JSON.stringify(await execute({ schema, document, contextValue, variableValues, operationName }))),
    };
  };

  it('answers as graphql-js does, with the context and variables given', async () => {
    const r = await both('query Q($n: Int!) { echo(times: $n, word: "ab") }', { n: 3 });
    expect(r.jit).toEqual({ data: { echo: 'me:ababab' } });
    expect(r.jit).toEqual(r.js);
  });

  it('variables that do not coerce get graphql-js’s errors, word for word', async () => {
    for (const variables of [{ n: 'three' }, {}, { n: 1.5 }]) {
      const r = await both('query Q($n: Int!) { echo(times: $n) }', variables);
      expect(r.jit.errors?.[0]?.message).toMatch(/Variable "\$n"/);
      expect(r.jit).toEqual(r.js);
    }
  });

  it('a document with two operations and no name is graphql-js’s error; with a name, that one runs', async () => {
    const source = 'query A { echo(times: 1) } query B { echo(times: 2) }';
    const unnamed = await both(source, {});
    expect(unnamed.jit).toEqual(unnamed.js);
    expect(unnamed.jit.errors).toHaveLength(1);
    expect((await both(source, {}, 'B')).jit).toEqual({ data: { echo: 'me:eggegg' } });
  });

  it('mutations run on graphql-js: an omitted input field is absent, not undefined (a PATCH must not clear it)', async () => {
    for (const source of ['mutation { keys(input: { a: 1 }) }', 'mutation M($i: Input) { keys(input: $i) }']) {
      const r = await both(source, { i: { a: 1 } });
      expect(r.jit).toEqual(r.js);
      expect(r.jit.data.keys).toMatch(/^a\|/);
    }
  });

  it('a resolver’s error keeps its original error, for the error mapping', async () => {
    const result = await jit.run(parse('{ broken echo(times: 1) }'), { contextValue: { who: 'me' } });
    expect(result.data).toEqual({ broken: null, echo: 'me:egg' });
    const [error] = result.errors as GraphQLError[];
    expect(error.message).toBe('resolver failed');
    expect(error.path).toEqual(['broken']);
    expect(error.originalError?.message).toBe('resolver failed');
    // Made by graphql-js, not graphql-jit: Apollo Server's error mapping then finds the cause (a
    // ValidationFailed was masked as INTERNAL_SERVER_ERROR with graphql-jit's own errors).
    expect(Object.getPrototypeOf(error)).toBe(GraphQLError.prototype);
    expect(error.locations).toEqual([{ line: 1, column: 3 }]);
  });

  it('compiledText: a query that parses, validates (graphql-js’s rules and the ones given) and compiles; null for anything else', async () => {
    // A rule as the operation limits add them: here, no field named `broken`.
    const noBroken: ValidationRule = (ctx) => ({
      Field(node) {
        if (node.name.value === 'broken') ctx.reportError(new GraphQLError('no broken', { nodes: node }));
      },
    });
    const guarded = new JitExecutor(schema, [noBroken]);
    const found = guarded.compiledText('query Q($n: Int!) { echo(times: $n) }', undefined);
    expect(found?.operation.name?.value).toBe('Q');
    expect(await found!.compiled.query(undefined, { who: 'me' }, { n: 2 })).toEqual({ data: { echo: 'me:eggegg' } });
    expect(guarded.compiledText('query Q($n: Int!) { echo(times: $n) }', undefined)).toBe(found); // worked out once
    expect(guarded.compiledText('{ broken }', undefined)).toBeNull(); // the given rule
    expect(new JitExecutor(schema).compiledText('{ broken }', undefined)).not.toBeNull();
    expect(guarded.compiledText('{ nope }', undefined)).toBeNull(); // graphql-js's rules
    expect(guarded.compiledText('{ echo(times: 1)', undefined)).toBeNull(); // does not parse
    expect(guarded.compiledText('mutation { keys(input: {}) }', undefined)).toBeNull(); // not a query
    expect(guarded.compiledText('query A { echo(times: 1) } query B { echo(times: 2) }', undefined)).toBeNull(); // which one?
    expect(guarded.compiledText('query A { echo(times: 1) } query B { echo(times: 2) }', 'B')).not.toBeNull();
    expect(guarded.coerces(found!.operation, { n: 'two' })).toBe(false);
    expect(guarded.coerces(found!.operation, { n: 2 })).toBe(true);
  });
});
