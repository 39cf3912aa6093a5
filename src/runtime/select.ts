import { engineAddress, EngineProbe } from './docker/engine';

export type RuntimeMode = 'auto' | 'docker' | 'simulated';

export interface RuntimeChoice {
  kind: 'docker' | 'simulated';
  /** Why, in words for the start-up output: `HATCHERY_RUNTIME=auto and Docker Engine 20.10.24 answered at unix:///var/run/docker.sock`. */
  why: string;
}

export class RuntimeUnavailable extends Error {}

/**
 * The runtime `HATCHERY_RUNTIME` asks for: `simulated` and `docker` as they say (docker fails to
 * start when no Engine answers), `auto` docker when an Engine answers within a second, else
 * simulated. `probe` is only asked when the answer depends on it.
 */
export async function selectRuntime(mode: RuntimeMode, host: string | null, probe: () => Promise<EngineProbe>): Promise<RuntimeChoice> {
  const where = engineAddress(host);
  if (mode === 'simulated') return { kind: 'simulated', why: 'HATCHERY_RUNTIME=simulated' };
  const answer = await probe();
  if (answer.answers) return { kind: 'docker', why: `HATCHERY_RUNTIME=${mode} and Docker Engine ${answer.version} answered at ${where}` };
  if (mode === 'docker') throw new RuntimeUnavailable(`HATCHERY_RUNTIME=docker, but no Docker Engine answered at ${where} (${answer.error})`);
  return { kind: 'simulated', why: `HATCHERY_RUNTIME=auto and no Docker Engine answered at ${where} (${answer.error})` };
}
