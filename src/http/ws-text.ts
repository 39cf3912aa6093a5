import type { RawData } from 'ws';

/** The text of a `ws` message, whichever of its binary shapes it arrived in. */
export function wsText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  return Buffer.from(data).toString('utf8');
}
