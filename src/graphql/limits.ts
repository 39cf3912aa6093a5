import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import type { GraphQLArmorRejectCallback } from '@escape.tech/graphql-armor-types';
import {
  ASTVisitor,
  DocumentNode,
  FragmentDefinitionNode,
  getOperationAST,
  GraphQLError,
  GraphQLInputType,
  GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  Kind,
  NamedTypeNode,
  OperationDefinitionNode,
  SelectionSetNode,
  typeFromAST,
  validate,
  ValidationContext,
  ValidationRule,
} from 'graphql';
import { getVariableValues } from 'graphql/execution/values';
import { ComplexityEstimator, ComplexityEstimatorArgs, getComplexity } from 'graphql-query-complexity';
import { DEFAULT_PAGE, MAX_PAGE } from '../db/paging';

export interface OperationLimits {
  maxDepth: number;
  maxCost: number;
  maxAliases: number;
  maxDirectives: number;
  maxTokens: number;
}

/** Items in any list argument or list variable. Page sizes (`first`) are capped by their fields. */
export const MAX_LIST_ITEMS = 100;
/** Variables longer than this (as JSON) have their operation's cost worked out every time, not remembered. */
const MAX_CACHED_VARIABLES = 1024;

/** Which limit an operation broke, in `extensions.limit`. */
export type LimitName = 'depth' | 'cost' | 'aliases' | 'directives' | 'tokens' | 'list';

/** Fields evaluated while costing one operation; beyond this (fragment bombs) it is refused outright. */
const MAX_COST_NODES = 20_000;
/** Longer query texts are checked each time rather than remembered. */
const MAX_CACHED_QUERY = 16 * 1024;

function limitError(limit: LimitName, message: string, max: number, found?: number): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: 'BAD_USER_INPUT', limit, max, ...(found === undefined ? {} : { found }) },
  });
}

/**
 * The cost of a page of `first` items: each item's selection times the page size (the field's
 * default when `first` is absent; clamped to its maximum, whose own check names the argument).
 * Fields set it with type-graphql's `complexity` option when they page differently.
 */
export function pageComplexity(fallback = DEFAULT_PAGE, max = MAX_PAGE) {
  return ({ args, childComplexity }: Pick<ComplexityEstimatorArgs, 'args' | 'childComplexity'>): number => {
    const first = typeof args.first === 'number' && Number.isFinite(args.first) ? args.first : fallback;
    return 1 + Math.min(Math.max(first, 1), max) * childComplexity;
  };
}

/** With `worstCase`, an absent `first` counts as its maximum (REST operations, checked once). */
function estimators(worstCase: boolean): ComplexityEstimator[] {
  const extension: ComplexityEstimator = ({ field, args, childComplexity, ...rest }) => {
    const complexity = field.extensions?.complexity;
    if (typeof complexity === 'number') return complexity + childComplexity;
    if (typeof complexity !== 'function') return undefined;
    const estimate = complexity as ComplexityEstimator;
    if (worstCase && args.first === undefined) return estimate({ ...rest, field, args: { ...args, first: Number.MAX_SAFE_INTEGER }, childComplexity });
    return estimate({ ...rest, field, args, childComplexity });
  };
  const page: ComplexityEstimator = ({ field, args, childComplexity }) => {
    if (!field.args.some((a) => a.name === 'first')) return undefined;
    return pageComplexity()({ args: worstCase && args.first === undefined ? { ...args, first: MAX_PAGE } : args, childComplexity });
  };
  // Introspection (`__schema`, `__type`) is cheap and bounded by the schema: it costs nothing.
  const rest: ComplexityEstimator = ({ field, childComplexity }) => (field.name.startsWith('__') ? 0 : 1 + childComplexity);
  return [extension, page, rest];
}

/** List literals longer than MAX_LIST_ITEMS anywhere in the document. */
function maxListRule(context: ValidationContext): ASTVisitor {
  return {
    ListValue(node) {
      if (node.values.length > MAX_LIST_ITEMS) {
        context.reportError(
          limitError('list', `A list argument holds ${node.values.length} items; the limit is ${MAX_LIST_ITEMS}.`, MAX_LIST_ITEMS, node.values.length),
        );
      }
    },
  };
}

/**
 * The path of the first array longer than MAX_LIST_ITEMS in a variable's value, or null. Deeper
 * than any input type nests, a value is left to variable coercion, which refuses it.
 */
