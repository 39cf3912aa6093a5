import { TestGateway } from '../support/gateway';

export interface RestResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** A deployment id that is well formed but names nothing. */
export const UNKNOWN_DEPLOYMENT_ID = 'dep_01kzzzzzzzzzzzzzzzzzzzzzzz';

/**
 * Asserts an RFC 9457 problem response: the status, `application/problem+json`, and the
 * contract's fields; every 422 also carries a non-empty `errors` list of `{field, message}`.
 */
export function expectProblem(res: RestResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json(;|$)/);
  expect(res.body).toEqual(
    expect.objectContaining({
      type: expect.any(String),
      title: expect.any(String),
      status,
      code,
      detail: expect.any(String),
    }),
  );
  expect(res.body.title.length).toBeGreaterThan(0);
  expect(res.body.detail.length).toBeGreaterThan(0);
  if (status === 422) {
    expect(Array.isArray(res.body.errors)).toBe(true);
    expect(res.body.errors.length).toBeGreaterThan(0);
    for (const e of res.body.errors) {
      expect(e).toEqual({ field: expect.any(String), message: expect.any(String) });
      expect(e.message.length).toBeGreaterThan(0);
    }
  }
}

/** Asserts a 422 `validation_failed` whose `errors` name `field`. */
export function expectInvalid(res: RestResponse, field: string): void {
  expectProblem(res, 422, 'validation_failed');
  expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
}

/** Asserts a 401 `unauthorized` problem with the `WWW-Authenticate: Bearer` challenge. */
export function expectUnauthorized(res: RestResponse): void {
  expectProblem(res, 401, 'unauthorized');
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
}

export async function countRows(t: TestGateway, table: 'deployments' | 'idempotency_keys' | 'log_lines'): Promise<number> {
  const [row] = await t.gateway.ds.query(`SELECT count(*)::int AS n FROM ${table}`);
  return row.n as number;
}

/** Runs a request that must be rejected and asserts it wrote no deployment and no idempotency key. */
export async function writesNothing<T>(t: TestGateway, request: () => Promise<T>): Promise<T> {
  const before = { deployments: await countRows(t, 'deployments'), idempotency_keys: await countRows(t, 'idempotency_keys') };
  const result = await request();
  const after = { deployments: await countRows(t, 'deployments'), idempotency_keys: await countRows(t, 'idempotency_keys') };
  expect(after).toEqual(before);
  return result;
}
