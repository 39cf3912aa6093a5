/**
 * `npm run architecture [-- <root>]`: the import rules of `.dependency-cruiser.cjs` (no file
 * circles, services free of GraphQL and transports, lower layers free of upper ones, every package
 * declared) over src/, test/, bench/ and scripts/, and no circle between folders of src/ either. Exits 1 naming every violation. `<root>` (default: this
 * repository) must hold a `src/`; tests point it at planted trees.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

interface Cruised {
  modules: Array<{ source: string; dependencies: Array<{ resolved: string }> }>;
  summary: { violations: Array<{ rule: { name: string }; from: string; to: string; cycle?: Array<{ name: string } | string> }> };
}

const repo = path.resolve(__dirname, '..');
const root = path.resolve(process.argv[2] ?? repo);

function cruise(): Cruised {
  const bin = path.join(repo, 'node_modules', '.bin', 'depcruise');
  const dirs = ['src', 'test', 'bench', 'scripts'].filter((d) => existsSync(path.join(root, d)));
  const args = [...dirs, '--config', path.join(repo, '.dependency-cruiser.cjs'), '--output-type', 'json'];
  try {
    return JSON.parse(execFileSync(bin, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] })) as Cruised;
  } catch (err) {
    // depcruise exits non-zero when a rule is broken; its report is still on stdout.
    const out = (err as { stdout?: string }).stdout;
    if (!out) throw err;
    return JSON.parse(out) as Cruised;
  }
}

/**
 * The folder a file counts in: each domain's GraphQL face (resolvers, loaders, inputs, outputs) and the
 * registry that lists it count with graphql/, as the layers say; a file at src/ is its own.
 */
export function folderOf(file: string): string | null {
  if (!file.startsWith('src/')) return null;
  if (/^src\/modules\/.*\.(resolver|loaders|inputs|outputs)\.ts$/.test(file) || file === 'src/modules/index.ts') return 'graphql';
  const parts = file.split('/');
  return parts.length > 2 ? parts[1] : file;
}

/** Circles between folders: each strongly connected set of two or more, with one import per edge. */
function folderCircles(modules: Cruised['modules']): string[] {
  const edges = new Map<string, Map<string, string>>();
  for (const m of modules) {
    const from = folderOf(m.source);
    if (!from) continue;
    for (const d of m.dependencies) {
      const to = folderOf(d.resolved);
      if (!to || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${m.source} → ${d.resolved}`);
    }
  }
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const set: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      set.push(w);
      if (w === v) break;
    }
    if (set.length < 2) return;
    const inside = set.flatMap((a) => [...(edges.get(a) ?? [])].filter(([b]) => set.includes(b)).map(([b, via]) => `  ${a} → ${b} (${via})`));
    circles.push(`folders import each other: ${set.sort().join(', ')}\n${inside.join('\n')}`);
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return circles;
}

const result = cruise();
const problems = [
  ...result.summary.violations.map((v) => {
    const cycle = v.cycle?.map((c) => (typeof c === 'string' ? c : c.name)).join(' → ');
    return `${v.rule.name}: ${v.from} → ${v.to}${cycle ? ` (${cycle})` : ''}`;
  }),
  ...folderCircles(result.modules),
];
if (problems.length) {
  console.error(`architecture: ${problems.length} violation(s) of the import rules (.dependency-cruiser.cjs):\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`architecture: ${result.modules.filter((m) => m.source.startsWith('src/')).length} files, no violations`);
