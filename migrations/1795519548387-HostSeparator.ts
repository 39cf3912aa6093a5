import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Hosts get a separator slugs cannot hold: deployments `<slug>--<suffix>`, previews
 * `<slug>--pr-<n>` (they were `<slug>-<suffix>` and `<slug>-pr-<n>`, which another egg's slug
 * could equal). Existing slugs with `--` are renamed first (runs of dashes become one; a number is
 * added when that name is taken). down() restores the old URL forms but not the renamed slugs.
 */
export class HostSeparator1795519548387 implements MigrationInterface {
  name = 'HostSeparator1795519548387';

  async up(queryRunner: QueryRunner): Promise<void> {
    const doubled = (await queryRunner.query(`SELECT id, slug FROM apps WHERE slug LIKE '%--%' ORDER BY id`)) as Array<{ id: string; slug: string }>;
    for (const app of doubled) {
      const base = app.slug.replace(/-{2,}/g, '-');
      for (let n = 1; ; n++) {
        const tail = n === 1 ? '' : `-${n}`;
        const candidate = base.slice(0, 40 - tail.length).replace(/-+$/, '') + tail;
        const [taken] = (await queryRunner.query('SELECT 1 FROM apps WHERE slug = $1', [candidate])) as unknown[];
        if (taken) continue;
        await queryRunner.query('UPDATE apps SET slug = $2 WHERE id = $1', [app.id, candidate]);
        await queryRunner.query(`UPDATE previews SET slug = $2 || '-pr-' || pr_number WHERE app_id = $1`, [app.id, candidate]);
        break;
      }
    }
    await queryRunner.query(`UPDATE deployments d SET url = 'https://' || a.slug || '--' || right(d.id, 8) || substr(d.url, strpos(d.url, '.'))
      FROM apps a WHERE a.id = d.app_id AND d.url LIKE 'https://%.%'`);
    await queryRunner.query(`UPDATE previews p SET url = 'https://' || a.slug || '--pr-' || p.pr_number || substr(p.url, strpos(p.url, '.'))
      FROM apps a WHERE a.id = p.app_id AND p.url LIKE 'https://%.%'`);
    await queryRunner.query("ALTER TABLE \"apps\" ADD CONSTRAINT \"apps_slug_single_dashes\" CHECK (\"slug\" NOT LIKE '%--%')");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"apps\" DROP CONSTRAINT \"apps_slug_single_dashes\"");
    await queryRunner.query(`UPDATE deployments d SET url = 'https://' || a.slug || '-' || right(d.id, 8) || substr(d.url, strpos(d.url, '.'))
      FROM apps a WHERE a.id = d.app_id AND d.url LIKE 'https://%.%'`);
    await queryRunner.query(`UPDATE previews p SET url = 'https://' || a.slug || '-pr-' || p.pr_number || substr(p.url, strpos(p.url, '.'))
      FROM apps a WHERE a.id = p.app_id AND p.url LIKE 'https://%.%'`);
  }
}
