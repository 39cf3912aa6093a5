#!/usr/bin/env node
'use strict';
// The `hatch` CLI. In a checkout with the dev dependencies it runs from the TypeScript sources,
// compiled on load by swc (scripts/register.js); in an install without them (the Docker image,
// `npm install --omit=dev` after `tsc -p tsconfig.build.json`) it runs the compiled code in dist/.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const sources = path.join(root, 'src', 'cli', 'hatch', 'main.ts');
const register = path.join(root, 'scripts', 'register.js');
let compiler = false;
try {
  compiler = Boolean(require.resolve('@swc/core'));
} catch {
  // no dev dependencies: the compiled CLI below
}
if (compiler && fs.existsSync(sources) && fs.existsSync(register)) {
  require(register);
  require(sources).runCli();
} else {
  require(path.join(root, 'dist', 'src', 'cli', 'hatch', 'main.js')).runCli();
}
