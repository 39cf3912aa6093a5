/**
 * `generate <Name>`: writes a migration for the difference between the entities and the schema
 *   the existing migrations build, and adds it to migrations/index.ts.
 * `check`: fails when that difference is not empty (entities and migrations drifted apart).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createDataSource } from '../src/data-source';
import { withScratchDatabase } from './scratch-db';

type Query = { query: string; parameters?: unknown[] };

async function pendingSchemaChanges(): Promise<{ up: Query[]; down: Query[] }> {
  return withScratchDatabase(async (url) => {
    const ds = createDataSource(url);
    await ds.initialize();
    try {
      await ds.runMigrations({ transaction: 'each' });
      const log = await ds.driver.createSchemaBuilder().log();
      return { up: log.upQueries, down: log.downQueries };
    } finally {
      await ds.destroy();
    }
  });
}

const sql = (q: Query) => {
  const params = q.parameters?.length ? `, ${JSON.stringify(q.parameters)}` : '';
  return `    await queryRunner.query(${JSON.stringify(q.query)}${params});`;
};

async function generate(name: string): Promise<void> {
  if (!/^[A-Z][A-Za-z0-9]+$/.test(name)) throw new Error('name the migration in PascalCase, e.g. AddVolumes');
  const { up, down } = await pendingSchemaChanges();
  if (up.length === 0) {
    console.log('entities and migrations agree: nothing to generate');
    return;
  }
  const stamp = Date.now();
  const className = `${name}${stamp}`;
  const file = path.join('migrations', `${stamp}-${name}.ts`);
  writeFileSync(
    file,
    `import { MigrationInterface, QueryRunner } from 'typeorm';

export class ${className} implements MigrationInterface {
  name = '${className}';

  async up(queryRunner: QueryRunner): Promise<void> {
${up.map(sql).join('\n')}
  }

  async down(queryRunner: QueryRunner): Promise<void> {
${[...down].reverse().map(sql).join('\n')}
  }
}
`,
  );
  const index = path.join('migrations', 'index.ts');
  let text = readFileSync(index, 'utf8');
  text = `import { ${className} } from './${stamp}-${name}';\n` + text;
  text = text.replace(/export const migrations: MigrationClass\[\] = \[(.*)\];/s, (_m, list: string) => {
    const items = list
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return `export const migrations: MigrationClass[] = [\n${[...items, className].map((c) => `  ${c},\n`).join('')}];`;
  });
  writeFileSync(index, text);
  console.log(`wrote ${file}`);
}

async function check(): Promise<void> {
  const { up } = await pendingSchemaChanges();
  if (up.length > 0) {
    console.error('migration drift: the entities need schema changes no migration makes:');
    for (const q of up) console.error(`  ${q.query}`);
    console.error('run `npm run migration:generate -- <Name>` and commit the result');
    process.exit(1);
  }
  console.log('migrations: no drift');
}

const [cmd, arg] = process.argv.slice(2);
(cmd === 'generate' ? generate(arg) : cmd === 'check' ? check() : Promise.reject(new Error('usage: migrations generate <Name> | check'))).catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
