import type Docker from 'dockerode';
import { removed } from '../../src/runtime/docker/docker.runtime';
import { describeDocker, docker, ensureNodeImage } from '../support/docker';

/**
 * `removed` (src/runtime/docker/docker.runtime.ts) resolves once the container is gone, and never
 * waits for ever: a removal the Engine refuses is tried again, and one that never succeeds ends in
 * an error naming the container. (It used to wait on `wait?condition=removed` after a refused
 * removal, which never answers while the container stays: a deployment's deletion then hung.)
 */
describe('removed: how a removal the Engine refuses is handled', () => {
  /** A container whose Engine answers from a script: each `remove` takes the next answer (then the last again). */
  function scripted(answers: Array<number | null>, opts: { goneAfterConflict?: boolean } = {}) {
    const calls = { remove: 0, wait: 0, inspect: 0 };
    let gone = false;
    const fail = (statusCode: number) => Object.assign(new Error(`(HTTP code ${statusCode}) engine says no`), { statusCode });
    const container = {
      id: 'c0ffee',
      remove: () => {
        const answer = answers[Math.min(calls.remove++, answers.length - 1)];
        if (answer === null) {
          gone = true;
          return Promise.resolve();
        }
        if (answer === 409 && opts.goneAfterConflict) gone = true;
        return Promise.reject(fail(answer));
      },
      wait: (o: { abortSignal: AbortSignal }) => {
        calls.wait++;
        // Answers at once when the container is gone, else when the bounded wait gives up.
        return gone
          ? Promise.resolve({ StatusCode: 0 })
          : new Promise((_resolve, reject) => o.abortSignal.addEventListener('abort', () => reject(o.abortSignal.reason as Error)));
      },
      inspect: () => {
        calls.inspect++;
        return gone ? Promise.reject(fail(404)) : Promise.resolve({ Id: 'c0ffee' });
      },
    };
    return { container: container as unknown as Docker.Container, calls };
  }

  it('resolves once the Engine removed it, or when there was nothing to remove', async () => {
    const done = scripted([null]);
    await removed(done.container);
    expect(done.calls.remove).toBe(1);
    const missing = scripted([404]);
    await removed(missing.container);
    expect(missing.calls).toEqual({ remove: 1, wait: 0, inspect: 0 });
  });

  it('another removal under way (409): waits for it, and resolves once it is gone', async () => {
    const s = scripted([409], { goneAfterConflict: true });
    await removed(s.container);
    expect(s.calls).toMatchObject({ remove: 1, inspect: 1 });
  });

  it('a refused removal (500) is tried again until it succeeds', async () => {
    const s = scripted([500, 500, null]);
    await removed(s.container, 10_000);
    expect(s.calls.remove).toBe(3);
  });

  it('a removal refused for good ends in an error naming the container, within the bound', async () => {
    const s = scripted([500]);
    const started = Date.now();
    await expect(removed(s.container, 1500)).rejects.toThrow(/container c0ffee could not be removed within 1500 ms: .*engine says no/);
    expect(Date.now() - started).toBeLessThan(1500 + 2500);
    expect(s.calls.remove).toBeGreaterThan(1);
  });
});

describeDocker('removed, on the Engine', () => {
  const d = docker();
  let image: string;
  beforeAll(async () => {
    image = await ensureNodeImage(d);
  }, 120_000);

  it('two removals of one running container at once both resolve, and it is gone; a gone one resolves too', async () => {
    const container = await d.createContainer({ Image: image, Cmd: ['sleep', '300'], Labels: { 'hatchery.test': 'removed' } });
    await container.start();
    await Promise.all([removed(container), removed(container)]);
    await expect(container.inspect()).rejects.toMatchObject({ statusCode: 404 });
    await removed(container);
  }, 60_000);
});
