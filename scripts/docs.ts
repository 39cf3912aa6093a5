/**
 * `write`: regenerates the generated block of docs/api.md (the REST ↔ GraphQL map).
 * `check [file]`: fails when the block in docs/api.md (or `file`) differs from what the code gives.
 */
import 'reflect-metadata';
import { readFileSync, writeFileSync } from 'node:fs';
import { buildGatewaySchema } from '../src/graphql/schema';
import { buildOpenApi } from '../src/rest/openapi';
import { routes } from '../src/rest/routes';
import { renderApiMap, spliceGenerated } from './api-map';

const [mode, file = 'docs/api.md'] = process.argv.slice(2);
const schema = buildGatewaySchema();
const committed = readFileSync(file, 'utf8');
const expected = spliceGenerated(committed, renderApiMap(buildOpenApi(schema), routes, schema));

if (mode === 'check') {
  if (committed !== expected) {
    console.error(`docs drift: the generated part of ${file} differs from the route table; run \`npm run docs\` and commit it`);
    process.exit(1);
  }
  console.log('docs: no drift');
} else {
  writeFileSync(file, expected);
  console.log(`wrote ${file}`);
}
