import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * docs/requirements/issue-N.md names, for each bullet of an issue, the tests that prove it, their
 * titles quoted «like this» or “like this”. A renamed or deleted test must not leave a citation
 * that points at nothing.
 */
const root = path.join(__dirname, '..', '..');
const dir = path.join(root, 'docs', 'requirements');
const docs = readdirSync(dir).filter((f) => /^issue-\d+\.md$/.test(f));

/** Test files and the shared suites they run (test/scale-out/shared-events.ts). */
function testSources(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testSources(path.join(d, e.name)) : e.name.endsWith('.ts') ? [readFileSync(path.join(d, e.name), 'utf8')] : [],
  );
}
const corpus = testSources(path.join(root, 'test')).join('\n');

const titles = (text: string) => [...text.matchAll(/«([^»]+)»|“([^”]+)”/g)].map((m) => m[1] ?? m[2]);

/** A template title (it.each) is looked up up to its first placeholder. */
const probe = (title: string) => title.split(/%[sidjpo#]|\$\{|\$[a-z]/)[0].trim();

describe('docs/requirements', () => {
  it('has a file per issue, each citing many tests', () => {
    expect(docs.length).toBeGreaterThanOrEqual(6);
    for (const f of docs) expect(titles(readFileSync(path.join(dir, f), 'utf8')).length).toBeGreaterThan(20);
  });

  it.each(docs)('%s: every cited test title is a test of the suite', (f) => {
    const missing = titles(readFileSync(path.join(dir, f), 'utf8')).filter((t) => probe(t).length > 0 && !corpus.includes(probe(t)));
    expect(missing).toEqual([]);
  });
});
