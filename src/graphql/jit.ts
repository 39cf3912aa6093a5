import type { ApolloServerOptionsWithGateway } from '@apollo/server';
import {
  DocumentNode,
  execute,
  ExecutionResult,
  getOperationAST,
  getVariableValues,
  GraphQLError,
  GraphQLSchema,
  OperationDefinitionNode,
  OperationTypeNode,
  parse,
  specifiedRules,
  validate,
  ValidationRule,
} from 'graphql';
import { CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';

type Compiled = CompiledQuery | null;
type Prepared = { operation: OperationDefinitionNode | null; compiled: Compiled };
/** A query graphql-jit compiled, with its operation. */
export type CompiledOperation = { operation: OperationDefinitionNode; compiled: CompiledQuery };

/**
 * Query texts whose compiled form (or lack of one) `compiledText` keeps, the oldest dropped first:
 * more than the distinct queries of the clients in use; a stream of new texts only evicts (each
 * compiled query holds generated code, so the bound is memory's too).
 */
const TEXTS_KEPT = 200;

/**
 * graphql-jit's errors as graphql-js makes them. Its own keep `originalError` out of their
 * enumerable properties, so whatever copies an error (Apollo Server does) loses the cause the
 * error mapping reads (a ValidationFailed would be masked as an internal error).
 */
function asGraphQLJsError(error: GraphQLError): GraphQLError {
  const copy = new GraphQLError(error.message, { path: error.path, originalError: error.originalError, extensions: error.extensions });
  if (error.locations) (copy as { locations?: GraphQLError['locations'] }).locations = error.locations;
  return copy;
}

/**
 * Runs operations compiled once into functions (graphql-jit): the same schema and resolvers,
 * without graphql-js walking the document for every request. In the bench a REST list answers
 * 1.2× the requests per second of graphql-js's `execute`.
 *
 * graphql-js still runs mutations, what graphql-jit cannot compile, and any request whose
 * variables do not coerce: its errors are then graphql-js's own, word for word.
 *
 * Used by the REST table and by Apollo Server (GraphQL over HTTP). Subscriptions over graphql-ws
 * keep graphql-js (their executions are shared, src/graphql/shared-execution.ts).
 */
export class JitExecutor {
  /**
   * Per document (Apollo Server and the REST table keep theirs), per operation name: the operation
   * and, for a query graphql-jit could compile, its compiled form. Worked out on first use.
   */
  private readonly prepared = new WeakMap<DocumentNode, Map<string, Prepared>>();
  /** Per operation name and query text, for `compiledText`. */
  private readonly byText = new Map<string, CompiledOperation | null>();

  /** `validationRules`: what Apollo Server validates with besides graphql-js's own rules. */
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly validationRules: readonly ValidationRule[] = [],
  ) {}

  /**
   * The compiled query of a request's text and operation name, when the text parses, passes
   * validation as Apollo Server validates it (graphql-js's rules and `validationRules`) and names
   * one query graphql-jit compiles; null otherwise (the caller leaves such a request to Apollo
   * Server, which answers it with its errors). Worked out once per text.
   */
  compiledText(query: string, operationName: string | undefined): CompiledOperation | null {
    const key = `${operationName ?? ''}\n${query}`;
    const known = this.byText.get(key);
    if (known !== undefined) return known;
    let found: CompiledOperation | null = null;
    try {
      const document = parse(query);
      if (validate(this.schema, document, [...specifiedRules, ...this.validationRules]).length === 0) {
        const { operation, compiled } = this.prepare(document, operationName);
        if (operation && compiled) found = { operation, compiled };
      }
    } catch {
      // A syntax error: Apollo Server words it.
    }
    if (this.byText.size >= TEXTS_KEPT) this.byText.delete(this.byText.keys().next().value!);
    this.byText.set(key, found);
    return found;
  }

  /** Whether the variables coerce as graphql-js coerces them (where they do not, its errors are the answer). */
  coerces(operation: OperationDefinitionNode, variableValues: Record<string, unknown>): boolean {
    return !operation.variableDefinitions?.length || !getVariableValues(this.schema, operation.variableDefinitions, variableValues).errors;
  }

  private prepare(document: DocumentNode, operationName: string | null | undefined): Prepared {
    let byName = this.prepared.get(document);
    if (!byName) this.prepared.set(document, (byName = new Map<string, Prepared>()));
    const name = operationName ?? '';
    let known = byName.get(name);
    if (!known) {
      const operation = getOperationAST(document, operationName ?? undefined) ?? null;
      // Reads only: graphql-jit builds input arguments its own way (an omitted input field present
      // as undefined, a `__proto__` key in an inline object lost), which mutations must not meet.
      const made = operation?.operation === OperationTypeNode.QUERY ? compileQuery(this.schema, document, operationName ?? undefined) : null;
      byName.set(name, (known = { operation, compiled: made && isCompiledQuery(made) ? made : null }));
    }
    return known;
  }

  /** A compiled query's result, its errors as graphql-js makes them (see `asGraphQLJsError`). */
  async runCompiled(compiled: CompiledQuery, contextValue: unknown, variableValues: Record<string, unknown>): Promise<ExecutionResult> {
    const result = await compiled.query(undefined, contextValue, variableValues);
    return result.errors?.length ? { ...result, errors: result.errors.map(asGraphQLJsError) } : result;
  }

  async run(
    document: DocumentNode,
    args: { contextValue: unknown; variableValues?: Record<string, unknown> | null; operationName?: string | null },
  ): Promise<ExecutionResult> {
    const variableValues = args.variableValues ?? {};
    const { operation, compiled } = this.prepare(document, args.operationName);
    if (compiled && operation && this.coerces(operation, variableValues)) return this.runCompiled(compiled, args.contextValue, variableValues);
    return execute({ schema: this.schema, document, contextValue: args.contextValue, variableValues, operationName: args.operationName });
  }

  /**
   * What Apollo Server takes as a custom executor: its "gateway" interface, with this schema only.
   * Apollo Server still parses, validates (the operation limits' rules among them), runs the
   * plugins and formats the errors; only the execution is ours. `ranAlready` gives, once, the
   * result of a request already executed for this context.
   */
  apolloGateway(ranAlready?: (context: object) => ExecutionResult | undefined): ApolloServerOptionsWithGateway<object>['gateway'] {
    const schema = this.schema;
    return {
      load: () =>
        Promise.resolve({
          // A request the fast path ran already (src/http/graphql-fast.ts) is not run twice: its result is formatted here.
          executor: (rc) =>
            (ranAlready?.(rc.context) ??
              this.run(rc.document, { contextValue: rc.context, variableValues: rc.request.variables, operationName: rc.operationName })) as never,
        }),
      onSchemaLoadOrUpdate: (callback) => {
        callback({ apiSchema: schema, coreSupergraphSdl: '' });
        return () => undefined;
      },
      stop: () => Promise.resolve(),
    };
  }
}
