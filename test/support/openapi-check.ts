import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { buildOpenApi, JsonSchema, OpenApiDocument } from '../../src/rest/openapi';

/**
 * Holds every REST response the suite receives to the OpenAPI document (GET /openapi.json, made
 * by the same generator): the status must be documented for the operation, the content type and
 * required headers must match, and the body must validate against the response's schema.
 */
interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  responses: Record<string, JsonSchema>;
}

const DOC_ID = 'https://hatchery.run/openapi.json';
const PROBLEM = { $ref: '#/components/schemas/Problem' };

class ResponseChecker {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true });
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: OpenApiDocument) {
    addFormats(this.ajv);
    this.ajv.addKeyword('components');
    this.ajv.addSchema({ $id: DOC_ID, components: doc.components }, DOC_ID);
    for (const [template, methods] of Object.entries(doc.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`);
      for (const [method, op] of Object.entries(methods)) {
        this.operations.push({ method: method.toUpperCase(), template, pattern, responses: op.responses });
        // Compiled up front, once per test file, so a later check adds next to no time to a request.
        for (const response of Object.values(op.responses)) {
          for (const media of Object.values((this.resolve(response).content ?? {}) as Record<string, { schema: JsonSchema }>)) this.validator(media.schema);
        }
      }
    }
    this.validator(PROBLEM);
  }

  private resolve(obj: JsonSchema): JsonSchema {
    const target = obj.$ref;
    if (typeof target !== 'string') return obj;
    const [, section, name] = /^#\/components\/(\w+)\/(.+)$/.exec(target) ?? [];
    const found = (this.doc.components as Record<string, Record<string, JsonSchema>>)[section]?.[name];
    if (!found) throw new Error(`OpenAPI document: dangling $ref ${target}`);
    return this.resolve(found);
  }

  private validator(schema: JsonSchema): ValidateFunction {
    const key = JSON.stringify(schema);
    let validate = this.validators.get(key);
    if (!validate) {
      // Component references resolve against the document registered under DOC_ID.
      const rebased = JSON.parse(key.replaceAll('"#/components/', `"${DOC_ID}#/components/`));
      validate = this.ajv.compile(rebased);
      this.validators.set(key, validate);
    }
    return validate;
  }

  check(method: string, url: string, status: number, headers: Headers, text: string, body: unknown): void {
    const path = url.split('?')[0];
    const op = this.operations.find((o) => o.method === method.toUpperCase() && o.pattern.test(path));
    const where = `${method.toUpperCase()} ${url} → ${status}`;
    const mediaType = (headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    const fail = (why: string): never => {
      throw new Error(
        `REST response does not match the OpenAPI document: ${where} (${op ? `operation ${op.method} ${op.template}` : 'no operation'}): ${why}\nbody: ${text.slice(0, 2000)}`,
      );
    };

    if (!op) {
      // Not a documented endpoint (health checks, unknown paths, the payment webhook): problem bodies still follow the one schema.
      if (mediaType === 'application/problem+json') this.validate(PROBLEM, body, fail);
      return;
    }
    const declared = op.responses[String(status)];
    if (!declared) fail(`status ${status} is not documented; documented: ${Object.keys(op.responses).join(', ')}`);
    const response = this.resolve(declared);
    for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, JsonSchema>)) {
      if (this.resolve(header).required && !headers.has(name)) fail(`the required header ${name} is missing`);
    }
    const content = response.content as Record<string, { schema: JsonSchema }> | undefined;
    if (!content) {
      if (text !== '') fail('the response documents no body, but one came');
      return;
    }
    const media = content[mediaType];
    if (!media) fail(`content type "${mediaType}" is not documented; documented: ${Object.keys(content).join(', ')}`);
    this.validate(media.schema, body, fail);
  }

  private validate(schema: JsonSchema, body: unknown, fail: (why: string) => never): void {
    const validate = this.validator(schema);
    if (!validate(body)) {
      fail((validate.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`).join('; '));
    }
  }
}

let checker: ResponseChecker | undefined;

/** Throws when a REST response is not what the OpenAPI document promises. */
export function checkRestResponse(method: string, path: string, status: number, headers: Headers, text: string, body: unknown): void {
  checker ??= new ResponseChecker(buildOpenApi(buildGatewaySchema()));
  checker.check(method, path, status, headers, text, body);
}
