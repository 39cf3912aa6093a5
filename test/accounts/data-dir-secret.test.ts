import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Gateways (or test workers) starting at once on one data dir make its generated secrets once:
 * CI met `EEXIST … stripe-webhook.secret` when two test files started their gateways together on
 * a fresh clone. Here eight processes ask for the encryption key of one fresh data dir at once.
 */
describe('secrets generated into the data dir', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hatchery-secret-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('processes starting together all get the one key written, and no draft is left', async () => {
    // Each process loads the code, then waits for the go file, so that all ask at the same moment.
    const go = path.join(os.tmpdir(), `hatchery-secret-go-${process.pid}`);
    rmSync(go, { force: true });
    const script = `
      const { existsSync } = require('node:fs');
      const { loadConfig } = require('./src/config');
      const { loadEncryptionKey } = require('./src/app');
      process.stdout.write('ready\\n');
      while (!existsSync(${JSON.stringify(go)})) {}
      process.stdout.write(loadEncryptionKey(loadConfig({ HATCHERY_DATA_DIR: process.argv[1] })).toString('base64'));
    `;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['-r', './scripts/register.js', '-e', script, dir], { cwd: path.resolve(__dirname, '../..') });
        let out = '';
        let err = '';
        let counted = false;
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (!counted && out.startsWith('ready\n')) {
            counted = true;
            if (++ready === 8) writeFileSync(go, '');
          }
        });
        child.stderr.on('data', (c: Buffer) => (err += c.toString()));
        child.on('exit', (code) => (code === 0 ? resolve(out.slice('ready\n'.length)) : reject(new Error(`exit ${code}: ${err}`))));
      });
    let ready = 0;
    const keys = await Promise.all(Array.from({ length: 8 }, run)).finally(() => rmSync(go, { force: true }));
    const written = readFileSync(path.join(dir, 'encryption.key'), 'utf8').trim();
    expect(new Set(keys)).toEqual(new Set([written]));
    expect(Buffer.from(written, 'base64')).toHaveLength(32);
    expect(readdirSync(dir)).toEqual(['encryption.key']);
  }, 60_000);
});
