/**
 * HAProxy in front reaches a replica in its own network namespace, on that namespace's loopback,
 * rather than through the port published for it (src/http/edge.ts `addressOf`,
 * src/runtime/namespaces.ts). Here the "replica" is a Node server in a namespace of its own
 * (`unshare -n`), and its "published port" another server on this host's loopback: which one
 * answers says which way HAProxy went. No Docker needed; root and HAProxy built with namespace
 * support are (CI has both).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { until } from '../crons/helpers';
import type Docker from 'dockerode';
import { createLogger } from '../../src/log';
import { DockerRuntime, EGG_PORT } from '../../src/runtime/docker/docker.runtime';
import { EdgeRoute, HaproxyEdge, haproxyHasNamespaces } from '../../src/http/edge';
import { linkTarget, mayEnterNamespaces, NAMED_NETNS_DIR, netnsOf, pidOfContainer } from '../../src/runtime/namespaces';
import { haproxyHere } from '../support/haproxy-describe';

const canEnter = haproxyHere && mayEnterNamespaces() && haproxyHasNamespaces('haproxy');
if (process.env.CI === 'true' && !canEnter) throw new Error('CI runs as root with a HAProxy built with namespace support: the namespace tests must run there');
const describeNamespaces = canEnter ? describe : describe.skip;

/** A server on this host's loopback that answers with its name. */
async function answering(name: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end(name));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((done) => server.close(() => done())) };
}

