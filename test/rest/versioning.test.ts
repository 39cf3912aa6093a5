import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { expectProblem, writesNothing } from './problem';

describe('API-Version', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  it('without the header, the latest release 2026-09-01 is used and named in the response', async () => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments');
    expect(res.status).toBe(200);
    expect(res.headers.get('api-version')).toBe('2026-09-01');
  });

  it('echoes a pinned release 2026-01-15', async () => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments', undefined, { 'API-Version': '2026-01-15' });
    expect(res.status).toBe(200);
    expect(res.headers.get('api-version')).toBe('2026-01-15');
  });

  it('echoes an explicit 2026-09-01', async () => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments', undefined, { 'API-Version': '2026-09-01' });
    expect(res.status).toBe(200);
    expect(res.headers.get('api-version')).toBe('2026-09-01');
  });

  it.each(['2020-01-01', 'latest', '2026-09-02'])('answers 400 bad_request for API-Version %j', async (version) => {
    const res = await rest(t.url, owner.token, 'GET', '/deployments', undefined, { 'API-Version': version });
    expectProblem(res, 400, 'bad_request');
  });

  it('rejects an unknown API-Version on POST /deploy before deploying anything', async () => {
    const res = await writesNothing(t, () => rest(t.url, owner.token, 'POST', '/deploy', { project: slug }, { 'API-Version': '2020-01-01' }));
    expectProblem(res, 400, 'bad_request');
  });
});
