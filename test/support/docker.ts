import { existsSync } from 'node:fs';
import { DEFAULT_SOCKET } from '../../src/runtime/docker/engine';

export { docker, ensureNodeImage, NODE_IMAGE, sourceArchive } from './node-image';

/**
 * Docker tests run where an Engine is (CI starts one: .ci/run). Elsewhere they are skipped, but
 * never in CI: there a missing Engine fails them.
 */
export const dockerHere = existsSync(DEFAULT_SOCKET) || Boolean(process.env.DOCKER_HOST) || process.env.CI === 'true';
export const describeDocker = dockerHere ? describe : describe.skip;
