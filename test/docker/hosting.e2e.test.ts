import { EDGE_ENV, edgeScenarios } from './hosting-edge.scenarios';
import { hostingSuite } from './hosting.suite';

// Both in one file, so one after the other: run side by side, their crons and volumes on the one
// Engine would meet (the cron reaper looks at every cron container on it).
hostingSuite('hosting for real: Docker behind the router (end to end)', {});
hostingSuite('hosting for real with HAProxy in front of the router (HATCHERY_ROUTER_EDGE=haproxy)', EDGE_ENV, edgeScenarios);
