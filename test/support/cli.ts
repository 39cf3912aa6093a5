import { execFile } from 'node:child_process';
import path from 'node:path';
import { asError } from './errors';

export const ROOT = path.resolve(__dirname, '../..');
export const CLI_TIMEOUT_MS = 60_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real operator command; resolves with its exit code and output, never rejects on a non-zero exit. */
export function admin(databaseUrl: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-r', './scripts/register.js', 'src/cli/admin.ts', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: CLI_TIMEOUT_MS },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(asError(err));
        resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
      },
    );
  });
}
