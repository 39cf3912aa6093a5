import { rest, TestGateway } from '../support/gateway';
import { EggWithPeople, makeEggWithPeople } from '../support/factories';

/** apps.memory_mb as stored, read with raw SQL. */
export async function storedMemory(t: TestGateway, slug: string): Promise<number | null> {
  const rows: Array<{ memory_mb: number | null }> = await t.gateway.ds.query('SELECT memory_mb FROM apps WHERE slug = $1', [slug]);
  if (rows.length !== 1) throw new Error(`no egg ${slug}`);
  return rows[0].memory_mb;
}

/** Runs a request that must be rejected and asserts the egg's stored memory override did not change. */
export async function keepsMemory<T>(t: TestGateway, slug: string, request: () => Promise<T>): Promise<T> {
  const before = await storedMemory(t, slug);
  const result = await request();
  expect(await storedMemory(t, slug)).toBe(before);
  return result;
}

/** A fresh egg with an owner, a collaborator and a stranger; optionally on another tier and with an override. */
export async function eggWithPeople(t: TestGateway, opts: { tier?: 'free' | 'always_on'; memoryMb?: number } = {}): Promise<EggWithPeople> {
  const egg = await makeEggWithPeople(t, opts.tier);
  if (opts.memoryMb !== undefined) {
    const res = await rest(t.url, egg.owner.token, 'PATCH', `/apps/${egg.slug}/resources`, { memory_mb: opts.memoryMb });
    if (res.status !== 200) throw new Error(`setting memory_mb ${opts.memoryMb}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return egg;
}
