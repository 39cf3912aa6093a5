/**
 * `write`: emits schema/openapi.json, the REST contract served at GET /openapi.json, from the
 * route table, the resource declarations and the GraphQL schema. `check`: fails when it differs.
 */
import { buildGatewaySchema } from '../src/graphql/schema';
import { buildOpenApi } from '../src/rest/openapi';
import { writeOrCheck } from './drift';

writeOrCheck('openapi', 'schema/openapi.json', `${JSON.stringify(buildOpenApi(buildGatewaySchema()), null, 2)}\n`, 'npm run openapi');
