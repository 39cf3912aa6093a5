/** `write`: emits schema/schema.graphql from the resolvers. `check`: fails when it differs. */
import { readFileSync, writeFileSync } from 'node:fs';
import { printGatewaySchema } from '../src/graphql/schema';

const FILE = 'schema/schema.graphql';
const sdl = printGatewaySchema();
if (process.argv[2] === 'check') {
  let committed = '';
  try {
    committed = readFileSync(FILE, 'utf8');
  } catch {
    // missing counts as drift
  }
  if (committed !== sdl) {
    console.error(`schema drift: ${FILE} differs from what the resolvers emit; run \`npm run schema\` and commit it`);
    process.exit(1);
  }
  console.log('schema: no drift');
} else {
  writeFileSync(FILE, sdl);
  console.log(`wrote ${FILE}`);
}
