import { ERROR_HTTP } from '../http/problems';
import { JsonSchema, ref } from './json-schema';

/** The problem+json side of the OpenAPI document: the body schema and one response per error status. */

export function problemSchemas(): Record<string, JsonSchema> {
  const codes = [...new Set(Object.values(ERROR_HTTP).map((e) => e.code))];
  return {
    FieldError: {
      type: 'object',
      required: ['field', 'message'],
      properties: {
        field: { type: 'string', description: 'The body field, query parameter or header at fault, by its REST name.' },
        message: { type: 'string', minLength: 1 },
      },
      additionalProperties: false,
    },
    Problem: {
      type: 'object',
      description: 'An RFC 9457 problem details body (`application/problem+json`).',
      required: ['type', 'title', 'status', 'code', 'detail', 'request_id'],
      properties: {
        type: { type: 'string', format: 'uri', description: 'Identifies the problem type.' },
        title: { type: 'string', minLength: 1, description: 'A short summary of the problem type.' },
        status: { type: 'integer', description: 'The HTTP status.' },
        code: { type: 'string', enum: codes, description: 'A stable, machine-readable code.' },
        detail: { type: 'string', minLength: 1, description: 'What went wrong with this request.' },
        request_id: { type: 'string', description: 'The request’s id, also in the server log.' },
        errors: { type: 'array', items: ref('FieldError'), description: 'One entry per field at fault.' },
        error_id: { type: 'string', description: 'For an internal error: the id under which the server logged it.' },
      },
    },
  };
}

/** `Problem<status>` responses: each error status with the codes and titles that answer it. */
export function errorResponses(): Record<string, JsonSchema> {
  const byStatus = new Map<number, { codes: string[]; titles: string[] }>();
  for (const { status, code, title } of Object.values(ERROR_HTTP)) {
    const entry = byStatus.get(status) ?? { codes: [], titles: [] };
    entry.codes.push(code);
    entry.titles.push(title);
    byStatus.set(status, entry);
  }
  const when: Record<number, string> = {
    400: 'The body is not valid JSON or not a JSON object, `API-Version` names no release, or the request itself is malformed (a bad `Host`, a `#` in the target).',
    401: 'The bearer token is missing, malformed, unknown, expired or revoked.',
    403: 'The egg is visible to the caller, who is not its owner.',
    404: 'Nothing with this id, slug or number that the caller can see (an egg the caller cannot see is never revealed).',
    408: 'The request (headers and body) did not arrive within `HATCHERY_REQUEST_TIMEOUT_MS` (30 s by default); the connection is closed.',
    413: 'The body is larger than the gateway accepts (`HATCHERY_BODY_LIMIT_BYTES`, 1 MiB by default).',
    415: 'The body is not `application/json`.',
    422: 'A field is missing, of the wrong type, out of range or unknown (`validation_failed`), or a tier cap or count limit is reached (`limit_exceeded`). `errors` names each field.',
    429: 'Too many requests; retry after `Retry-After` seconds.',
    500: 'An unexpected error; `error_id` names it in the server log. Never a stack trace.',
    503: 'The database cannot be reached right now (`service_unavailable`); retry after `Retry-After` seconds.',
  };
  const out: Record<string, JsonSchema> = {};
  for (const [status, { codes, titles }] of byStatus) {
    const refine: JsonSchema = {
      type: 'object',
      properties: { status: { const: status }, code: codes.length === 1 ? { const: codes[0] } : { enum: codes } },
    };
    if (status === 422)
      Object.assign(refine, { required: ['errors'], properties: { ...(refine.properties as object), errors: { type: 'array', minItems: 1 } } });
    const headers: Record<string, JsonSchema> = {};
    if (status === 503) headers['Retry-After'] = { required: true, description: 'Seconds to wait.', schema: { type: 'integer', minimum: 0 } };
    if (status === 401) headers['WWW-Authenticate'] = { required: true, description: '`Bearer`', schema: { type: 'string', pattern: '^Bearer' } };
    if (status === 429) {
      headers['Retry-After'] = { required: true, description: 'Seconds to wait.', schema: { type: 'integer', minimum: 0 } };
      headers['RateLimit-Limit'] = {
        required: true,
        description: 'Requests allowed in the window (per token, or per IP without one).',
        schema: { type: 'integer', minimum: 1 },
      };
      headers['RateLimit-Remaining'] = { required: true, description: 'Requests left in the window: 0.', schema: { type: 'integer', minimum: 0 } };
      headers['RateLimit-Reset'] = { required: true, description: 'Seconds until the window ends.', schema: { type: 'integer', minimum: 1 } };
    }
    out[`Problem${status}`] = {
      description: `${titles.join(' / ')}: ${when[status] ?? ''}`.trim(),
      ...(Object.keys(headers).length ? { headers } : {}),
      content: { 'application/problem+json': { schema: { allOf: [ref('Problem'), refine] } } },
    };
  }
  return out;
}
