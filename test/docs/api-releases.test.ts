import { readFileSync } from 'node:fs';
import path from 'node:path';
import { API_RELEASES, routes } from '../../src/rest/routes';

/** docs/api.md's "API releases" section names every release and what each later one adds. */
describe('docs/api.md: API releases', () => {
  const page = readFileSync(path.join(__dirname, '..', '..', 'docs', 'api.md'), 'utf8');
  const start = page.indexOf('\n## API releases');
  const section = page.slice(start, page.indexOf('\n#', start + 1));

  it('has the section and names every release', () => {
    expect(start).toBeGreaterThan(0);
    for (const release of API_RELEASES) expect(section).toContain(`\`${release}\``);
  });

  it('names each endpoint a later release added', () => {
    const later = routes.filter((r) => r.since !== API_RELEASES[0]);
    expect(later.length).toBeGreaterThan(0);
    for (const r of later) expect(section).toContain(`${r.method} ${r.path.replace(/^\/v1/, '')}`);
  });
});
