import { createCipheriv, createDecipheriv, createHmac, hash, randomBytes } from 'node:crypto';

/** API tokens are stored only as this hash; they carry 256 random bits, so a plain SHA-256 suffices. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

export function newToken(): string {
  return `hatch_${randomBytes(32).toString('base64url')}`;
}

/** AES-256-GCM for secrets at rest (deploy env values, later webhook secrets). */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1') throw new Error(`unknown sealed secret version ${version}`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }

  /** A keyed digest, for comparing secret-bearing request bodies without storing them. */
  digest(value: string): string {
    return createHmac('sha256', this.key).update(value).digest('hex');
  }
}
