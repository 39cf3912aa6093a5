#!/usr/bin/env node
'use strict';
// The `hatch` CLI. It runs from the TypeScript sources, compiled on load by @swc-node/register
// with the project's tsconfig, whatever directory it is started from.
const path = require('node:path');

process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || path.join(__dirname, '..', 'tsconfig.json');
require('@swc-node/register');
require('../src/cli/hatch/main.ts').runCli();
