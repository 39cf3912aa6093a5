import { DataSource } from 'typeorm';
import { systemClock } from '../../src/clock';
import { createDataSource } from '../../src/data-source';
import { AccountsService } from '../../src/modules/accounts/accounts.service';
import { createTestDatabase, TestDatabase } from '../support/db';
import { unique } from '../support/factories';

/**
 * The token cache (HATCHERY_TOKEN_CACHE_MS): a token's lookup kept for a moment, dropped by the
 * bus's revocations and resyncs, and not kept at all while the bus is down. The database is
 * changed behind the service's back here (no event), to see what it kept.
 */
describe('authenticated tokens kept for a moment', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let busUp = true;
  const revokeBehindItsBack = (tokenId: string) => ds.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [tokenId]);
  const service = (ms: number) => new AccountsService(ds, systemClock, { tokensPerAccount: 10 }, () => undefined, { ms, usable: () => busUp });

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource(db.url);
    await ds.initialize();
  });
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
  });
  beforeEach(() => {
    busUp = true;
  });

  async function freshToken(accounts: AccountsService): Promise<{ token: string; tokenId: string }> {
    const { token } = await accounts.createUser(`${unique('cache')}@example.com`);
    const auth = await accounts.authenticate(token);
    return { token, tokenId: auth!.tokenId };
  }

  it('a kept token answers without reading storage until the bus says it was revoked', async () => {
    const accounts = service(60_000);
    const { token, tokenId } = await freshToken(accounts);
    await revokeBehindItsBack(tokenId);
    expect((await accounts.authenticate(token))?.tokenId).toBe(tokenId);
    // A graphql-ws operation asks for the token as it stands in storage.
    expect(await accounts.authenticate(token, { fresh: true })).toBeNull();
    accounts.forget({ kind: 'token-revoked', tokenId });
    expect(await accounts.authenticate(token)).toBeNull();
  });

  it('another token’s revocation leaves it kept; a resync (events were missed) forgets every token', async () => {
    const accounts = service(60_000);
    const { token, tokenId } = await freshToken(accounts);
    await revokeBehindItsBack(tokenId);
    accounts.forget({ kind: 'token-revoked', tokenId: 'tok_someone_else' });
    expect((await accounts.authenticate(token))?.tokenId).toBe(tokenId);
    accounts.forget({ kind: 'resync' });
    expect(await accounts.authenticate(token)).toBeNull();
  });

  it('while the bus is down nothing kept is used and nothing is kept', async () => {
    const accounts = service(60_000);
    const { token, tokenId } = await freshToken(accounts);
    busUp = false;
    await revokeBehindItsBack(tokenId);
    expect(await accounts.authenticate(token)).toBeNull();

    const other = await freshToken(accounts);
    busUp = true;
    await revokeBehindItsBack(other.tokenId);
    expect(await accounts.authenticate(other.token)).toBeNull();
  });

  it('with 0 ms, every request reads its token', async () => {
    const accounts = service(0);
    const { token, tokenId } = await freshToken(accounts);
    await revokeBehindItsBack(tokenId);
    expect(await accounts.authenticate(token)).toBeNull();
  });

  it('a lookup read while a revocation went by is not kept: it may predate the revocation', async () => {
    const accounts = service(60_000);
    const { token, tokenId } = await freshToken(accounts);
    accounts.forget({ kind: 'resync' });
    const reading = accounts.authenticate(token);
    accounts.forget({ kind: 'token-revoked', tokenId: 'tok_someone_else' });
    expect((await reading)?.tokenId).toBe(tokenId);
    await revokeBehindItsBack(tokenId);
    expect(await accounts.authenticate(token)).toBeNull();
  });

  it('a kept token past its expiry is refused: expiry is checked on every request', async () => {
    let ahead = 0;
    const accounts = new AccountsService(ds, { now: () => new Date(Date.now() + ahead) }, { tokensPerAccount: 10 }, () => undefined, {
      ms: 60_000,
      usable: () => true,
    });
    const { token, tokenId } = await freshToken(accounts);
    await ds.query("UPDATE api_tokens SET expires_at = now() + interval '1 hour' WHERE id = $1", [tokenId]);
    accounts.forget({ kind: 'resync' });
    expect((await accounts.authenticate(token))?.tokenId).toBe(tokenId);
    ahead = 2 * 3600_000;
    expect(await accounts.authenticate(token)).toBeNull();
  });
});
