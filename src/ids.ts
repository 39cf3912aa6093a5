import { randomBytes } from 'node:crypto';

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

/** A gateway process's identity: on the event bus (its own events), as the holder of runner leases, in logs. */
export const newGatewayId = (): string => `gw_${randomBytes(9).toString('base64url')}`;

const ID_RE = /^([a-z]+)_([0-7][0-9a-hjkmnp-tv-z]{25})$/;

export function isId(value: string, prefix: IdPrefix): boolean {
  const m = ID_RE.exec(value);
  return m !== null && m[1] === prefix;
}
