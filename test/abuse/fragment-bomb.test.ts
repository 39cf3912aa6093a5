import { parse } from 'graphql';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { expandedFields, OperationGuard } from '../../src/graphql/limits';

/** 4 levels of fragments spreading the next one 30 times: 27,000 copies of `id` from 200 tokens. */
function bomb(levels = 4, width = 30): string {
  const spread = (i: number) =>
    Array(width)
      .fill(`...F${i + 1}`)
      .join(' ');
  const fragments = Array.from({ length: levels }, (_, i) => (i === levels - 1 ? `fragment F${i} on User { id }` : `fragment F${i} on User { ${spread(i)} }`));
  return `query { viewer { ...F0 } } ${fragments.join(' ')}`;
}

describe('fragment bombs', () => {
  it('expandedFields multiplies fragments out without expanding them, and stops at the cap', () => {
    expect(expandedFields(parse('{ viewer { id email } }'), 100)).toBe(3);
    expect(expandedFields(parse('{ viewer { ...U ...U } } fragment U on User { id email }'), 100)).toBe(5);
    expect(expandedFields(parse('{ viewer { ... on User { id } } }'), 100)).toBe(2);
    // 1 (viewer) + 30^3 ids, far past the cap: counted as cap + 1.
    expect(expandedFields(parse(bomb()), 20_000)).toBe(20_001);
    expect(expandedFields(parse(bomb(3, 10)), 20_000)).toBe(1 + 100);
    // The largest operation counts.
    expect(expandedFields(parse('query A { viewer { id } } query B { viewer { id email } }'), 100)).toBe(3);
  });

  it('is refused from the per-text cache: the cost is not computed again for each request', () => {
    const guard = new OperationGuard(buildGatewaySchema(), { maxDepth: 12, maxCost: 10_000, maxAliases: 15, maxDirectives: 20, maxTokens: 1000 });
    const cost = jest.spyOn(guard, 'cost');
    for (let i = 0; i < 3; i++) {
      const errors = guard.check({ query: bomb() });
      expect(errors.map((e) => e.extensions)).toEqual([expect.objectContaining({ code: 'BAD_USER_INPUT', limit: 'cost', max: 10_000 })]);
      expect(errors[0].message).toMatch(/expands to more than 20000 fields/);
    }
    expect(cost).not.toHaveBeenCalled();
    // An ordinary operation still gets its cost from its variables.
    expect(guard.check({ query: '{ viewer { id } }' })).toEqual([]);
    expect(cost).toHaveBeenCalledTimes(1);
  });
});
