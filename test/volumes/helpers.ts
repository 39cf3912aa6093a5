import { admin } from '../support/cli';
import { rest, TestGateway } from '../support/gateway';
import { EggWithPeople, makeEggWithPeople } from '../support/factories';

export { admin, CLI_TIMEOUT_MS } from '../support/cli';

export const DAY_MS = 24 * 3600 * 1000;
export const GRACE_MS = 7 * DAY_MS;

export const postVolume = (t: TestGateway, token: string | null, slug: string, body: unknown, headers: Record<string, string> = {}) =>
  rest(t.url, token, 'POST', `/v1/apps/${slug}/volume`, body, headers);

export const getVolume = (t: TestGateway, token: string | null, slug: string) => rest(t.url, token, 'GET', `/v1/apps/${slug}/volume`);

export const deleteVolume = (t: TestGateway, token: string | null, slug: string, query = '') => rest(t.url, token, 'DELETE', `/v1/apps/${slug}/volume${query}`);

/** The egg's volume row as stored (raw SQL), or null when it has none. */
export interface StoredVolume {
  size_mb: number;
  status: string;
  erase_at: string | null;
  created_at: string;
}

export async function storedVolume(t: TestGateway, slug: string): Promise<StoredVolume | null> {
  const rows: Array<{ size_mb: number; status: string; erase_at: Date | null; created_at: Date }> = await t.gateway.ds.query(
    'SELECT v.size_mb, v.status, v.erase_at, v.created_at FROM volumes v JOIN apps a ON a.id = v.app_id WHERE a.slug = $1',
    [slug],
  );
  if (rows.length > 1) throw new Error(`${rows.length} volumes for ${slug}`);
  if (rows.length === 0) return null;
  const [r] = rows;
  return { size_mb: r.size_mb, status: r.status, erase_at: r.erase_at?.toISOString() ?? null, created_at: r.created_at.toISOString() };
}

/** How many volume rows the egg has (raw SQL). */
export async function volumeRows(t: TestGateway, slug: string): Promise<number> {
  const [row] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM volumes v JOIN apps a ON a.id = v.app_id WHERE a.slug = $1', [slug]);
  return row.n as number;
}

/** The simulated runtime's usage row for the slug (raw SQL), or null. */
export async function usageRow(t: TestGateway, slug: string): Promise<number | null> {
  const rows: Array<{ used_mb: number }> = await t.gateway.ds.query('SELECT used_mb FROM sim_volume_usage WHERE slug = $1', [slug]);
  return rows.length ? rows[0].used_mb : null;
}

/** Runs a request that must be rejected and asserts the egg's stored volume did not change. */
export async function keepsVolume<T>(t: TestGateway, slug: string, request: () => Promise<T>): Promise<T> {
  const before = await storedVolume(t, slug);
  const result = await request();
  expect(await storedVolume(t, slug)).toEqual(before);
  return result;
}

/** A fresh egg with an owner, a collaborator and a stranger; optionally always_on and with a volume. */
export async function eggWithPeople(t: TestGateway, opts: { tier?: 'free' | 'always_on'; sizeMb?: number } = {}): Promise<EggWithPeople> {
  const egg = await makeEggWithPeople(t, opts.tier);
  if (opts.sizeMb !== undefined) {
    const res = await postVolume(t, egg.owner.token, egg.slug, { size_mb: opts.sizeMb });
    if (res.status !== 201) throw new Error(`provisioning ${opts.sizeMb} MB: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return egg;
}

/** `admin set-volume-usage`, which must succeed and print exactly {"slug", "used_mb"}. */
export async function setVolumeUsage(t: TestGateway, slug: string, mb: number): Promise<void> {
  const res = await admin(t.db.url, 'set-volume-usage', slug, String(mb));
  expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
  expect(res.stdout).toMatch(/^[^\n]+\n$/);
  expect(JSON.parse(res.stdout)).toEqual({ slug, used_mb: mb });
}
