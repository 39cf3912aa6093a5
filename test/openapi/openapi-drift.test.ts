import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { buildOpenApi } from '../../src/rest/openapi';

/**
 * schema/openapi.json is the REST contract under review, as schema/schema.graphql is GraphQL's:
 * `npm run check` runs `scripts/openapi.ts check`, which must fail when the committed copy and
 * the code disagree.
 */
const ROOT = join(__dirname, '../..');
const COMMITTED = join(ROOT, 'schema/openapi.json');

async function check(file: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/openapi.ts', 'check', file], { cwd: ROOT });
    return { code: 0, output: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('schema/openapi.json drift check', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'openapi-drift-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the committed copy is the document GET /openapi.json serves', () => {
    expect(JSON.parse(readFileSync(COMMITTED, 'utf8'))).toEqual(JSON.parse(JSON.stringify(buildOpenApi(buildGatewaySchema()))));
  });

  it('passes on the committed copy', async () => {
    expect(await check(COMMITTED)).toEqual({ code: 0, output: 'openapi: no drift\n' });
  }, 60_000);

  it('fails when one response field differs, and when the file is missing', async () => {
    const planted = JSON.parse(readFileSync(COMMITTED, 'utf8'));
    delete planted.components.schemas.Deployment.properties.env_keys;
    const file = join(dir, 'openapi.json');
    writeFileSync(file, `${JSON.stringify(planted, null, 2)}\n`);
    const drifted = await check(file);
    expect(drifted.code).toBe(1);
    expect(drifted.output).toMatch(/openapi drift: .*openapi\.json differs from what the code emits; run `npm run openapi`/);
    expect((await check(join(dir, 'absent.json'))).code).toBe(1);
  }, 60_000);
});
