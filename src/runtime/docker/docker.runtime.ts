import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import * as tar from 'tar';
import { BuildResult, CommandSpec, EggSpec, LogSink, PreviewSpec, ProvisionedResource, RunHooks, RunningEgg, Runtime } from '../runtime.port';
import { lineSplitter } from './lines';

/** The port every egg listens on, inside its container. */
export const EGG_PORT = 8080;
const PORT_KEY = `${EGG_PORT}/tcp`;

export const LABELS = { app: 'hatchery.app', deployment: 'hatchery.deployment' } as const;

/** Capabilities an ordinary server needs (files it owns, dropping to a user, a low port); all others are dropped. */
const CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETUID', 'SETGID', 'NET_BIND_SERVICE', 'KILL'];
const PIDS_LIMIT = 512;

export interface DockerRuntimeOptions {
  /** The base of the image generated for a source with a package.json and no Dockerfile. */
  nodeImage: string;
  buildTimeoutMs: number;
  healthTimeoutMs: number;
  /** Backoff between restarts of a crashed egg: doubles from `min` up to `max`. */
  restartBackoffMs?: { min: number; max: number };
}

/** The image a deployment runs: its own tag, so a rollback finds it without building again. */
export function imageTag(spec: Pick<EggSpec, 'slug' | 'deploymentId'>): string {
  return `hatchery/${spec.slug}:${spec.deploymentId.toLowerCase()}`;
}

/** What the Engine says went wrong, in one line. */
function engineError(err: unknown): string {
  const e = err as { json?: { message?: string }; reason?: string; message?: string };
  return (e.json?.message ?? e.message ?? String(err)).trim();
}

/**
 * Builds and runs eggs as Docker containers (dockerode, the Engine API; never the CLI).
 *
 * A build makes the deployment's image (from its source, or the image it names) and then starts
 * its container, and succeeds only once the egg accepts connections on $PORT: so a deployment is
 * live only when it listens, and whatever routes to the egg switches to it only then, while the
 * previous container still serves. `run` watches the container (its log lines, its exit), and
 * creates it again where it is gone (a restart, a rollback). A gateway that stops detaches: the
 * containers keep running, and the next runner adopts them by label.
 *
 * Crons, volumes and previews still run on `fallback` (the simulated runtime); they move onto
 * Docker next.
 */
export class DockerRuntime implements Runtime {
  constructor(
    private readonly docker: Docker,
    private readonly opts: DockerRuntimeOptions,
    private readonly fallback: Pick<Runtime, 'runCommand' | 'volumeUsage' | 'eraseVolume' | 'provisionPreview' | 'teardownPreview'>,
  ) {}

  runCommand(spec: CommandSpec, signal: AbortSignal): Promise<{ exitCode: number }> {
    return this.fallback.runCommand(spec, signal);
  }
  volumeUsage(slug: string): Promise<number> {
    return this.fallback.volumeUsage(slug);
  }
  eraseVolume(slug: string): Promise<void> {
    return this.fallback.eraseVolume(slug);
  }
  provisionPreview(spec: PreviewSpec): Promise<ProvisionedResource[]> {
    return this.fallback.provisionPreview(spec);
  }
  teardownPreview(resources: ProvisionedResource[]): Promise<void> {
    return this.fallback.teardownPreview(resources);
  }

