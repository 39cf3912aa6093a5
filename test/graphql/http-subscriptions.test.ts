import { makeUser } from '../support/factories';
import { startGateway, TestGateway } from '../support/gateway';

describe('subscriptions over HTTP', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('are refused with a 400 that says where subscriptions run', async () => {
    const user = await makeUser(t.gateway);
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: JSON.stringify({ query: 'subscription { deploymentStatus(id: "dep_x") { id } }' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
    expect(body.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(body.errors[0].message).toMatch(/graphql-ws/);
  });
});
