import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeEggWithPeople } from '../support/factories';
import { expectProblem } from './problem';
import { keepsMemory, storedMemory } from '../resources/helpers';
import { keepsVolume, storedVolume, volumeRows } from '../volumes/helpers';
import { eggResources, PreviewRuntime, statusAfterBuild, storedPreviews } from '../previews/helpers';

/**
 * CONTRACT.md's body refusals on the write endpoints of resources, volumes and previews:
 * 400 bad_request for a body that is not valid JSON or not a JSON object, 415
 * unsupported_media_type for a body that is not application/json; nothing is stored.
 */
const NOT_OBJECTS: Array<[string, string]> = [
  ['a JSON array', '[1]'],
  ['a JSON number', '384'],
  ['a JSON string', '"x"'],
  ['JSON null', 'null'],
  ['JSON true', 'true'],
];
const MALFORMED: Array<[string, (json: string) => string]> = [
  ['cut-off JSON', (json) => json.slice(0, -2)],
  ['a trailing comma', (json) => json.replace(/}$/, ',}')],
  ['single quotes', (json) => json.replace(/"/g, "'")],
  ['an empty body', () => ''],
];
const NOT_JSON: Array<[string, (json: string, form: string) => string]> = [
  ['text/plain', (json) => json],
  ['application/x-www-form-urlencoded', (_json, form) => form],
  [
    'multipart/form-data; boundary=x',
    (_json, form) => `--x\r\nContent-Disposition: form-data; name="${form.split('=')[0]}"\r\n\r\n${form.split('=')[1]}\r\n--x--\r\n`,
  ],
  ['application/xml', () => '<body/>'],
];

describe('body refusals on the write endpoints', () => {
  let t: TestGateway;
  let sim: PreviewRuntime;

  beforeAll(async () => {
    t = await startGateway({}, { runtime: (ds) => (sim = new PreviewRuntime(ds)) });
  });
  afterAll(() => t.stop());

  describe('PATCH /apps/:slug/resources', () => {
    const valid = JSON.stringify({ memory_mb: 384 });
    let egg: Awaited<ReturnType<typeof makeEggWithPeople>>;
    const patch = (body: string, headers: Record<string, string> = {}) => rest(t.url, egg.owner.token, 'PATCH', `/apps/${egg.slug}/resources`, body, headers);

    beforeAll(async () => {
      egg = await makeEggWithPeople(t);
      expect((await rest(t.url, egg.owner.token, 'PATCH', `/apps/${egg.slug}/resources`, { memory_mb: 300 })).status).toBe(200);
    });

    it.each(NOT_OBJECTS)('%s is a 400 bad_request, the override unchanged', async (_name, body) => {
      expectProblem(await keepsMemory(t, egg.slug, () => patch(body)), 400, 'bad_request');
    });

    it.each(MALFORMED)('malformed JSON (%s) is a 400 bad_request, the override unchanged', async (_name, broken) => {
      expectProblem(await keepsMemory(t, egg.slug, () => patch(broken(valid))), 400, 'bad_request');
    });

    it.each(NOT_JSON)('a body sent as %s is a 415 unsupported_media_type, the override unchanged', async (type, body) => {
      expectProblem(await keepsMemory(t, egg.slug, () => patch(body(valid, 'memory_mb=384'), { 'content-type': type })), 415, 'unsupported_media_type');
    });

    it('the same body as application/json (with a charset) is accepted: the refusals were about the body alone', async () => {
      const res = await patch(valid, { 'content-type': 'application/json; charset=utf-8' });
      expect(res.status).toBe(200);
      expect(await storedMemory(t, egg.slug)).toBe(384);
      expect((await rest(t.url, egg.owner.token, 'PATCH', `/apps/${egg.slug}/resources`, { memory_mb: 300 })).status).toBe(200);
    });
  });

  describe('POST /v1/apps/:slug/volume', () => {
    const valid = JSON.stringify({ size_mb: 500 });
    let withVolume: Awaited<ReturnType<typeof makeEggWithPeople>>;
    let without: Awaited<ReturnType<typeof makeEggWithPeople>>;
    const post = (egg: { owner: { token: string }; slug: string }, body: string, headers: Record<string, string> = {}) =>
      rest(t.url, egg.owner.token, 'POST', `/v1/apps/${egg.slug}/volume`, body, headers);

    beforeAll(async () => {
      withVolume = await makeEggWithPeople(t);
      expect((await post(withVolume, JSON.stringify({ size_mb: 300 }))).status).toBe(201);
      without = await makeEggWithPeople(t);
    });

    /** The refused request neither resizes the egg's volume nor creates one on the egg without. */
    async function refused(body: string, headers: Record<string, string> = {}) {
      const onVolume = await keepsVolume(t, withVolume.slug, () => post(withVolume, body, headers));
      const onNone = await post(without, body, headers);
      expect(await volumeRows(t, without.slug)).toBe(0);
      expect((await storedVolume(t, withVolume.slug))?.size_mb).toBe(300);
      return [onVolume, onNone];
    }

    it.each(NOT_OBJECTS)('%s is a 400 bad_request, nothing provisioned or resized', async (_name, body) => {
      for (const res of await refused(body)) expectProblem(res, 400, 'bad_request');
    });

    it.each(MALFORMED)('malformed JSON (%s) is a 400 bad_request, nothing provisioned or resized', async (_name, broken) => {
      for (const res of await refused(broken(valid))) expectProblem(res, 400, 'bad_request');
    });

    it.each(NOT_JSON)('a body sent as %s is a 415 unsupported_media_type, nothing provisioned or resized', async (type, body) => {
      for (const res of await refused(body(valid, 'size_mb=500'), { 'content-type': type })) expectProblem(res, 415, 'unsupported_media_type');
    });
  });

  describe('POST /v1/apps/:slug/previews', () => {
    const valid = JSON.stringify({ pr_number: 2 });
    let egg: Awaited<ReturnType<typeof makeEggWithPeople>>;
    const post = (body: string, headers: Record<string, string> = {}) => rest(t.url, egg.owner.token, 'POST', `/v1/apps/${egg.slug}/previews`, body, headers);

    beforeAll(async () => {
      egg = await makeEggWithPeople(t);
      expect((await post(JSON.stringify({ pr_number: 1 }))).status).toBe(201);
      expect(await statusAfterBuild(t, sim, egg.owner.token, egg.slug, 1)).toBe('ready');
    });

    /** The refused request creates no preview and does not update (redeploy, extend) the existing one. */
    async function changesNothing<T>(request: () => Promise<T>): Promise<T> {
      const snapshot = async () => ({
        previews: await storedPreviews(t, egg.slug),
        resources: await eggResources(t, egg.slug),
        runtime: sim.externalIds(),
        builds: [sim.builds(`${egg.slug}-pr-1`), sim.builds(`${egg.slug}-pr-2`)],
      });
      const before = await snapshot();
      const result = await request();
      expect(await snapshot()).toEqual(before);
      expect(before.previews.map((p) => p.pr_number)).toEqual([1]);
      return result;
    }

    it.each(NOT_OBJECTS)('%s is a 400 bad_request, nothing created', async (_name, body) => {
      expectProblem(await changesNothing(() => post(body)), 400, 'bad_request');
    });

    it.each(MALFORMED)('malformed JSON (%s) is a 400 bad_request, nothing created', async (_name, broken) => {
      expectProblem(await changesNothing(() => post(broken(valid))), 400, 'bad_request');
    });

    it.each(NOT_JSON)('a body sent as %s is a 415 unsupported_media_type, nothing created', async (type, body) => {
      expectProblem(await changesNothing(() => post(body(valid, 'pr_number=2'), { 'content-type': type })), 415, 'unsupported_media_type');
    });

    it('a text/plain body naming the existing pr is a 415 too, the preview not redeployed or extended', async () => {
      const res = await changesNothing(() => post(JSON.stringify({ pr_number: 1 }), { 'content-type': 'text/plain' }));
      expectProblem(res, 415, 'unsupported_media_type');
    });
  });
});