  async build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult> {
    const timeout = AbortSignal.timeout(this.opts.buildTimeoutMs);
    const both = AbortSignal.any([signal, timeout]);
    try {
      const made = spec.image ? await this.useImage(spec, spec.image, log) : await this.buildSource(spec, log, both);
      if (!made.ok) return made;
      both.throwIfAborted();
      log('build', `==> Starting ${spec.slug}; waiting for it to listen on port ${EGG_PORT}`);
      const container = await this.startFresh(spec);
      const listening = await this.untilListening(container, both);
      if (!listening.ok) {
        await container.remove({ force: true }).catch(() => undefined);
        log('build', `error: ${listening.reason}`);
        return listening;
      }
      log('build', `==> ${spec.slug} is listening`);
      return { ok: true };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timeout.aborted) {
        await this.removeContainers(spec.deploymentId);
        const reason = `build timed out after ${this.opts.buildTimeoutMs} ms`;
        log('build', `error: ${reason}`);
        return { ok: false, reason };
      }
      throw err;
    }
  }

  /** An image named by the deploy: present on the host, or pulled; then tagged as the deployment's. */
  private async useImage(spec: EggSpec, ref: string, log: LogSink): Promise<BuildResult> {
    const image = this.docker.getImage(ref);
    try {
      await image.inspect();
      log('build', `==> Using image ${ref}`);
    } catch {
      log('build', `==> Pulling image ${ref}`);
      try {
        const stream = await this.docker.pull(ref);
        await new Promise<void>((resolve, reject) => this.docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())));
      } catch (err) {
        const reason = `image ${ref} is not on the Docker host and could not be pulled: ${engineError(err)}`;
        log('build', `error: ${reason}`);
        return { ok: false, reason };
      }
    }
    const [repo, tag] = imageTag(spec).split(':');
    await image.tag({ repo, tag });
    return { ok: true };
  }

  /** Builds the source: its Dockerfile as it is, else a Node image for its package.json. */
  private async buildSource(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult> {
    if (!spec.source) {
      const reason = 'nothing to build: the deployment has no source and no image';
      log('build', `error: ${reason}`);
      return { ok: false, reason };
    }
    const dir = await mkdtemp(path.join(tmpdir(), 'hatchery-build-'));
    try {
      await pipeline(await spec.source(), tar.x({ cwd: dir, strict: true }), { signal });
      const top = new Set(await readdir(dir));
      if (!top.has('Dockerfile')) {
        if (!top.has('package.json')) {
          const reason = 'the source has neither a Dockerfile nor a package.json at its root';
          log('build', `error: ${reason}`);
          return { ok: false, reason };
        }
        log('build', `==> No Dockerfile: building a Node image from ${this.opts.nodeImage}`);
        await writeFile(path.join(dir, 'Dockerfile'), nodeDockerfile(this.opts.nodeImage, top.has('package-lock.json')));
      }
      const context = tar.c({ cwd: dir, portable: true }, [...(await readdir(dir))]);
      const stream = await this.docker.buildImage(context as unknown as NodeJS.ReadableStream, {
        t: imageTag(spec),
        labels: { [LABELS.app]: spec.slug, [LABELS.deployment]: spec.deploymentId },
        forcerm: true,
        abortSignal: signal,
      });
      const outcome: { failure: string | null } = { failure: null };
      const split = lineSplitter((line) => log('build', line));
      await new Promise<void>((resolve, reject) =>
        this.docker.modem.followProgress(
          stream,
          (err: Error | null) => (err ? reject(err) : resolve()),
          (event: { stream?: string; error?: string; errorDetail?: { message?: string } }) => {
            if (event.stream) split.push(event.stream);
            if (event.error) outcome.failure = (event.errorDetail?.message ?? event.error).trim();
          },
        ),
      ).catch((err: unknown) => {
        if (signal.aborted) throw err;
        outcome.failure ??= engineError(err);
      });
      split.end();
      if (outcome.failure) {
        log('build', `error: ${outcome.failure}`);
        return { ok: false, reason: outcome.failure };
      }
      return { ok: true };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async createContainer(spec: EggSpec): Promise<Docker.Container> {
    await this.removeContainers(spec.deploymentId);
    return this.docker.createContainer({
      name: `hatchery-${spec.slug}-${spec.deploymentId.toLowerCase()}`,
      Image: imageTag(spec),
      Env: [
        ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
        `PORT=${EGG_PORT}`,
        `HATCHERY_APP=${spec.slug}`,
        `HATCHERY_DEPLOYMENT_ID=${spec.deploymentId}`,
      ],
      Labels: { [LABELS.app]: spec.slug, [LABELS.deployment]: spec.deploymentId },
      ExposedPorts: { [PORT_KEY]: {} },
      HostConfig: {
        PortBindings: { [PORT_KEY]: [{ HostIp: '127.0.0.1', HostPort: '' }] },
        Memory: spec.memoryMb * 1024 * 1024,
        MemorySwap: spec.memoryMb * 1024 * 1024,
        SecurityOpt: ['no-new-privileges'],
        CapDrop: ['ALL'],
        CapAdd: CAPABILITIES,
        PidsLimit: PIDS_LIMIT,
        RestartPolicy: { Name: 'no' },
        Init: true,
      },
    });
  }

  /** The deployment's containers, running or not. */
  async containersOf(deploymentId: string): Promise<Docker.ContainerInfo[]> {
    return this.docker.listContainers({ all: true, filters: { label: [`${LABELS.deployment}=${deploymentId}`] } });
  }

  private async removeContainers(deploymentId: string): Promise<void> {
    for (const c of await this.containersOf(deploymentId))
      await this.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
  }

  /**
   * Waits until the egg answers on its published port: some bytes back for a request, or a
   * connection it holds open. A port nothing listens on behind is refused or closed at once.
   */
  private async untilListening(container: Docker.Container, signal: AbortSignal): Promise<BuildResult> {
    const deadline = Date.now() + this.opts.healthTimeoutMs;
    while (Date.now() < deadline) {
      signal.throwIfAborted();
      const info = await container.inspect();
      if (!info.State.Running) return { ok: false, reason: `exited with code ${info.State.ExitCode} before listening on port ${EGG_PORT}` };
      const port = publishedPort(info);
      if (port && (await answers(port, Math.min(1000, deadline - Date.now())))) return { ok: true };
      await sleep(100, undefined, { signal });
    }
    return { ok: false, reason: `did not listen on port ${EGG_PORT}` };
  }

  run(spec: EggSpec, log: LogSink, _hooks: RunHooks): RunningEgg {
    return new WatchedContainer(this, this.docker, spec, log, this.opts.restartBackoffMs ?? { min: 1000, max: 60_000 });
  }

  /** Creates the deployment's container from its image and starts it (restart, rollback, adoption of one that is gone). */
  async startFresh(spec: EggSpec): Promise<Docker.Container> {
    const container = await this.createContainer(spec);
    await container.start();
    return container;
  }
}

/** A Dockerfile for a Node source without one. */
export function nodeDockerfile(base: string, hasLock: boolean): string {
  return [
    `FROM ${base}`,
    'WORKDIR /app',
    'COPY . .',
    hasLock ? 'RUN npm ci' : 'RUN npm install',
    'RUN npm run build --if-present',
    `ENV PORT=${EGG_PORT}`,
    `EXPOSE ${EGG_PORT}`,
    'CMD ["npm", "start"]',
    '',
  ].join('\n');
}

/** The host port (on 127.0.0.1) a container's $PORT is published on, from its inspect output. */
function publishedPort(info: Docker.ContainerInspectInfo): number | null {
  const port = info.NetworkSettings.Ports?.[PORT_KEY]?.[0]?.HostPort;
  return port ? Number(port) : null;
}

/** Whether something answers on 127.0.0.1:`port` within `ms`. */
function answers(port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: '127.0.0.1', port });
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    // Held open this long without being closed: a server accepted it.
    const timer = setTimeout(() => finish(true), Math.max(50, ms));
    socket.once('connect', () => socket.write('HEAD / HTTP/1.0\r\nHost: hatchery-health\r\n\r\n'));
    socket.once('data', () => finish(true));
    socket.once('error', () => finish(false));
    socket.once('close', () => finish(false));
  });
}

