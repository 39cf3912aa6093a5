import { randomBytes, randomFillSync } from 'node:crypto';

/**
 * TypeID-style identifiers: `<prefix>_<26 chars>`, the suffix a UUIDv7 in Crockford base32, so ids
 * sort by creation time. Within one millisecond a counter keeps them increasing in this process.
 */
export const ID_PREFIXES = ['usr', 'tok', 'app', 'dep', 'cron', 'run', 'wh', 'whd', 'prv', 'chk', 'led', 'evt', 'err', 'src', 'drn'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
let lastMs = 0;
let seq = 0;

function uuidv7Bytes(nowMs: number): Buffer {
  const bytes = randomBytes(16);
  if (nowMs <= lastMs) {
    nowMs = lastMs;
    seq = (seq + 1) & 0xfff;
    if (seq === 0) nowMs = ++lastMs;
  } else {
    seq = bytes.readUInt16BE(6) & 0x7ff;
  }
  lastMs = nowMs;
  bytes.writeUIntBE(nowMs, 0, 6);
  bytes[6] = 0x70 | (seq >> 8);
  bytes[7] = seq & 0xff;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return bytes;
}

function base32(bytes: Buffer): string {
  // 128 bits → 26 chars; the first char carries the top 3 bits (TypeID encoding).
  let value = BigInt('0x' + bytes.toString('hex'));
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = ALPHABET[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

export function newId(prefix: IdPrefix, now: Date = new Date()): string {
  return `${prefix}_${base32(uuidv7Bytes(now.getTime()))}`;
}

/** Random bytes taken in slices from a pool refilled 4 KB at a time (one call into the CSPRNG per ~400 ids, not one per id). */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** `bytes` random bytes as hex, from the pool: for ids made on every request (request ids). */
export function randomHex(bytes: number): string {
  if (bytes > pool.length) return randomBytes(bytes).toString('hex');
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const hex = pool.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}

/** A gateway process's identity: on the event bus (its own events), as the holder of runner leases, in logs. */
export const newGatewayId = (): string => `gw_${randomBytes(9).toString('base64url')}`;

const ID_RE = /^([a-z]+)_([0-7][0-9a-hjkmnp-tv-z]{25})$/;

export function isId(value: string, prefix: IdPrefix): boolean {
  const m = ID_RE.exec(value);
  return m !== null && m[1] === prefix;
}
