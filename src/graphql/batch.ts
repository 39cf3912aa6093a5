/** For a DataLoader: the row of each key, in the keys' order; null where there is none. */
export function oneEach<K, T>(keys: readonly K[], rows: T[], keyOf: (row: T) => K): Array<T | null> {
  const byKey = new Map(rows.map((row) => [keyOf(row), row]));
  return keys.map((key) => byKey.get(key) ?? null);
}
