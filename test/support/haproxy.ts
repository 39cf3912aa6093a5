import { execFileSync } from 'node:child_process';

/** Whether this HAProxy executable runs here (shared with the benchmark, so nothing here needs jest). */
export function haproxyInstalled(bin = 'haproxy'): boolean {
  try {
    execFileSync(bin, ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
