import { RunningEggs } from '../../src/modules/deployments/deployments.supervisor';
import type { RunningEgg } from '../../src/runtime/runtime.port';

const egg = {} as RunningEgg;

describe('RunningEggs: the eggs a gateway runs, looked up by deployment too', () => {
  it('follows set, replace, delete and clear', () => {
    const running = new RunningEggs();
    expect(running.runs('dep_a')).toBe(false);
    running.set('app_1', { deploymentId: 'dep_a', egg });
    running.set('app_2', { deploymentId: 'dep_a', egg });
    expect(running.runs('dep_a')).toBe(true);
    // A redeploy replaces the egg's deployment.
    running.set('app_1', { deploymentId: 'dep_b', egg });
    expect(running.runs('dep_a')).toBe(true);
    expect(running.runs('dep_b')).toBe(true);
    running.delete('app_2');
    expect(running.runs('dep_a')).toBe(false);
    expect(running.delete('app_2')).toBe(false);
    expect(running.runs('dep_b')).toBe(true);
    running.clear();
    expect(running.runs('dep_b')).toBe(false);
    expect(running.size).toBe(0);
  });

  it('is still a Map to everything else', () => {
    const running = new RunningEggs();
    running.set('app_1', { deploymentId: 'dep_a', egg });
    expect([...running.keys()]).toEqual(['app_1']);
    expect(running.get('app_1')?.deploymentId).toBe('dep_a');
  });
});
