import { AddressGuard, isPublicAddress, literalAddress } from '../../src/modules/webhooks/address-guard';

describe('address classification edge forms', () => {
  it.each([
    ['::7f00:1', false], // IPv4-compatible ::127.0.0.1
    ['::a09:807', false], // IPv4-compatible ::10.9.8.7
    ['::ffff:8.8.8.8', false], // IPv4-mapped, even of a public address
    ['::ffff:127.0.0.1', false],
    ['::', false],
    ['::1', false],
    ['8.8.8.8', true],
    ['2001:4860:4860::8888', true],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it('matches an allow-listed IPv4 address in its IPv4-mapped form too', () => {
    const guard = new AddressGuard(['10.9.8.7']);
    expect(literalAddress('[::ffff:10.9.8.7]')).toBe('10.9.8.7');
    expect(guard.isExempt('[::ffff:10.9.8.7]')).toBe(true);
    expect(guard.isExempt('[::ffff:10.9.8.8]')).toBe(false);
  });
});

describe('names under .invalid (RFC 6761)', () => {
  it('are answered at once as not found, without asking DNS', async () => {
    const guard = new AddressGuard(['hooks.invalid']);
    const lookup = guard.lookupFor('hooks.invalid');
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('hooks.invalid', {}, (e) => resolve(e)));
    expect(err?.code).toBe('ENOTFOUND');
    expect(await new AddressGuard([]).refusal(new URL('https://a.b.invalid/x'))).toBeNull();
  });
});
