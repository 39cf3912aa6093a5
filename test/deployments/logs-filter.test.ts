import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { LogStream, LogType } from '../../src/modules/deployments/log-line.entity';
import { parseLogFilter } from '../../src/modules/deployments/log-filter';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { untilListening } from './helpers';

describe('the log filter language (q)', () => {
  it('words and "phrases" must all match, -word and -"phrase" must not, @type names the type', () => {
    expect(parseLogFilter('GET  "500 Internal" -healthz -"user agent" @type:runtime')).toEqual({
      include: ['GET', '500 Internal'],
      exclude: ['healthz', 'user agent'],
      type: LogType.RUNTIME,
      stream: null,
      deployment: null,
    });
    expect(parseLogFilter('   ')).toBeNull();
    expect(parseLogFilter(undefined)).toBeNull();
    expect(parseLogFilter('@type:Build')).toEqual({ include: [], exclude: [], type: LogType.BUILD, stream: null, deployment: null });
  });

  it('@stream names stdout or stderr; @deployment only on an egg’s logs', () => {
    expect(parseLogFilter('oops @stream:stderr')).toEqual({ include: ['oops'], exclude: [], type: null, stream: LogStream.STDERR, deployment: null });
    expect(parseLogFilter('@deployment:dep_01kax0000000000000000000ab @stream:STDOUT', 'app')).toEqual({
      include: [],
      exclude: [],
      type: null,
      stream: LogStream.STDOUT,
      deployment: 'dep_01kax0000000000000000000ab',
    });
    expect(() => parseLogFilter('@deployment:dep_01kax0000000000000000000ab')).toThrow(
      expect.objectContaining({ errors: [{ field: 'q', message: 'has an unknown key @deployment (known: @type, @stream) at position 1' }] }),
    );
  });

  it.each([
    ['error "unclosed', 'has a phrase with no closing quote at position 7'],
    ['a "" b', 'has an empty phrase at position 3'],
    ['a - b', 'has a lone "-" at position 3'],
    ['@colour:red', 'has an unknown key @colour (known: @type, @stream) at position 1'],
    ['a @stream:stdin', 'has @stream:stdin; @stream is stdout or stderr at position 11'],
    ['@stream:stdout @stream:stderr', 'has two different @stream at position 16'],
    ['x @type:stdout', 'has @type:stdout; @type is build or runtime at position 9'],
    ['-@type:build', 'cannot negate @type:build at position 1'],
    ['@type', 'has "@type", not @key:value at position 1'],
    ['@type:build @type:runtime', 'has two different @type at position 13'],
    ['x'.repeat(501), 'is longer than 500 characters at position 501'],
  ])('refuses a bad filter, naming the position: %#', (q, message) => {
    expect(() => parseLogFilter(q)).toThrow(expect.objectContaining({ errors: [{ field: 'q', message }] }));
  });
});

type Page = { deployment: { logs: { nodes: Array<{ message: string; type: string }> } } };
const LOGS: TypedDocumentNode<Page, Record<string, unknown>> = parse(/* GraphQL */ `
  query Logs($id: ID!, $q: String, $tail: Int) {
    deployment(id: $id) {
      logs(q: $q, tail: $tail, first: null) {
        nodes {
          message
          type
        }
      }
    }
  }
`);

type StreamPage = { deployment: { logs: { nodes: Array<{ message: string; stream: string | null; deploymentId: string }> } } };
const STREAMS: TypedDocumentNode<StreamPage, Record<string, unknown>> = parse(/* GraphQL */ `
  query Streams($id: ID!, $q: String) {
    deployment(id: $id) {
      logs(q: $q) {
        nodes {
          message
          stream
          deploymentId
        }
      }
    }
  }
`);

describe('GET /deployments/:id/logs?q= and Deployment.logs(q:)', () => {
  let t: TestGateway;
  let owner: TestUser;
  let id: string;
  const lines = ['GET /api/users 200 12ms', 'GET /healthz 200 1ms', 'POST /api/users 500 40ms', 'Error: 100% of 50_000 rows failed', 'error in C:\\path'];

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    id = (await deploy(t.url, owner, slug)).id;
    await untilListening(t.url, owner, id);
    const writer = t.gateway.services.deployments.writer;
    for (const m of lines) writer.append(id, LogType.RUNTIME, m, undefined, m.includes(' 500 ') ? 'stderr' : 'stdout');
    await writer.flush();
  });
  afterAll(() => t.stop());

  const search = async (q: string) => {
    const res = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?q=${encodeURIComponent(q)}`);
    expect(res.status).toBe(200);
    return (res.body.data as Array<{ message: string }>).map((l) => l.message);
  };

  it('matches words and phrases case-insensitively, all of them; -word excludes', async () => {
    expect(await search('get')).toEqual([lines[0], lines[1]]);
    expect(await search('get /API')).toEqual([lines[0]]);
    expect(await search('get -healthz')).toEqual([lines[0]]);
    expect(await search('"users 500"')).toEqual([lines[2]]);
    expect(await search('error -"C:"')).toEqual([lines[3]]);
  });

  it('% _ and \\ are plain characters, not wildcards', async () => {
    expect(await search('100%')).toEqual([lines[3]]);
    expect(await search('50_000')).toEqual([lines[3]]);
    expect(await search('5_0')).toEqual([]);
    expect(await search('C:\\path')).toEqual([lines[4]]);
  });

  it('@type narrows to one type; with type= too, both apply', async () => {
    expect((await search('@type:build')).length).toBeGreaterThan(0);
    expect(await search('@type:build GET')).toEqual([]);
    const both = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?type=build&q=${encodeURIComponent('@type:runtime')}`);
    expect(both.body.data).toEqual([]);
  });

  it('GraphQL takes the same q, also with tail', async () => {
    const { deployment } = await gqlOk(t.url, owner.token, LOGS, { id, q: 'GET', tail: 1 });
    expect(deployment.logs.nodes).toEqual([{ message: lines[1], type: 'RUNTIME' }]);
  });

  it('@stream narrows to the output a line came from; GraphQL says it, REST records keep their three fields', async () => {
    expect(await search('@stream:stderr')).toEqual([lines[2]]);
    expect(await search('@stream:stdout get')).toEqual([lines[0], lines[1]]);
    // The platform's own lines (the build's) have no stream: neither filter takes them.
    expect(await search('@type:build @stream:stdout')).toEqual([]);
    const res = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?q=${encodeURIComponent('@stream:stderr')}`);
    expect(Object.keys(res.body.data[0]).sort()).toEqual(['message', 'timestamp', 'type']);
    const { deployment } = await gqlOk(t.url, owner.token, STREAMS, { id, q: 'users' });
    expect(deployment.logs.nodes).toEqual([
      { message: lines[0], stream: 'STDOUT', deploymentId: id },
      { message: lines[2], stream: 'STDERR', deploymentId: id },
    ]);
  });

  it('a bad filter is a 422 naming q and the position', async () => {
    const res = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?q=${encodeURIComponent('a "b')}`);
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: 'q', message: 'has a phrase with no closing quote at position 3' }]);
  });
});
