import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { anchors, brokenLinks, linkedFiles } from './links';

/**
 * Issue 13: a README a newcomer reads in ten minutes, pointing at everything else in docs/, and
 * no link in the README or docs/ that leads nowhere.
 */
const root = path.join(__dirname, '..', '..');
const README = path.join(root, 'README.md');
const MAX_README_LINES = 200;
const docsDir = path.join(root, 'docs');
const pages = readdirSync(docsDir)
  .filter((f) => f.endsWith('.md'))
  .map((f) => path.join(docsDir, f));
const read = (file: string) => readFileSync(file, 'utf8');

const lineCount = (text: string) => text.replace(/\n$/, '').split('\n').length;
const unlinkedPages = (readme: string) => pages.filter((p) => !linkedFiles(README, readme).has(p)).map((p) => path.relative(root, p));

describe('README.md and docs/', () => {
  it(`the README is at most ${MAX_README_LINES} lines`, () => {
    expect(lineCount(read(README))).toBeLessThanOrEqual(MAX_README_LINES);
  });

  it('the README links to every docs/*.md', () => {
    expect(pages.map((p) => path.basename(p))).toEqual(expect.arrayContaining(['api.md', 'configuration.md', 'operations.md', 'benchmarks.md']));
    expect(unlinkedPages(read(README))).toEqual([]);
  });

  it.each([README, ...pages].map((f) => [path.relative(root, f), f]))('every relative link in %s leads to a file and heading that exist', (_name, file) => {
    expect(brokenLinks(file, read(file))).toEqual([]);
  });

  it('catches planted violations: a long README, a page it does not link, a missing file or heading', () => {
    const readme = read(README);
    expect(lineCount(`${readme}${'\n'.repeat(MAX_README_LINES)}x\n`)).toBeGreaterThan(MAX_README_LINES);
    expect(unlinkedPages(readme.replace(/\[docs\/benchmarks\.md\]\(docs\/benchmarks\.md\)/, 'benchmarks'))).toEqual(['docs/benchmarks.md']);
    const planted = `${readme}\nSee [gone](docs/gone.md), [a heading](docs/api.md#no-such-heading), [here](#nowhere) and [ok](docs/api.md#errors).\n`;
    expect(brokenLinks(README, planted)).toEqual(['docs/gone.md', 'docs/api.md#no-such-heading', '#nowhere']);
  });

  it('computes GitHub’s heading anchors', () => {
    const page = '# REST ↔ GraphQL\n## The `hatch` CLI\n```sh\n# not a heading\n```\n## Several instances (scale-out)\n## Errors\n## Errors\n';
    expect([...anchors(page)]).toEqual(['rest--graphql', 'the-hatch-cli', 'several-instances-scale-out', 'errors', 'errors-1']);
  });
});
