import { hostingSuite } from './hosting.suite';

hostingSuite('hosting for real: Docker behind the router (end to end)', {});
