import { ChildProcess, spawn } from 'node:child_process';
import { CreateAppDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { admin, ROOT } from '../support/cli';
import { createTestDatabase, TestDatabase } from '../support/db';
import { collect, gqlOk, rest, TEST_KEY, wsClient } from '../support/gateway';

/**
 * `npm start` in a terminal stops on Ctrl-C (SIGINT) as it does on SIGTERM: subscriptions are
 * closed (not left hanging), the process exits 0 and says nothing on stderr. It also prints where
 * GraphQL and REST are. (test/e2e/embedded-start covers SIGTERM with a request in flight.)
 */
describe('a gateway process stopped with SIGINT', () => {
  let db: TestDatabase;
  let server: ChildProcess;
  let stdout = '';
  let stderr = '';

  beforeAll(async () => {
    db = await createTestDatabase();
    server = spawn(process.execPath, ['-r', './scripts/register.js', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        HATCHERY_ENCRYPTION_KEY: TEST_KEY,
        HATCHERY_SIM_BUILD_MS: '60000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stderr!.on('data', (c) => (stderr += c));
  }, 60_000);
  afterAll(async () => {
    if (server.exitCode === null) server.kill('SIGKILL');
    await db.drop();
  });

  it('prints its endpoints, closes open subscriptions and exits 0 with nothing on stderr', async () => {
    const url = await new Promise<string>((resolve, reject) => {
      server.stdout!.on('data', (c) => {
        stdout += c;
        const m = /listening on (http:\/\/\S+)/.exec(stdout);
        if (m && /REST: /.test(stdout)) resolve(m[1]);
      });
      server.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
    });
    expect(stdout).toContain(`GraphQL: ${url}/graphql (graphql-ws on the same path)`);
    expect(stdout).toContain(`REST:    ${url}/`);

    const created = await admin(db.url, 'create-user', 'sigint@example.com');
    const { token } = JSON.parse(created.stdout);
    await gqlOk(url, token, CreateAppDocument, { slug: 'sigint-egg' });
    const deployed = await rest(url, token, 'POST', '/deploy', { project: 'sigint-egg' });
    expect(deployed.status).toBe(201);

    // A status stream stays open while the (long) build runs.
    let closedWith!: (code: number) => void;
    const closed = new Promise<number>((resolve) => (closedWith = resolve));
    const client = wsClient(url, token, (code) => closedWith(code));
    const stream = collect(client, DeploymentStatusDocument, { id: deployed.body.id });
    expect((await stream.waitFor(1))[0].deploymentStatus.status).toBe('BUILDING');
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    server.kill('SIGINT');
    expect(await closed).toBe(1001); // going away
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
  }, 60_000);
});