/** One running deployment's container, watched: its log lines go to `log`; when it exits on its own, it is started again after a backoff. */
class WatchedContainer implements RunningEgg {
  private ended = false;
  private logs: NodeJS.ReadableStream | null = null;
  /** The container's timestamp of the newest line passed on, in nanoseconds. */
  private lastSeenNs = 0n;

  constructor(
    private readonly runtime: DockerRuntime,
    private readonly docker: Docker,
    private readonly spec: EggSpec,
    private readonly log: LogSink,
    private readonly backoff: { min: number; max: number },
  ) {
    void this.watch().catch((err: unknown) => {
      if (!this.ended) this.log('runtime', `==> hatchery lost track of ${spec.slug}: ${engineError(err)}`);
    });
  }

  private async container(): Promise<{ container: Docker.Container; adopted: boolean }> {
    const [found] = await this.runtime.containersOf(this.spec.deploymentId);
    if (found && found.State === 'running') return { container: this.docker.getContainer(found.Id), adopted: true };
    return { container: await this.runtime.startFresh(this.spec), adopted: false };
  }

  private async watch(): Promise<void> {
    let { container } = await this.container();
    let delay = this.backoff.min;
    // Lines from the container's start, the first time: the build started it and no one read them yet.
    let since = 0;
    while (!this.ended) {
      const startedAt = Date.now();
      await this.follow(container, since);
      const exit = (await container.wait()) as { StatusCode: number };
      if (this.ended) return;
      this.log('runtime', `==> ${this.spec.slug} exited with code ${exit.StatusCode}; restarting in ${Math.round(delay / 1000)} s`);
      await sleep(delay);
      if (this.ended) return;
      delay = Date.now() - startedAt > 60_000 ? this.backoff.min : Math.min(this.backoff.max, delay * 2);
      since = Number(this.lastSeenNs / 1_000_000_000n);
      try {
        await container.start();
      } catch {
        ({ container } = await this.container());
      }
    }
  }

  private async follow(container: Docker.Container, since: number): Promise<void> {
    const stream = await container.logs({ follow: true, stdout: true, stderr: true, timestamps: true, since });
    this.logs = stream;
    const emit = (raw: string) => {
      const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z ?(.*)$/.exec(raw);
      if (!m) return this.log('runtime', raw);
      // Following again after a restart starts at a whole second: lines already seen come again.
      const ns = BigInt(Date.parse(`${m[1]}Z`)) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
      if (ns <= this.lastSeenNs) return;
      this.lastSeenNs = ns;
      this.log('runtime', m[3], new Date(Number(ns / 1_000_000n)));
    };
    const out = new PassThrough();
    const err = new PassThrough();
    const a = lineSplitter(emit);
    const b = lineSplitter(emit);
    out.on('data', (c: Buffer) => a.push(c.toString('utf8')));
    err.on('data', (c: Buffer) => b.push(c.toString('utf8')));
    this.docker.modem.demuxStream(stream, out, err);
    stream.on('end', () => {
      a.end();
      b.end();
    });
  }

  private unwatch(): void {
    this.ended = true;
    (this.logs as { destroy?: () => void } | null)?.destroy?.();
  }

  stop(): void {
    this.unwatch();
    void this.runtime
      .containersOf(this.spec.deploymentId)
      .then((found) => Promise.all(found.map((c) => this.docker.getContainer(c.Id).remove({ force: true }))))
      .catch(() => undefined);
  }

  detach(): void {
    this.unwatch();
  }
}
