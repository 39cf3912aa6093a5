import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { DockerRuntime, EGG_PORT, imageTag, LABELS, volumeName } from '../../src/runtime/docker/docker.runtime';
import { mayEnterNamespaces, netnsOf, pidOfContainer } from '../../src/runtime/namespaces';
import { EggSpec, LogSink } from '../../src/runtime/runtime.port';
import { describeDocker, docker, ensureNodeImage, sourceArchive } from '../support/docker';

/** An egg: answers `hello <version>`, logs each request, exits with 3 on /crash. */
const server = (version: string) => `
const http = require('http');
console.log('booting ${version}');
http.createServer((req, res) => {
  console.log('request ' + req.url);
  if (req.url === '/crash') { console.error('crashing on purpose'); process.exit(3); }
  res.end('hello ${version} ' + process.env.HATCHERY_APP + '\\n');
}).listen(Number(process.env.PORT), () => console.log('listening ${version}'));
`;

type Line = { type: string; message: string; at?: Date; replica?: number };

describeDocker('the Docker runtime (real Engine)', () => {
  let d: Docker;
  let base: string;
  let runtime: DockerRuntime;
  let n = 0;
  const made: string[] = [];

  const spec = (files: Record<string, string> | null, over: Partial<EggSpec> = {}): EggSpec => {
    const id = `dep_rt${Date.now().toString(36)}${n++}`;
    made.push(id);
    const archive = files ? sourceArchive(files) : null;
    return {
      deploymentId: id,
      slug: 'rt-egg',
      env: { GREETING: 'hi' },
      memoryMb: 96,
      sleeps: false,
      source: archive ? async () => Readable.from(await archive) : null,
      ...over,
    };
  };
  const hooks = {
    wake: () => Promise.resolve(96),
    asleep: () => Promise.resolve(true),
    lastActive: () => Promise.resolve(null),
    lastLineAt: () => Promise.resolve(null),
  };
  const sink = () => {
    const lines: Line[] = [];
    const waiters: Array<{ match: (l: Line) => boolean; resolve: (l: Line) => void }> = [];
    const log: LogSink = (type, message, at, _stream, replica) => {
      const line = { type, message, at, replica };
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (w.match(line)) w.resolve(line);
        else waiters.push(w);
      }
    };
    const until = (match: (l: Line) => boolean) =>
      new Promise<Line>((resolve) => {
        const seen = lines.find(match);
        if (seen) resolve(seen);
        else waiters.push({ match, resolve });
      });
    return { lines, log, until };
  };
  const containers = (id: string) => d.listContainers({ all: true, filters: { label: [`${LABELS.deployment}=${id}`] } });
  const port = async (id: string) => {
    const [c] = await containers(id);
    return c.Ports.find((p) => p.PrivatePort === EGG_PORT)!;
  };
  const get = async (id: string, urlPath = '/') => {
    const p = await port(id);
    return fetch(`http://127.0.0.1:${p.PublicPort}${urlPath}`).then((r) => r.text());
  };
  // Unique to this run, so the first build of a source really runs its steps.
  const nonce = Date.now().toString(36);
  const dockerfile = (v: string) => ({
    Dockerfile: `FROM ${base}\nCOPY server.js /app/server.js\nRUN echo built ${v} ${nonce}\nCMD ["node", "/app/server.js"]\n`,
    'server.js': server(v),
  });

  beforeAll(async () => {
    d = docker();
    base = await ensureNodeImage(d);
    runtime = new DockerRuntime(d, { nodeImage: base, buildTimeoutMs: 120_000, healthTimeoutMs: 15_000, restartBackoffMs: { min: 200, max: 400 } });
  }, 120_000);

  afterAll(async () => {
    for (const id of made) for (const c of await containers(id)) await d.getContainer(c.Id).remove({ force: true });
  });

  it('volume usage is measured even while other gateways measure on the same Engine (it runs one `system df` at a time)', async () => {
    // Eight gateways' runtimes asking at once: the Engine refuses all but one at first.
    const gateways = Array.from(
      { length: 8 },
      () => new DockerRuntime(d, { nodeImage: base, buildTimeoutMs: 1000, healthTimeoutMs: 1000, volumeUsageMaxAgeMs: 0 }),
    );
    const used = await Promise.all(gateways.map((g) => g.volumeUsage('no-such-egg')));
    expect(used).toEqual(Array(8).fill(0));
  }, 60_000);

  it('builds a source with a Dockerfile, streams the step output, and succeeds only once the egg listens', async () => {
    const s = spec(dockerfile('v1'));
    const build = sink();
    const result = await runtime.build(s, build.log, new AbortController().signal);
    expect(result).toEqual({ ok: true });
    const messages = build.lines.map((l) => l.message);
    expect(messages).toContain(`built v1 ${nonce}`);
    expect(messages.some((m) => /^Step 1\/\d+ : FROM /.test(m))).toBe(true);
    expect(messages.every((m) => !m.startsWith('{'))).toBe(true); // step output, not JSON
    expect(messages.at(-1)).toBe('==> rt-egg is listening');
    // Listening already: the router could switch to it now.
    expect(await get(s.deploymentId)).toBe('hello v1 rt-egg\n');

    const [c] = await containers(s.deploymentId);
    expect(c.Labels).toMatchObject({ [LABELS.app]: 'rt-egg', [LABELS.deployment]: s.deploymentId });
    expect(c.Image).toBe(imageTag(s));
    const info = await d.getContainer(c.Id).inspect();
    expect(info.HostConfig.Memory).toBe(96 * 1024 * 1024);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(info.HostConfig.PidsLimit).toBeGreaterThan(0);
    expect(info.HostConfig.PortBindings[`${EGG_PORT}/tcp`]).toEqual([{ HostIp: '127.0.0.1', HostPort: '' }]);
    expect(info.Config.Env).toEqual(expect.arrayContaining(['GREETING=hi', 'PORT=8080', 'HATCHERY_APP=rt-egg', `HATCHERY_DEPLOYMENT_ID=${s.deploymentId}`]));
    expect(info.HostConfig.Binds ?? []).not.toEqual(expect.arrayContaining([expect.stringContaining('docker.sock')]));

    // run() adopts the container the build started (no second one); its lines arrive with the container's timestamps.
    const out = sink();
    const egg = runtime.run(s, out.log, hooks);
    try {
      const boot = await out.until((l) => l.message === 'booting v1');
      expect(boot.at).toBeInstanceOf(Date);
      // The egg's own lines name its replica (a lone one is the first); the platform's do not.
      expect(boot.replica).toBe(1);
      expect(await containers(s.deploymentId)).toHaveLength(1);
      await get(s.deploymentId, '/hello');
      await out.until((l) => l.message === 'request /hello');

      // A crash: its exit code is logged, and the egg comes back.
      await get(s.deploymentId, '/crash').catch(() => undefined);
      await out.until((l) => l.message === 'crashing on purpose');
      expect((await out.until((l) => l.message.startsWith('==> rt-egg exited with code 3; restarting'))).replica).toBeUndefined();
      const listened = await out.until((l) => l.message === 'listening v1');
      await out.until((l) => l.message === 'listening v1' && l !== listened);
      // Each line once, though following the restarted container starts at a whole second.
      expect(out.lines.filter((l) => l.message === 'booting v1')).toHaveLength(2);
      expect(out.lines.filter((l) => l.message === 'request /hello')).toHaveLength(1);
      expect(await get(s.deploymentId)).toBe('hello v1 rt-egg\n');

      // Detached (the gateway stops): the container goes on; the next run adopts it.
      egg.detach();
      expect((await containers(s.deploymentId)).map((x) => x.State)).toEqual(['running']);
      // A request while no runner follows: the adopting runner passes it on, and only what its
      // replica wrote after the newest stored line of that replica.
      expect(await get(s.deploymentId, '/gap')).toBe('hello v1 rt-egg\n');
      const stored = out.lines.filter((l) => l.replica === 1).at(-1)!.at!;
      const asked: Array<number | undefined> = [];
      const adopted = sink();
      const again = runtime.run(s, adopted.log, {
        ...hooks,
        lastLineAt: (replica) => {
          asked.push(replica);
          return Promise.resolve(stored);
        },
      });
      expect((await adopted.until((l) => l.message === 'request /gap')).replica).toBe(1);
      expect(asked).toEqual([1]);
      expect(adopted.lines.filter((l) => l.message === 'request /hello' || l.message === 'booting v1')).toEqual([]);
      expect(await get(s.deploymentId)).toBe('hello v1 rt-egg\n');
      expect(await containers(s.deploymentId)).toHaveLength(1);

      // With `namespaces` (HAProxy in front, as root), a replica also says where it listens in its own network namespace.
      expect((await runtime.endpoints(s.deploymentId))[0].inside).toBeUndefined();
      const [container] = await containers(s.deploymentId);
      const [endpoint] = await new DockerRuntime(d, { nodeImage: base, buildTimeoutMs: 1000, healthTimeoutMs: 1000, namespaces: true }).endpoints(
        s.deploymentId,
      );
      if (mayEnterNamespaces()) {
        expect(endpoint.inside).toEqual({ pid: expect.any(Number), netns: expect.any(Number), port: EGG_PORT });
        expect(pidOfContainer(endpoint.inside!.pid, container.Id)).toBe(true);
        expect(endpoint.inside!.netns).not.toBe(netnsOf(process.pid));
      }
      // Stopped for good (superseded, deleted): no container is left.
      await again.stop();
      expect(await containers(s.deploymentId)).toEqual([]);
    } finally {
      await egg.stop();
    }
  }, 120_000);

  it('an egg with a volume gets it at /data, and what it writes there outlives its container', async () => {
    const slug = `rt-vol-${nonce}`;
    const volume = volumeName(slug);
    const writer = `require('fs').appendFileSync('/data/boots', 'x'); console.log('boots ' + require('fs').readFileSync('/data/boots', 'utf8').length); require('http').createServer((q, r) => r.end('ok')).listen(process.env.PORT);`;
    const files = { Dockerfile: `FROM ${base}\nCOPY server.js /app/server.js\nCMD ["node", "/app/server.js"]\n`, 'server.js': writer };
    try {
      for (const boots of [1, 2]) {
        const s = spec(files, { slug, volume: { sizeMb: 64 } });
        const build = sink();
        expect(await runtime.build(s, build.log, new AbortController().signal)).toEqual({ ok: true });
        const [c] = await containers(s.deploymentId);
        const info = await d.getContainer(c.Id).inspect();
        expect(info.Mounts).toEqual([expect.objectContaining({ Type: 'volume', Name: volume, Destination: '/data' })]);
        const out = sink();
        const egg = runtime.run(s, out.log, hooks);
        await out.until((l) => l.message === `boots ${boots}`);
        await egg.stop();
      }
    } finally {
      await d
        .getVolume(volume)
        .remove()
        .catch(() => undefined);
    }
  }, 120_000);

  it('a build over HATCHERY_BUILD_TIMEOUT_MS fails saying so; a cancelled one rejects; neither leaves a container or an image', async () => {
    const slow = { Dockerfile: `FROM ${base}\nRUN echo slow ${nonce} && sleep 30\nCMD ["sleep", "60"]\n` };
    const quick = new DockerRuntime(d, { nodeImage: base, buildTimeoutMs: 1500, healthTimeoutMs: 1500 });
    const timed = spec(slow);
    expect(await quick.build(timed, sink().log, new AbortController().signal)).toEqual({ ok: false, reason: 'build timed out after 1500 ms' });
    expect(await containers(timed.deploymentId)).toEqual([]);
    await expect(d.getImage(imageTag(timed)).inspect()).rejects.toMatchObject({ statusCode: 404 });

    // Cancelled (the deployment was deleted) while its step runs.
    const cancelled = spec(slow);
    const abort = new AbortController();
    const out = sink();
    const building = runtime.build(cancelled, out.log, abort.signal);
    await out.until((l) => l.message.startsWith('Step 2/'));
    abort.abort(new Error('deleted'));
    await expect(building).rejects.toThrow('deleted');
    expect(await containers(cancelled.deploymentId)).toEqual([]);
    await expect(d.getImage(imageTag(cancelled)).inspect()).rejects.toMatchObject({ statusCode: 404 });
  }, 60_000);

  it('a source with neither a Dockerfile nor a package.json fails, saying so', async () => {
    const build = sink();
    const result = await runtime.build(spec({ 'README.md': 'nothing to run\n' }), build.log, new AbortController().signal);
    expect(result).toEqual({ ok: false, reason: 'the source has neither a Dockerfile nor a package.json at its root' });
  });

  it('a failing step fails the deployment with the step’s message', async () => {
    const result = await runtime.build(spec({ Dockerfile: `FROM ${base}\nRUN echo about to fail && exit 7\n` }), sink().log, new AbortController().signal);
    expect(result.ok).toBe(false);
    expect(result.ok === false && result.reason).toMatch(/returned a non-zero code: 7/);
  }, 60_000);

  it('an egg that never listens fails after the health timeout; one that exits first fails at once; neither leaves a container', async () => {
    const quick = new DockerRuntime(d, { nodeImage: base, buildTimeoutMs: 60_000, healthTimeoutMs: 1500 });
    const silent = spec({ Dockerfile: `FROM ${base}\nCMD ["sleep", "60"]\n` });
    expect(await quick.build(silent, sink().log, new AbortController().signal)).toEqual({ ok: false, reason: 'did not listen on port 8080' });
    expect(await containers(silent.deploymentId)).toEqual([]);
    const exits = spec({ Dockerfile: `FROM ${base}\nCMD ["sh", "-c", "exit 4"]\n` });
    expect(await quick.build(exits, sink().log, new AbortController().signal)).toEqual({
      ok: false,
      reason: 'exited with code 4 before listening on port 8080',
    });
    expect(await containers(exits.deploymentId)).toEqual([]);
  }, 60_000);

  it('an image named by the deploy runs without a build; one the host lacks and cannot pull fails', async () => {
    const first = spec(dockerfile('v2'));
    expect(await runtime.build(first, sink().log, new AbortController().signal)).toEqual({ ok: true });
    // The same source again: the egg's layers are reused, its steps do not run again.
    const rebuild = sink();
    expect(await runtime.build(spec(dockerfile('v2')), rebuild.log, new AbortController().signal)).toEqual({ ok: true });
    expect(rebuild.lines.map((l) => l.message)).not.toContain(`built v2 ${nonce}`);
    expect(rebuild.lines.filter((l) => l.message.includes('Using cache')).length).toBeGreaterThanOrEqual(2);
    const reuse = spec(null, { image: imageTag(first) });
    const build = sink();
    expect(await runtime.build(reuse, build.log, new AbortController().signal)).toEqual({ ok: true });
    expect(build.lines.map((l) => l.message)).toContain(`==> Using image ${imageTag(first)}`);
    expect(await get(reuse.deploymentId)).toBe('hello v2 rt-egg\n');

    // No registry answers here: a registry on a closed local port refuses at once.
    const missing = spec(null, { image: '127.0.0.1:9/nowhere/egg:1' });
    const result = await runtime.build(missing, sink().log, new AbortController().signal);
    expect(result.ok === false && result.reason).toMatch(/^image 127\.0\.0\.1:9\/nowhere\/egg:1 is not on the Docker host and could not be pulled: /);
    expect(await containers(missing.deploymentId)).toEqual([]);
  }, 120_000);
});
