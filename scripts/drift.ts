import { readFileSync, writeFileSync } from 'node:fs';

/**
 * A generated file committed beside the code: `write` (the default) writes it, `check` fails when
 * the committed copy differs. `check <path>` compares another copy (the drift tests plant changes).
 */
export function writeOrCheck(name: string, file: string, content: string, command: string, argv = process.argv.slice(2)): void {
  const [mode, other] = argv;
  if (mode !== 'check') {
    writeFileSync(file, content);
    console.log(`wrote ${file}`);
    return;
  }
  const path = other ?? file;
  let committed = '';
  try {
    committed = readFileSync(path, 'utf8');
  } catch {
    // missing counts as drift
  }
  if (committed !== content) {
    console.error(`${name} drift: ${path} differs from what the code emits; run \`${command}\` and commit it`);
    process.exit(1);
  }
  console.log(`${name}: no drift`);
}
