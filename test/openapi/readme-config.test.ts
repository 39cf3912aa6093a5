import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Issue 6: "the README explains … every configuration variable". The variables are collected from
 * the only modules that read the environment: src/config.ts (the gateway: `env.X` and the
 * `int(env, 'X', …)`-style readers) and src/cli/hatch (the CLI: `env.X`, `process.env.X`).
 */
const root = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

function tsFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

const GATEWAY_READS = /\benv\.([A-Z][A-Z0-9_]*)|\(env, '([A-Z][A-Z0-9_]*)'/g;
const CLI_READS = /\b(?:process\.)?env\.([A-Z][A-Z0-9_]*)/g;

function variables(text: string, re: RegExp): string[] {
  return [...new Set([...text.matchAll(re)].map((m) => m.slice(1).find(Boolean)!))].sort();
}

/** Variables the README names in code formatting: `X`, `$X`, `$X/…`, `X=…`. */
function documented(readme: string): Set<string> {
  const names = new Set<string>();
  for (const span of readme.matchAll(/`([^`\n]+)`/g)) for (const m of span[1].matchAll(/\b[A-Z][A-Z0-9_]*\b/g)) names.add(m[0]);
  return names;
}

describe('README.md documents every configuration variable', () => {
  const readme = read('README.md');
  const inReadme = documented(readme);
  const gateway = variables(read('src/config.ts'), GATEWAY_READS);
  const cli = variables(tsFiles('src/cli/hatch').map(read).join('\n'), CLI_READS);

  it('finds the variables the code reads (the collection works)', () => {
    expect(gateway).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'HATCHERY_ENCRYPTION_KEY', 'HATCHERY_TRUST_PROXY', 'HATCHERY_WEBHOOK_RETRY_SCHEDULE', 'LOG_LEVEL']));
    expect(gateway.length).toBeGreaterThanOrEqual(45);
    expect(cli).toEqual(expect.arrayContaining(['HATCH_API_URL', 'HATCH_TOKEN', 'HATCH_CONFIG_DIR', 'XDG_CONFIG_HOME', 'NO_COLOR']));
    expect(documented('set `FOO_BAR` or `$BAZ/x`, not QUX').has('QUX')).toBe(false);
  });

  it('every variable src/config.ts reads is in the README’s Configuration table', () => {
    const start = readme.indexOf('\n## Configuration');
    expect(start).toBeGreaterThan(0);
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const rows = new Set<string>();
    for (const line of section.split('\n').filter((l) => l.startsWith('| `'))) for (const m of line.split('|')[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)) rows.add(m[1]);
    expect(gateway.filter((v) => !rows.has(v))).toEqual([]);
    // …and the table names nothing the gateway does not read.
    expect([...rows].filter((v) => !gateway.includes(v))).toEqual([]);
  });

  it('every variable the hatch CLI reads is named in the README', () => {
    expect(cli.filter((v) => !inReadme.has(v))).toEqual([]);
  });

  it('`hatch --help` lists every HATCH_* variable the CLI reads', () => {
    const help = execFileSync(process.execPath, [path.join(root, 'bin/hatch.js'), '--help'], { encoding: 'utf8' });
    expect(cli.filter((v) => v.startsWith('HATCH_') && !help.includes(v))).toEqual([]);
  });
});
