import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { startGateway, TestGateway } from '../support/gateway';
import { closedPort } from '../support/ports';

/**
 * Docker cannot run here, so the Dockerfile and docker-compose.yml are checked against the app
 * they package: the port, the health endpoint (by running the image's own healthcheck command),
 * the compiled entry point, and the configuration variables the compose file sets.
 */
const root = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const dockerfile = read('Dockerfile');
const compose = read('docker-compose.yml');

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n\s*/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const stages = instructions.reduce<string[][]>((acc, l) => (l.startsWith('FROM ') ? [...acc, [l]] : (acc.at(-1)?.push(l), acc)), []);
const runtime = stages.at(-1)!;

function runNode(args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { env: { ...process.env, ...env }, timeout: 20_000 }, (err) =>
      resolve(err ? (typeof err.code === 'number' ? err.code : 1) : 0),
    );
  });
}

describe('Dockerfile', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('builds in stages, installs from the lock file, and runs as a non-root user', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const install = instructions.findIndex((l) => /^RUN npm (install|ci)\b/.test(l));
    const lock = instructions.findIndex((l) => /^COPY .*package-lock\.json/.test(l));
    expect(lock).toBeGreaterThanOrEqual(0);
    expect(install).toBeGreaterThan(lock);
    // The runtime gets the production dependencies only.
    expect(instructions.some((l) => /\bnpm prune --omit=dev\b/.test(l))).toBe(true);
    expect(runtime.some((l) => /^COPY --from=\S+ \S*node_modules/.test(l))).toBe(true);
    const user = runtime.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^USER (root|0)(:|$)/);
    // Apollo turns introspection off under NODE_ENV=production; the explorer needs it.
    expect(dockerfile).not.toMatch(/NODE_ENV=production/);
  });

  it('exposes the port the gateway listens on by default, and starts the compiled entry point', () => {
    expect(runtime).toContain(`EXPOSE ${loadConfig({}).port}`);
    const build = JSON.parse(read('tsconfig.build.json'));
    const cmd = JSON.parse(runtime.find((l) => l.startsWith('CMD '))!.slice(4)) as string[];
    const entry = path.posix.join(build.compilerOptions.outDir, path.posix.relative(build.compilerOptions.rootDir, 'src/main.ts')).replace(/\.ts$/, '.js');
    expect(cmd).toEqual(['node', entry]);
    expect(build.include).toEqual(expect.arrayContaining(['src', 'migrations']));
  });

  it('has a healthcheck that passes against a running gateway and fails when nothing answers', async () => {
    const line = runtime.find((l) => l.startsWith('HEALTHCHECK '))!;
    const cmd = JSON.parse(line.slice(line.indexOf('CMD ') + 4)) as string[];
    expect(cmd[0]).toBe('node');
    expect(cmd.join(' ')).toContain('/healthz');
    const port = new URL(t.url).port;
    expect(await runNode(cmd.slice(1), { PORT: port })).toBe(0);
    expect(await runNode(cmd.slice(1), { PORT: String(await closedPort()) })).not.toBe(0);
  });
});

describe('docker-compose.yml', () => {
  it('runs PostgreSQL 16 and the gateway, each with a healthcheck, the gateway once the database is healthy', () => {
    expect(compose).toMatch(/^\s+image: postgres:16(\.\d+)?(-\w+)?\s*$/m);
    expect(compose.match(/^\s+healthcheck:\s*$/gm)).toHaveLength(2);
    expect(compose).toMatch(/depends_on:\s*\n\s+postgres:\s*\n\s+condition: service_healthy/);
    expect(compose).toMatch(/^\s+build: \.\s*$/m);
    expect(compose).toMatch(/DATABASE_URL: postgres:\/\/\S+@postgres:5432\/\S+/);
    expect(compose).toMatch(/- "?4000:4000"?/);
    // The data dir (the generated encryption key) outlives the container.
    expect(compose).toMatch(/- hatchery-data:\/var\/lib\/hatchery/);
    expect(dockerfile).toMatch(/HATCHERY_DATA_DIR=\/var\/lib\/hatchery/);
  });

  it('sets only variables the gateway reads, with values it accepts', () => {
    const gateway = compose.slice(compose.indexOf('\n  gateway:'));
    const block = gateway.slice(gateway.indexOf('environment:'), gateway.indexOf('\n    ports:'));
    const vars = [...block.matchAll(/^ {6}([A-Z][A-Z0-9_]*):\s*(.*)$/gm)].map((m) => ({ name: m[1], value: m[2] }));
    expect(vars.length).toBeGreaterThan(5);
    const known = new Set([...read('src/config.ts').matchAll(/env\.([A-Z][A-Z0-9_]*)|\(env, '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1] ?? m[2]));
    for (const { name } of vars) expect([name, known.has(name)]).toEqual([name, true]);
    // With compose's defaults substituted, the configuration loads.
    const env = Object.fromEntries(vars.map(({ name, value }) => [name, value.replace(/^"(.*)"$/, '$1').replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')]));
    expect(() => loadConfig(env)).not.toThrow();
    expect(loadConfig(env)).toMatchObject({ port: 4000, host: '0.0.0.0', jobs: true, databaseUrl: expect.stringMatching(/^postgres:\/\//) });
  });
});

describe('.dockerignore', () => {
  it('keeps local data, dependencies and build output out of the build context, and nothing the build needs', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['.hatchery', 'node_modules', 'dist', '.git']));
    for (const needed of ['src', 'migrations', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'])
      expect(ignored).not.toContain(needed);
  });
});
