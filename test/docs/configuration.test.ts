import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Issue 6: "the README explains … every configuration variable"; since issue 13 the explanations
 * live in docs/configuration.md (the gateway) and docs/cli.md (the hatch CLI). The variables are
 * collected from the only modules that read the environment: src/config.ts (the gateway: `env.X`
 * and the `int(env, 'X', …)`-style readers) and src/cli/hatch (the CLI: `env.X`, `process.env.X`).
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

/** Variables a page names in code formatting: `X`, `$X`, `$X/…`, `X=…`. */
function documented(page: string): Set<string> {
  const names = new Set<string>();
  for (const span of page.matchAll(/`([^`\n]+)`/g)) for (const m of span[1].matchAll(/\b[A-Z][A-Z0-9_]*\b/g)) names.add(m[0]);
  return names;
}

/** The variables in the first column of the page's table rows. */
function tableVariables(page: string): Set<string> {
  const rows = new Set<string>();
  for (const line of page.split('\n').filter((l) => l.startsWith('| `'))) for (const m of line.split('|')[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)) rows.add(m[1]);
  return rows;
}

/** What the table lacks and what it names that the code does not read: both empty when they agree. */
function tableDrift(page: string, read: string[]) {
  const rows = tableVariables(page);
  return { missing: read.filter((v) => !rows.has(v)), unread: [...rows].filter((v) => !read.includes(v)) };
}

describe('docs document every configuration variable', () => {
  const configuration = read('docs/configuration.md');
  const cliPage = documented(read('docs/cli.md'));
  const gateway = variables(read('src/config.ts'), GATEWAY_READS);
  const cli = variables(tsFiles('src/cli/hatch').map(read).join('\n'), CLI_READS);

  it('finds the variables the code reads (the collection works)', () => {
    expect(gateway).toEqual(
      expect.arrayContaining(['PORT', 'DATABASE_URL', 'HATCHERY_ENCRYPTION_KEY', 'HATCHERY_TRUST_PROXY', 'HATCHERY_WEBHOOK_RETRY_SCHEDULE', 'LOG_LEVEL']),
    );
    expect(gateway.length).toBeGreaterThanOrEqual(45);
    expect(cli).toEqual(expect.arrayContaining(['HATCH_API_URL', 'HATCH_TOKEN', 'HATCH_CONFIG_DIR', 'XDG_CONFIG_HOME', 'NO_COLOR']));
    expect(documented('set `FOO_BAR` or `$BAZ/x`, not QUX').has('QUX')).toBe(false);
  });

  it('every variable src/config.ts reads is in docs/configuration.md’s table, and the table names nothing else', () => {
    expect(tableVariables(configuration).size).toBeGreaterThanOrEqual(45);
    expect(tableDrift(configuration, gateway)).toEqual({ missing: [], unread: [] });
  });

  it('catches a planted violation: a row removed, a row for a variable nobody reads', () => {
    const removed = configuration.replace(/^\| `HATCHERY_LEASE_MS` \|.*\n/m, '');
    expect(removed).not.toBe(configuration);
    expect(tableDrift(removed, gateway)).toEqual({ missing: ['HATCHERY_LEASE_MS'], unread: [] });
    const extra = `${configuration}| \`HATCHERY_NOT_READ\` | \`1\` | nothing |\n`;
    expect(tableDrift(extra, gateway)).toEqual({ missing: [], unread: ['HATCHERY_NOT_READ'] });
  });

  it('every variable the hatch CLI reads is named in docs/cli.md', () => {
    expect(cli.filter((v) => !cliPage.has(v))).toEqual([]);
  });

  it('`hatch --help` lists every HATCH_* variable the CLI reads', () => {
    const help = execFileSync(process.execPath, [path.join(root, 'bin/hatch.js'), '--help'], { encoding: 'utf8' });
    expect(cli.filter((v) => v.startsWith('HATCH_') && !help.includes(v))).toEqual([]);
  });
});
