import Stripe from 'stripe';
import { DataSource } from 'typeorm';
import { EnergyDocument, EnergyLedgerDocument, EnergyLedgerQuery } from '../../src/client/generated';
import { gqlOk } from '../support/gateway';

export const BUCKETS = ['daily', 'weekly', 'bonus', 'pack'] as const;
export type Bucket = (typeof BUCKETS)[number];
export type Balances = Record<Bucket, number>;

export interface LedgerRow {
  id: string;
  bucket: Bucket;
  delta: number;
  balance_after: number;
  reason: string;
  ref: string | null;
}

/** The caller's energy over GraphQL. */
export async function energyOf(url: string, token: string) {
  return (await gqlOk(url, token, EnergyDocument, {})).energy;
}

/** Every ledger entry of the caller over GraphQL, newest first, following the pages. */
export async function ledgerOf(url: string, token: string) {
  const all: EnergyLedgerQuery['energyLedger']['nodes'] = [];
  let after: string | null = null;
  for (let page = 0; page < 100; page++) {
    const res: EnergyLedgerQuery = await gqlOk(url, token, EnergyLedgerDocument, { first: 100, after });
    all.push(...res.energyLedger.nodes);
    if (!res.energyLedger.pageInfo.hasNextPage) return all;
    after = res.energyLedger.pageInfo.endCursor ?? null;
  }
  throw new Error('energyLedger did not end within 100 pages');
}

/** The stored balances of an account (raw SQL), or null when it has none. */
export async function storedBalances(ds: DataSource, userId: string): Promise<Balances | null> {
  const [row] = await ds.query('SELECT daily, weekly, bonus, pack FROM energy_accounts WHERE user_id = $1', [userId]);
  return row ? { daily: row.daily, weekly: row.weekly, bonus: row.bonus, pack: row.pack } : null;
}

/** Per-bucket sums of energy_ledger.delta (raw SQL). */
export async function ledgerSums(ds: DataSource, userId: string): Promise<Balances> {
  const rows: Array<{ bucket: Bucket; sum: number }> = await ds.query(
    'SELECT bucket, SUM(delta)::int AS sum FROM energy_ledger WHERE user_id = $1 GROUP BY bucket',
    [userId],
  );
  const sums: Balances = { daily: 0, weekly: 0, bonus: 0, pack: 0 };
  for (const r of rows) sums[r.bucket] = r.sum;
  return sums;
}

/** The account's ledger rows in the order they were written (raw SQL). */
export async function ledgerRows(ds: DataSource, userId: string): Promise<LedgerRow[]> {
  return ds.query('SELECT id, bucket, delta, balance_after, reason, ref FROM energy_ledger WHERE user_id = $1 ORDER BY id', [userId]);
}

/**
 * Balances equal the ledger: per bucket, the sum of deltas is the stored balance, and each row's
 * balance_after is the running sum so far, never below zero.
 */
export async function expectLedgerConsistent(ds: DataSource, userId: string): Promise<Balances> {
  const stored = await storedBalances(ds, userId);
  expect(stored).not.toBeNull();
  expect(await ledgerSums(ds, userId)).toEqual(stored);
  const running: Balances = { daily: 0, weekly: 0, bonus: 0, pack: 0 };
  for (const row of await ledgerRows(ds, userId)) {
    expect(row.delta).not.toBe(0);
    running[row.bucket] += row.delta;
    expect({ id: row.id, bucket: row.bucket, balance_after: row.balance_after }).toEqual({
      id: row.id,
      bucket: row.bucket,
      balance_after: running[row.bucket],
    });
    expect(row.balance_after).toBeGreaterThanOrEqual(0);
  }
  return stored!;
}

export const WEBHOOK_SECRET = 'whsec_test_secret';
const stripe = new Stripe('sk_test_x');

/** A Stripe event for a checkout session, as JSON text. */
export function sessionEvent(type: string, sessionId: string, extra: Record<string, unknown> = { payment_status: 'paid' }): string {
  return JSON.stringify({
    id: `evt_test_${Math.random().toString(36).slice(2)}`,
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    data: { object: { id: sessionId, object: 'checkout.session', mode: 'payment', status: 'complete', ...extra } },
  });
}

/** The Stripe-Signature header for a payload, made by the real SDK. */
export function signature(payload: string, secret = WEBHOOK_SECRET, timestamp?: number): string {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, ...(timestamp === undefined ? {} : { timestamp }) });
}

/** Delivers a payload to the payment webhook as Stripe does. */
export async function deliver(url: string, payload: string, sig?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/billing/webhooks/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(sig === undefined ? {} : { 'stripe-signature': sig }) },
    body: payload,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // leave the text
  }
  return { status: res.status, body };
}

/** Count of PACK_PURCHASE ledger rows of an account. */
export async function packPurchases(ds: DataSource, userId: string): Promise<LedgerRow[]> {
  return ds.query(`SELECT id, bucket, delta, balance_after, reason, ref FROM energy_ledger WHERE user_id = $1 AND reason = 'pack_purchase' ORDER BY id`, [
    userId,
  ]);
}
