#!/usr/bin/env node
'use strict';
// The `hatch` CLI. In a checkout with the dev dependencies it runs from the TypeScript sources,
// compiled on load by @swc-node/register with the project's tsconfig; in an install without them
// (the Docker image, `npm install --omit=dev` after `tsc -p tsconfig.build.json`) it runs the
// compiled code in dist/.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const sources = path.join(root, 'src', 'cli', 'hatch', 'main.ts');
let register = null;
try {
  register = require.resolve('@swc-node/register');
} catch {
  // no dev dependencies: the compiled CLI below
}
if (register && fs.existsSync(sources)) {
  process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(root, 'tsconfig.json');
  require(register);
  require(sources).runCli();
} else {
  require(path.join(root, 'dist', 'src', 'cli', 'hatch', 'main.js')).runCli();
}
