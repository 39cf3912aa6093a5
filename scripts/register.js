'use strict';
// `node -r ./scripts/register.js file.ts`: the project's TypeScript compiled on load by swc, with
// the options of `.swcrc` (the ones jest uses), each file's output kept on disk by its content.
//
// It replaces @swc-node/register, which loads the TypeScript compiler in every process to read
// tsconfig.json: about 0.8 s of CPU for each `npm start`, `hatch` command and test that starts a
// child process, twice what the rest of such a start costs. Only `.ts` files outside
// node_modules go through it; JavaScript loads as Node loads it.
const crypto = require('node:crypto');
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');

const root = path.join(__dirname, '..');
const options = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
delete options.$schema;
// Kept with the dependencies: a fresh install starts with none, and nothing outside the project reads it.
const cacheDir = path.join(root, 'node_modules', '.cache', 'hatchery-swc');

let swc = null;
let salt = null;

/** What changes every output: the compiler's version and the options. */
function cacheSalt() {
  if (salt === null) {
    const { version } = JSON.parse(fs.readFileSync(require.resolve('@swc/core/package.json'), 'utf8'));
    salt = `${version}\0${JSON.stringify(options)}\0`;
  }
  return salt;
}

function compile(source, filename) {
  const key = crypto.createHash('sha256').update(cacheSalt()).update(filename).update('\0').update(source).digest('hex');
  const cached = path.join(cacheDir, `${key}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    // not compiled yet
  }
  swc ??= require('@swc/core');
  const { code } = swc.transformSync(source, { ...options, swcrc: false, configFile: false, filename, sourceMaps: 'inline' });
  try {
    fs.mkdirSync(cacheDir, { recursive: true });
    // Written whole, then renamed: a process reading it meanwhile sees all of it or none.
    const draft = `${cached}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
    fs.writeFileSync(draft, code);
    fs.renameSync(draft, cached);
  } catch {
    // a read-only checkout: compiled again next time
  }
  return code;
}

const load = Module._extensions['.js'];
Module._extensions['.ts'] = function loadTypeScript(module, filename) {
  if (filename.includes(`${path.sep}node_modules${path.sep}`)) return load(module, filename);
  module._compile(compile(fs.readFileSync(filename, 'utf8'), filename), filename);
};
