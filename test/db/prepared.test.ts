import { Client } from 'pg';
import { GuardedClient, prepared } from '../../src/db/guarded-client';
import { createTestDatabase, TestDatabase } from '../support/db';

/** Statements marked `prepared` run as named prepared statements: parsed and planned once per connection. */
describe('prepared statements (GuardedClient)', () => {
  let db: TestDatabase;
  /** A GuardedClient, with pg's own query types (its override is typed for any overload). */
  let client: Client;
  beforeAll(async () => {
    db = await createTestDatabase();
    client = new GuardedClient({ connectionString: db.url }) as Client;
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  const preparedHere = async () =>
    (await client.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements ORDER BY prepare_time')).rows.map((r) => r.statement);

  it('a marked statement is prepared once on the connection and answers with each call’s values', async () => {
    const sql = prepared('SELECT $1::int + 1 AS n');
    expect((await client.query<{ n: number }>(sql, [1])).rows).toEqual([{ n: 2 }]);
    expect((await client.query<{ n: number }>(sql, [41])).rows).toEqual([{ n: 42 }]);
    expect(await preparedHere()).toEqual([sql]);
  });

  it('an unmarked statement is not prepared', async () => {
    const before = await preparedHere();
    expect((await client.query<{ n: number }>('SELECT $1::int * 2 AS n', [21])).rows).toEqual([{ n: 42 }]);
    expect(await preparedHere()).toEqual(before);
  });
});