/** A Node server in a network namespace of its own, answering `inside` on its loopback's `port`. */
async function inNamespace(port: number): Promise<ChildProcess> {
  const code = `require('http').createServer((q, s) => s.end('inside')).listen(${port}, '127.0.0.1', () => console.log('listening'))`;
  const child = spawn('unshare', ['-n', 'sh', '-c', `ip link set lo up && exec ${JSON.stringify(process.execPath)} -e ${JSON.stringify(code)}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((done, fail) => {
    child.stdout.on('data', (b: Buffer) => b.toString().includes('listening') && done());
    child.once('exit', (c) => fail(new Error(`the namespaced server exited (${c})`)));
  });
  return child;
}

/** GET / with this Host through the edge: the body. */
async function through(url: string, host: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((done, fail) => {
    http
      .get({ host: '127.0.0.1', port: Number(port), path: '/', headers: { host }, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => done(body));
      })
      .on('error', fail);
  });
}

/** The links this edge made for namespaces (named hatchery-<edge>-<pid>). */
const linksFor = (pid: number) =>
  existsSync(NAMED_NETNS_DIR) ? readdirSync(NAMED_NETNS_DIR).filter((n) => n.startsWith('hatchery-') && n.endsWith(`-${pid}`)) : [];

describe('network namespaces, read from /proc', () => {
  it('a process’s namespace is named by its inode; a pid that runs nothing has none; a pid is no container’s unless its cgroup says so', () => {
    expect(netnsOf(process.pid)).toBe(statSync('/proc/self/ns/net').ino);
    expect(netnsOf(2 ** 30)).toBeNull();
    expect(netnsOf(0)).toBeNull();
    expect(pidOfContainer(process.pid, 'a'.repeat(64))).toBe(false);
    // Only a container id of 64 hex digits is looked for: never a substring any cgroup path has.
    expect(pidOfContainer(process.pid, '/')).toBe(false);
  });
});

describe('the Docker runtime’s endpoints with namespaces, on an Engine whose processes this host does not show', () => {
  it('gives the published port only, and does not inspect the container again for a minute', async () => {
    const id = 'f'.repeat(64);
    let inspected = 0;
    const engine = {
      listContainers: () => Promise.resolve([{ Id: id, State: 'running', Labels: {}, Ports: [{ PrivatePort: EGG_PORT, PublicPort: 45678, Type: 'tcp' }] }]),
      // A running container whose pid here is this test's own process: not the container's (its cgroup does not name it).
      getContainer: () => ({ inspect: () => (inspected++, Promise.resolve({ State: { Running: true, Pid: process.pid } })) }),
    } as unknown as Docker;
    const runtime = new DockerRuntime(engine, { nodeImage: 'x', buildTimeoutMs: 1000, healthTimeoutMs: 1000, namespaces: true });
    expect(await runtime.endpoints('dep_far')).toEqual([{ host: '127.0.0.1', port: 45678 }]);
    expect(await runtime.endpoints('dep_far')).toEqual([{ host: '127.0.0.1', port: 45678 }]);
    expect(inspected).toBe(1);
  });
});

describeNamespaces('HAProxy in front reaches a replica in its own network namespace', () => {
  let published: Awaited<ReturnType<typeof answering>>;
  let fallback: Awaited<ReturnType<typeof answering>>;
  let child: ChildProcess;
  const log = createLogger('silent');

  beforeAll(async () => {
    published = await answering('published');
    fallback = await answering('node');
    child = await inNamespace(published.port);
  });
  afterAll(async () => {
    child?.kill();
    await published?.close();
    await fallback?.close();
  });

  const start = async (namespaces: boolean) => {
    const edge = new HaproxyEdge({ bin: 'haproxy', host: '127.0.0.1', port: 0, fallbackPort: fallback.port, log, onRequest: () => undefined, namespaces });
    return { edge, url: await edge.start() };
  };
  const route = (netns: number | null): Map<string, EdgeRoute> =>
    new Map([
      [
        'egg.test',
        {
          deploymentId: 'dep_ns',
          endpoints: [{ host: '127.0.0.1', port: published.port, ...(netns === null ? {} : { inside: { pid: child.pid!, netns, port: published.port } }) }],
        },
      ],
    ]);

  it('on its loopback there, not through its published port; a namespace that is no longer the one seen is not entered; no link is left behind', async () => {
    const netns = netnsOf(child.pid!);
    expect(netns).not.toBeNull();
    expect(netns).not.toBe(netnsOf(process.pid));
    const { edge, url } = await start(true);
    try {
      await edge.apply(route(netns));
      expect(await through(url, 'egg.test')).toBe('inside');
      expect(linksFor(child.pid!)).toHaveLength(1);
      // The runtime saw another namespace under that pid (its process gone, the pid reused): the published port, and the link goes.
      await edge.apply(route(netns! + 1));
      expect(await through(url, 'egg.test')).toBe('published');
      expect(linksFor(child.pid!)).toHaveLength(0);
      // No namespace known: the published port.
      await edge.apply(route(null));
      expect(await through(url, 'egg.test')).toBe('published');
      await edge.apply(route(netns));
      expect(await through(url, 'egg.test')).toBe('inside');
    } finally {
      await edge.close();
    }
    expect(linksFor(child.pid!)).toHaveLength(0);
  }, 30_000);

  it('HAProxy killed after the replica’s process went: started again, on the published port (it would not start on a namespace it cannot open)', async () => {
    const gone = await inNamespace(published.port);
    const { edge, url } = await start(true);
    try {
      await edge.apply(
        new Map([
          [
            'egg.test',
            {
              deploymentId: 'dep_gone',
              endpoints: [{ host: '127.0.0.1', port: published.port, inside: { pid: gone.pid!, netns: netnsOf(gone.pid!)!, port: published.port } }],
            },
          ],
        ]),
      );
      expect(await through(url, 'egg.test')).toBe('inside');
      await new Promise((done) => gone.once('exit', done).kill('SIGKILL'));
      const master = Number(
        execFileSync('pgrep', ['-P', String(process.pid), '-x', 'haproxy'], { encoding: 'utf8' })
          .trim()
          .split('\n')[0],
      );
      process.kill(master, 'SIGKILL');
      // Started again within a second or so; until then the port refuses.
      const body = await until('HAProxy started again', () => through(url, 'egg.test').catch(() => null), 1_000_000);
      expect(body).toBe('published');
      expect(linksFor(gone.pid!)).toHaveLength(0);
    } finally {
      await edge.close();
    }
  }, 30_000);

  it('links left by an edge whose gateway was killed (to a process gone) are removed at start, others kept; its own link removed meanwhile is made again', async () => {
    mkdirSync(NAMED_NETNS_DIR, { recursive: true });
    const dead = path.join(NAMED_NETNS_DIR, `hatchery-deadbeef-${2 ** 30}`);
    const alive = path.join(NAMED_NETNS_DIR, `hatchery-cafecafe-${child.pid}`);
    for (const [link, pid] of [
      [dead, 2 ** 30],
      [alive, child.pid!],
    ] as const) {
      rmSync(link, { force: true });
      symlinkSync(`/proc/${pid}/ns/net`, link);
    }
    const { edge, url } = await start(true);
    try {
      expect(linkTarget(dead)).toBeNull();
      expect(linkTarget(alive)).toBe(`/proc/${child.pid}/ns/net`);
      await edge.apply(route(netnsOf(child.pid!)));
      expect(await through(url, 'egg.test')).toBe('inside');
      const [own] = linksFor(child.pid!).filter((n) => !n.startsWith('hatchery-cafecafe-'));
      rmSync(path.join(NAMED_NETNS_DIR, own));
      // Another host added: the configuration is written again, with the link made again.
      await edge.apply(
        new Map([...route(netnsOf(child.pid!)), ['other.test', { deploymentId: 'dep_other', endpoints: [{ host: '127.0.0.1', port: published.port }] }]]),
      );
      expect(await through(url, 'egg.test')).toBe('inside');
      expect(linkTarget(path.join(NAMED_NETNS_DIR, own))).toBe(`/proc/${child.pid}/ns/net`);
    } finally {
      await edge.close();
      rmSync(alive, { force: true });
    }
  }, 30_000);

  it('with namespaces off (HATCHERY_ROUTER_EDGE_NAMESPACES=off), always the published port', async () => {
    const { edge, url } = await start(false);
    try {
      await edge.apply(route(netnsOf(child.pid!)));
      expect(await through(url, 'egg.test')).toBe('published');
      expect(linksFor(child.pid!)).toHaveLength(0);
    } finally {
      await edge.close();
    }
  }, 30_000);
});
