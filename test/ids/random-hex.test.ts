import { randomHex } from '../../src/ids';

/** randomHex (request ids): slices of a pooled random buffer, never repeated across refills. */
describe('randomHex', () => {
  it('gives hex of the asked length, all different, across many refills of its pool', () => {
    const seen = new Set<string>();
    // 10 bytes each: a 4 KB pool lasts 409 ids, so this crosses about 25 refills.
    for (let i = 0; i < 10_000; i++) {
      const hex = randomHex(10);
      expect(hex).toMatch(/^[0-9a-f]{20}$/);
      seen.add(hex);
    }
    expect(seen.size).toBe(10_000);
    expect(randomHex(5000)).toMatch(/^[0-9a-f]{10000}$/);
  });
});
