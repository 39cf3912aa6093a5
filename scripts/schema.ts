/** `write`: emits schema/schema.graphql from the resolvers. `check`: fails when it differs. */
import { printGatewaySchema } from '../src/graphql/schema';
import { writeOrCheck } from './drift';

writeOrCheck('schema', 'schema/schema.graphql', printGatewaySchema(), 'npm run schema');
