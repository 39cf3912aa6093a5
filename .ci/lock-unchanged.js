// Whether `npm install` left package-lock.json as committed, for this platform: entries of optional
// binaries for other platforms are ignored, since which of them the registry lists changes over time
// (npm adds or drops them) while nothing installed here does.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');

const foreign = (entry) =>
  entry.optional === true &&
  ((Array.isArray(entry.os) && !entry.os.includes(process.platform)) || (Array.isArray(entry.cpu) && !entry.cpu.includes(process.arch)));

const packages = (lock) => Object.fromEntries(Object.entries(lock.packages ?? {}).filter(([, entry]) => !foreign(entry)));

const committed = JSON.parse(execFileSync('git', ['show', 'HEAD:package-lock.json'], { encoding: 'utf8', maxBuffer: 64 << 20 }));
const installed = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
const a = packages(committed);
const b = packages(installed);
const changed = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
if (changed.length) {
  console.error(`CI: package-lock.json is out of date for: ${changed.slice(0, 20).join(', ')}; run npm install and commit it`);
  process.exit(1);
}
