import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A key and self-signed certificate made by openssl in a temp dir of their own (remove it when done). */
export interface SelfSigned {
  dir: string;
  certFile: string;
  key: Buffer;
  cert: Buffer;
}

/** `subjectAltName`, e.g. `IP:127.0.0.1,DNS:localhost`; the certificate is valid for a day. */
export function selfSignedCert(dirPrefix: string, commonName: string, subjectAltName: string): SelfSigned {
  const dir = mkdtempSync(path.join(os.tmpdir(), dirPrefix));
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      `subjectAltName=${subjectAltName}`,
    ],
    { stdio: 'ignore' },
  );
  return { dir, certFile, key: readFileSync(keyFile), cert: readFileSync(certFile) };
}
