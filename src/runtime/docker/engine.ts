import Docker from 'dockerode';
import { within } from '../../timeout';

export const DEFAULT_SOCKET = '/var/run/docker.sock';

/** Where the Engine is, as a person would name it: `unix:///var/run/docker.sock`, `tcp://10.0.0.5:2375`. */
export function engineAddress(host: string | null): string {
  return host ?? `unix://${DEFAULT_SOCKET}`;
}

/** A client of the Engine at `host` (`DOCKER_HOST`'s forms: `unix:///path`, `tcp://host:port`, `http://…`); null: the default socket. */
export function dockerClient(host: string | null): Docker {
  if (!host) return new Docker({ socketPath: DEFAULT_SOCKET });
  const url = new URL(host);
  if (url.protocol === 'unix:') return new Docker({ socketPath: url.pathname });
  if (url.protocol === 'tcp:' || url.protocol === 'http:') return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: 'http' });
  throw new Error(`DOCKER_HOST must be unix:///path, tcp://host:port or http://host:port, got "${host}"`);
}

export type EngineProbe = { answers: true; version: string; apiVersion: string } | { answers: false; error: string };

/** Whether an Engine answers at all within `timeoutMs`, and which. */
export async function probeEngine(docker: Docker, timeoutMs = 1000): Promise<EngineProbe> {
  try {
    const v = await within(docker.version(), timeoutMs, () => {
      throw new Error(`no answer within ${timeoutMs} ms`);
    });
    return { answers: true, version: v.Version, apiVersion: v.ApiVersion };
  } catch (err) {
    return { answers: false, error: err instanceof Error ? err.message : String(err) };
  }
}
