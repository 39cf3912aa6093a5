import { buildGatewaySchema } from '../../src/graphql/schema';
import { OperationGuard } from '../../src/graphql/limits';

/** OperationGuard remembers an operation's cost per variables (src/graphql/limits.ts): the verdicts stay each request's own. */
describe('operation costs remembered per variables', () => {
  const guard = new OperationGuard(buildGatewaySchema(), { maxDepth: 12, maxCost: 3000, maxAliases: 15, maxDirectives: 50, maxTokens: 1000 });
  const query = 'query L($first: Int, $logs: Int) { deployments(first: $first) { nodes { id logs(first: $logs) { nodes { message } } } } }';
  const verdict = (variables: Record<string, unknown>) => guard.check({ query, variables }).map((e) => e.extensions?.limit ?? e.message);

  it('the same variables get the same verdict every time, and other variables their own', () => {
    expect(verdict({ first: 2, logs: 10 })).toEqual([]);
    expect(verdict({ first: 100, logs: 500 })).toEqual(['cost']);
    expect(verdict({ first: 100, logs: 500 })).toEqual(['cost']);
    expect(verdict({ first: 2, logs: 10 })).toEqual([]);
    expect(verdict({ logs: 10, first: 2 })).toEqual([]);
    expect(verdict({ first: 100, logs: 500, extra: 'x'.repeat(2000) })).toEqual(['cost']);
  });

  it('a refusal is a fresh error each time (a request may change its own)', () => {
    const [a] = guard.check({ query, variables: { first: 100, logs: 500 } });
    const [b] = guard.check({ query, variables: { first: 100, logs: 500 } });
    expect(a).not.toBe(b);
    expect(a.message).toBe(b.message);
  });
});
