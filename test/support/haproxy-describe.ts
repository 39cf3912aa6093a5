import { haproxyInstalled } from './haproxy';

/** Is HAProxy here? CI installs it (.ci/run), and must: there the edge tests are never skipped. */
export const haproxyHere = haproxyInstalled();
if (process.env.CI === 'true' && !haproxyHere) throw new Error('CI must have HAProxy for the router edge tests (.ci/run installs it)');

/** `describe` for tests that run HAProxy (HATCHERY_ROUTER_EDGE=haproxy): skipped where it is not installed, as describeDocker is without an Engine. */
export const describeHaproxy = haproxyHere ? describe : describe.skip;
