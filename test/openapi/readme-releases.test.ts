import { readFileSync } from 'node:fs';
import path from 'node:path';
import { API_RELEASES, routes } from '../../src/rest/routes';

/** The README's "API releases" section names every release and what each later one adds. */
describe('README: API releases', () => {
  const readme = readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
  const start = readme.indexOf('\n### API releases');
  const section = readme.slice(start, readme.indexOf('\n#', start + 1));

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