function longList(value: unknown, path: string, depth = 0): { path: string; length: number } | null {
  if (depth > 32) return null;
  if (Array.isArray(value)) {
    if (value.length > MAX_LIST_ITEMS) return { path, length: value.length };
    for (let i = 0; i < value.length; i++) {
      const found = longList(value[i], `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      const found = longList(v, `${path}.${key}`, depth + 1);
      if (found) return found;
    }
  }
  return null;
}

/** A value of each required variable, for costing an operation before any request gives them. */
function placeholders(schema: GraphQLSchema, operation: OperationDefinitionNode): Record<string, unknown> {
  const sample = (type: GraphQLInputType): unknown => {
    if (isNonNullType(type)) return sample(type.ofType);
    if (isListType(type)) return [];
    if (isEnumType(type)) return type.getValues()[0]?.name;
    if (isInputObjectType(type)) {
      return Object.fromEntries(
        Object.values(type.getFields())
          .filter((f) => isNonNullType(f.type) && f.defaultValue === undefined)
          .map((f) => [f.name, sample(f.type)]),
      );
    }
    const scalar = type;
    return ['x', 1, true, {}, '2026-01-01T00:00:00.000Z'].find((v) => {
      try {
        return scalar.parseValue(v) !== undefined;
      } catch {
        return false;
      }
    });
  };
  const out: Record<string, unknown> = {};
  for (const def of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, def.type as NamedTypeNode) as GraphQLInputType | undefined;
    if (type && isNonNullType(type) && !def.defaultValue) out[def.variable.name.value] = sample(type);
  }
  return out;
}

export interface OperationRequest {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

/**
 * Abuse limits for GraphQL operations: tokens (while parsing), depth, aliases, directives and
 * list sizes (graphql-armor's rules and ours, static, so cached per document), and cost (per
 * request, with its variables). A refused operation gets `BAD_USER_INPUT` errors naming the limit
 * in `extensions.limit`, and is never executed. Anything else that is wrong with an operation
 * (syntax, unknown fields, bad variables) is left to the GraphQL server's own checks.
 */
export class OperationGuard {
  /** The validation rules of the static limits, also given to Apollo. */
  readonly rules: ValidationRule[];
  private readonly cache = new Map<string, { document: DocumentNode | null; errors: GraphQLError[] }>();
  /** Costs already worked out, per document (cached above) and variables: a cost depends on nothing else. */
  private readonly costs = new WeakMap<DocumentNode, Map<string, number | null>>();

  constructor(
    private readonly schema: GraphQLSchema,
    readonly limits: OperationLimits,
  ) {
    const reject =
      (limit: LimitName, max: number): GraphQLArmorRejectCallback =>
      (context, err) => {
        const found = /found (\d+)/.exec(err.message);
        const message = err.message.replace(/^Syntax Error: /, '').replace(/^Query depth/, 'Depth');
        context?.reportError(limitError(limit, message, max, found ? Number(found[1]) : undefined));
      };
    const common = { exposeLimits: true, propagateOnRejection: false };
    this.rules = [
      maxDepthRule({ ...common, n: limits.maxDepth, ignoreIntrospection: true, onReject: [reject('depth', limits.maxDepth)] }),
      maxAliasesRule({ ...common, n: limits.maxAliases, onReject: [reject('aliases', limits.maxAliases)] }),
      maxDirectivesRule({ ...common, n: limits.maxDirectives, onReject: [reject('directives', limits.maxDirectives)] }),
      maxListRule,
    ];
  }

  /** Parses with the token limit and runs the static rules; remembered per query text. */
  private prepare(query: string): { document: DocumentNode | null; errors: GraphQLError[] } {
    const cached = this.cache.get(query);
    if (cached) return cached;
    let result: { document: DocumentNode | null; errors: GraphQLError[] };
    try {
      const parser = new MaxTokensParserWLexer(query, { n: this.limits.maxTokens, exposeLimits: true, propagateOnRejection: true });
      const document = parser.parseDocument();
      const errors = [...validate(this.schema, document, this.rules)];
      // A document whose fragments multiply out past MAX_COST_NODES fields (a fragment bomb) is
      // refused here, once per text, not by walking it again for the cost of every request.
      if (errors.length === 0 && expandedFields(document, MAX_COST_NODES) > MAX_COST_NODES) errors.push(this.tooManyNodes());
      result = { document, errors };
    } catch (err) {
      if (err instanceof GraphQLError && /Token limit/.test(err.message)) {
        result = { document: null, errors: [limitError('tokens', `Token limit of ${this.limits.maxTokens} exceeded.`, this.limits.maxTokens)] };
      } else {
        result = { document: null, errors: [] }; // a syntax error: the server's parser reports it
      }
    }
    if (query.length <= MAX_CACHED_QUERY) {
      if (this.cache.size >= 1000) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(query, result);
    }
    return result;
  }

  /** The cost of the operation that would run, or null when it cannot run anyway. */
  cost(document: DocumentNode, variables: Record<string, unknown>, operationName?: string | null, worstCase = false): number | GraphQLError | null {
    const operation = getOperationAST(document, operationName ?? undefined);
    if (!operation) return null;
    if (worstCase) variables = { ...placeholders(this.schema, operation), ...variables };
    const coerced = getVariableValues(this.schema, operation.variableDefinitions ?? [], variables);
    if (coerced.errors) return null;
    const single: DocumentNode = {
      ...document,
      definitions: document.definitions.filter((d) => d.kind !== Kind.OPERATION_DEFINITION || d === operation),
    };
    try {
      return getComplexity({ schema: this.schema, query: single, variables, estimators: estimators(worstCase), maxQueryNodes: MAX_COST_NODES });
    } catch (err) {
      if (err instanceof GraphQLError && /maximum allowed number of nodes/i.test(err.message)) {
        return this.tooManyNodes();
      }
      return null;
    }
  }

  /**
   * `cost`, remembered for the document's last 100 sets of small variables: a client repeating an
   * operation (a list, a page) is not walked again. Profiled at about 5% of a list request.
   */
  private rememberedCost(document: DocumentNode, variables: Record<string, unknown>, operationName: string | null | undefined, worstCase: boolean) {
    const key = `${worstCase ? 1 : 0}:${operationName ?? ''}:${JSON.stringify(variables)}`;
    if (key.length > MAX_CACHED_VARIABLES) return this.cost(document, variables, operationName, worstCase);
    let known = this.costs.get(document);
    if (!known) this.costs.set(document, (known = new Map<string, number | null>()));
    if (known.has(key)) return known.get(key)!;
    const cost = this.cost(document, variables, operationName, worstCase);
    // A refusal is made afresh each time (its error object is the request's own).
    if (cost instanceof GraphQLError) return cost;
    if (known.size >= 100) known.delete(known.keys().next().value!);
    known.set(key, cost);
    return cost;
  }

  private tooManyNodes(): GraphQLError {
    return limitError(
      'cost',
      `Cost limit of ${this.limits.maxCost} exceeded: the operation expands to more than ${MAX_COST_NODES} fields.`,
      this.limits.maxCost,
    );
  }

  /** The errors refusing this operation; empty when it may run. */
  check(request: OperationRequest, worstCase = false): GraphQLError[] {
    const { document, errors } = this.prepare(request.query);
    if (errors.length || !document) return errors;
    const variables = request.variables ?? {};
    for (const [name, value] of Object.entries(variables)) {
      const long = longList(value, name);
      if (long) return [limitError('list', `$${long.path} holds ${long.length} items; the limit is ${MAX_LIST_ITEMS}.`, MAX_LIST_ITEMS, long.length)];
    }
    const cost = this.rememberedCost(document, variables, request.operationName, worstCase);
    if (cost instanceof GraphQLError) return [cost];
    if (cost !== null && cost > this.limits.maxCost) {
      return [limitError('cost', `Cost limit of ${this.limits.maxCost} exceeded, found ${cost}.`, this.limits.maxCost, cost)];
    }
    return [];
  }

  /** For operations the server itself defines (REST routes): any limit they break stops the start. */
  assertWithin(name: string, query: string): void {
    const errors = this.check({ query }, true);
    if (errors.length) {
      throw new Error(
        `${name}: its GraphQL operation breaks a configured limit (${errors.map((e) => e.message).join('; ')}); raise HATCHERY_GRAPHQL_MAX_${String(errors[0].extensions.limit).toUpperCase()}`,
      );
    }
  }
}

/**
 * How many fields the largest operation of `document` has once its fragment spreads are multiplied
 * out (directives aside), counting each fragment once: linear in the document, however much it
 * expands. Stops counting past `cap`.
 */
export function expandedFields(document: DocumentNode, cap: number): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const perFragment = new Map<string, number>();
  const entered = new Set<string>(); // a cycle is a validation error; it counts nothing here
  const count = (set: SelectionSetNode | undefined): number => {
    let n = 0;
    for (const sel of set?.selections ?? []) {
      if (sel.kind === Kind.FIELD) n += 1 + count(sel.selectionSet);
      else if (sel.kind === Kind.INLINE_FRAGMENT) n += count(sel.selectionSet);
      else {
        const name = sel.name.value;
        let c = perFragment.get(name);
        if (c === undefined) {
          if (entered.has(name)) continue;
          entered.add(name);
          c = count(fragments.get(name)?.selectionSet);
          perFragment.set(name, c);
        }
        n += c;
      }
      if (n > cap) return cap + 1;
    }
    return n;
  };
  let largest = 0;
  for (const d of document.definitions) if (d.kind === Kind.OPERATION_DEFINITION) largest = Math.max(largest, count(d.selectionSet));
  return largest;
}

/** graphql-js's "Did you mean …?" hints name schema fields; clients never see them. */
export function withoutSuggestions(message: string): string {
  return message.replace(/\s*Did you mean [^?]*\?/g, '');
}
