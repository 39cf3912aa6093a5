import { execFile } from 'node:child_process';
import path from 'node:path';
import { dockerClient, probeEngine } from '../../src/runtime/docker/engine';
import { RuntimeUnavailable, selectRuntime } from '../../src/runtime/select';
import { closedPort } from '../support/ports';
import { describeDocker } from '../support/docker';

const ROOT = path.resolve(__dirname, '../..');

describe('HATCHERY_RUNTIME', () => {
  it('simulated: chosen without asking any Engine', async () => {
    let asked = false;
    const choice = await selectRuntime('simulated', null, () => {
      asked = true;
      return probeEngine(dockerClient(null));
    });
    expect(choice).toEqual({ kind: 'simulated', why: 'HATCHERY_RUNTIME=simulated' });
    expect(asked).toBe(false);
  });

  it('auto with no Engine at DOCKER_HOST: simulated, saying where it looked and what happened', async () => {
    const host = `tcp://127.0.0.1:${await closedPort()}`;
    const choice = await selectRuntime('auto', host, () => probeEngine(dockerClient(host)));
    expect(choice.kind).toBe('simulated');
    expect(choice.why).toMatch(new RegExp(`^HATCHERY_RUNTIME=auto and no Docker Engine answered at ${host} \\(.*ECONNREFUSED.*\\)$`));
  });

  it('docker with no Engine: the gateway does not start, and says why (exit 2)', async () => {
    const host = `tcp://127.0.0.1:${await closedPort()}`;
    await expect(selectRuntime('docker', host, () => probeEngine(dockerClient(host)))).rejects.toThrow(RuntimeUnavailable);
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['-r', './scripts/register.js', 'src/main.ts'],
        { cwd: ROOT, env: { ...process.env, HATCHERY_RUNTIME: 'docker', DOCKER_HOST: host, DATABASE_URL: 'postgres://127.0.0.1:1/never' }, timeout: 30_000 },
        (_err, _stdout, err) => resolve({ code: child.exitCode, stderr: err }),
      );
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(new RegExp(`^hatchery: HATCHERY_RUNTIME=docker, but no Docker Engine answered at ${host} \\(`));
  }, 40_000);

  it('an Engine that does not answer within the second counts as none', async () => {
    const never = { version: () => new Promise<never>(() => undefined) } as unknown as Parameters<typeof probeEngine>[0];
    expect(await probeEngine(never, 100)).toEqual({ answers: false, error: 'no answer within 100 ms' });
  });
});

describeDocker('HATCHERY_RUNTIME with an Engine here', () => {
  it('auto picks docker, naming the Engine’s version and address', async () => {
    const choice = await selectRuntime('auto', null, () => probeEngine(dockerClient(null)));
    expect(choice.kind).toBe('docker');
    expect(choice.why).toMatch(/^HATCHERY_RUNTIME=auto and Docker Engine \d+\.\d+\.\S+ answered at unix:\/\/\/var\/run\/docker\.sock$/);
  });
});
