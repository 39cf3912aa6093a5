import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import * as tar from 'tar';
import {
  BuildResult,
  CommandResult,
  CommandSpec,
  EggSpec,
  Endpoint,
  LogSink,
  OutputStream,
  CommandLog,
  PreviewSpec,
  ProvisionedResource,
  RunHooks,
  RunningEgg,
  Runtime,
} from '../runtime.port';
import { FollowedLines, lineSplitter, parseTimestamped } from './lines';
import { netnsOf, pidOfContainer } from '../namespaces';
import { PreviewDatabases } from './preview-databases';
import { PreviewRedis } from './preview-redis';
import { PreviewRelays, RELAY_MOUNT, RelayTargets, REDIS_SOCKET } from './preview-relays';

/** The port every egg listens on, inside its container. */
export const EGG_PORT = 8080;
export const PORT_KEY = `${EGG_PORT}/tcp`;

export const LABELS = {
  app: 'hatchery.app',
  deployment: 'hatchery.deployment',
  cronRun: 'hatchery.cron-run',
  preview: 'hatchery.preview',
  /** Which of the deployment's replicas (0, 1, …); absent: 0. */
  replica: 'hatchery.replica',
} as const;

/** The replica a container is (0 for one labelled before replicas existed). */
const replicaOf = (c: Docker.ContainerInfo): number => Number(c.Labels[LABELS.replica] ?? 0);
export const replicasOf = (spec: EggSpec): number => (spec.preview ? 1 : Math.max(1, spec.replicas ?? 1));

/** Capabilities an ordinary server needs (files it owns, dropping to a user, a low port); all others are dropped. */
export const CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETUID', 'SETGID', 'NET_BIND_SERVICE', 'KILL'];
export const PIDS_LIMIT = 512;

export interface DockerRuntimeOptions {
  /** The base of the image generated for a source with a package.json and no Dockerfile. */
  nodeImage: string;
  buildTimeoutMs: number;
  healthTimeoutMs: number;
  /** A free-tier egg that served no request for this long is stopped until the next request wakes it; 0: never. */
  sleepAfterMs?: number;
  /** Backoff between restarts of a crashed egg: doubles from `min` up to `max`. */
  restartBackoffMs?: { min: number; max: number };
  /** How long a superseded container keeps running for the requests already sent to it. */
  drainMs?: number;
  /**
   * Say where each replica listens in its own network namespace (Endpoint `inside`), for a router
   * on this host that may enter it (HAProxy in front, as root).
   */
  namespaces?: boolean;
  /** How old a volume's measured size may be when read (GET volume). */
  volumeUsageMaxAgeMs?: number;
}

/** What previews get besides their container; each part is optional. */
export interface PreviewBackends {
  /** The Unix-socket relays a preview's container reaches its database and Redis through. */
  relays: PreviewRelays;
  /** A database and role per preview (HATCHERY_PREVIEW_DATABASE_URL); null: previews get none. */
  databases: PreviewDatabases | null;
  /** A Redis ACL user per preview (REDIS_URL); null: previews get none. */
  redis: PreviewRedis | null;
}

/** The Docker volume of an egg. */
export const volumeName = (slug: string): string => `hatchery-vol-${slug}`;

/** The image a deployment runs: its own tag, so a rollback finds it without building again. */
export function imageTag(spec: Pick<EggSpec, 'slug' | 'deploymentId'>): string {
  return `hatchery/${spec.slug}:${spec.deploymentId.toLowerCase()}`;
}

/** What the Engine says went wrong, in one line. */
export function engineError(err: unknown): string {
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
 * Cron runs are containers of the live deployment's image; volumes are Docker volumes. A preview
 * is a container too (of the egg's live image, or of a source built for it) with no volume and
 * none of the deploy's env: its own database and Redis user, reached through relays on Unix
 * sockets mounted at /run/hatchery (preview-relays.ts), and its own host on the router.
 */
export class DockerRuntime implements Runtime {
  readonly kind = 'docker' as const;

  constructor(
    protected readonly docker: Docker,
    protected readonly opts: DockerRuntimeOptions,
    private readonly previews: PreviewBackends | null = null,
  ) {}

  /**
   * A cron run: a container of the live deployment's image running `sh -c <command>` with its
   * env, memory and volume, removed when it ends. Its output lines go to `log`, its exit code is
   * the process's. Aborted, it is removed at once (and the promise rejects).
   */
  async runCommand(spec: CommandSpec, signal: AbortSignal, log: CommandLog = () => undefined): Promise<CommandResult> {
    if (!spec.egg) return { exitCode: null, reason: `${spec.slug} has no live deployment to run the command in` };
    const egg = spec.egg;
    const container = await this.docker.createContainer({
      name: `hatchery-cron-${spec.runId.toLowerCase()}`,
      Image: imageTag(egg),
      Cmd: ['sh', '-c', spec.command],
      Env: [...envOf(egg), `HATCHERY_CRON_RUN_ID=${spec.runId}`],
      Labels: { [LABELS.app]: spec.slug, [LABELS.cronRun]: spec.runId },
      HostConfig: { ...hostConfig(egg), RestartPolicy: { Name: 'no' } },
    });
    return removedAfter(
      signal,
      () => removed(container),
      async () => {
        const stream = await container.attach({ stream: true, stdout: true, stderr: true, logs: true });
        const ended = demuxLines(this.docker, stream, (line, from) => log(line, new Date(), from));
        await container.start();
        const exit = (await container.wait()) as { StatusCode: number };
        await ended;
        return { exitCode: exit.StatusCode };
      },
    );
  }

  async runningCommands(): Promise<string[]> {
    const found = await this.docker.listContainers({ all: true, filters: { label: [LABELS.cronRun] } });
    return found.map((c) => c.Labels[LABELS.cronRun]);
  }

  async stopCommand(runId: string): Promise<void> {
    await this.removeLabelled(`${LABELS.cronRun}=${runId}`);
  }
  private usage: { at: number; mb: Map<string, number> } | null = null;
  private measuring: Promise<Map<string, number>> | null = null;

  /**
   * Space used on the egg's Docker volume, in whole MB, as the Engine measures it on the host
   * (`system df`): one measurement of every volume serves all eggs for `volumeUsageMaxAgeMs`.
   */
  async volumeUsage(slug: string): Promise<number> {
    const maxAge = this.opts.volumeUsageMaxAgeMs ?? 60_000;
    let sizes = this.usage && Date.now() - this.usage.at <= maxAge ? this.usage.mb : null;
    if (!sizes) {
      this.measuring ??= (async () => {
        const df = (await this.diskUsage()) as { Volumes?: Array<{ Name: string; UsageData?: { Size?: number } }> };
        const mb = new Map((df.Volumes ?? []).map((v) => [v.Name, Math.ceil(Math.max(0, v.UsageData?.Size ?? 0) / (1024 * 1024))]));
        this.usage = { at: Date.now(), mb };
        return mb;
      })().finally(() => (this.measuring = null));
      sizes = await this.measuring;
    }
    return sizes.get(volumeName(slug)) ?? 0;
  }

  /**
   * The Engine's `system df`. It runs one at a time per Engine and refuses another meanwhile ("a
   * disk usage operation is already running", a 500): other gateways on the Engine, or anything
   * else calling `docker system df`, would make a measurement fail. Waited for and asked again,
   * for up to 30 s.
   */
  private async diskUsage(): Promise<unknown> {
    const deadline = Date.now() + 30_000;
    for (let wait = 25; ; wait = Math.min(wait * 2, 1000)) {
      try {
        return await this.docker.df();
      } catch (err) {
        if (!/disk usage operation is already running/.test(String((err as Error).message)) || Date.now() + wait > deadline) throw err;
        await sleep(wait);
      }
    }
  }

  /**
   * Erases the egg's volume: its data at once (through a throwaway container of the image of a
   * container that mounts it, when one does), then the volume itself, which the Engine removes
   * once no container uses it (else the next erasure or the egg's next deploy without it).
   */
  async eraseVolume(slug: string): Promise<void> {
    const name = volumeName(slug);
    const users = await this.docker.listContainers({ all: true, filters: { volume: [name] } });
    if (users.length > 0) {
      const wiper = await this.docker.createContainer({
        Image: users[0].ImageID,
        Entrypoint: ['sh', '-c', 'rm -rf /data/* /data/.[!.]* /data/..?*; true'],
        Cmd: [],
        Labels: { [LABELS.app]: slug },
        HostConfig: { Mounts: [{ Type: 'volume', Source: name, Target: '/data' }], SecurityOpt: ['no-new-privileges'] },
      });
      try {
        await wiper.start();
        const { StatusCode } = (await wiper.wait()) as { StatusCode: number };
        if (StatusCode !== 0) throw new Error(`erasing volume ${name} failed with exit code ${StatusCode}`);
      } finally {
        await removed(wiper);
      }
    }
    await this.docker
      .getVolume(name)
      .remove()
      .catch((err: { statusCode?: number }) => {
        // 404: already gone. 409: still mounted by a container; its data is erased already.
        if (err.statusCode !== 404 && err.statusCode !== 409) throw err;
      });
    this.usage?.mb.delete(name);
  }
  /**
   * A preview's route (its host, which the router resolves to its container), and where configured
   * a database with a role of its own and a Redis ACL user confined to its key prefix.
   */
  async provisionPreview(spec: PreviewSpec): Promise<ProvisionedResource[]> {
    const made: ProvisionedResource[] = [{ kind: 'route', name: spec.host, externalId: `route:${spec.previewId}` }];
    try {
      if (this.previews?.databases) {
        const name = await this.previews.databases.create(spec.previewId);
        made.push({ kind: 'database', name, externalId: `pg:${name}` });
      }
      if (this.previews?.redis) {
        const user = await this.previews.redis.create(spec.previewId);
        made.push({ kind: 'addon', name: `redis ${PreviewRedis.prefixOf(spec.previewId)}*`, externalId: `redis:${user}` });
      }
    } catch (err) {
      await this.teardownPreview(made).catch(() => undefined);
      throw err;
    }
    return made;
  }

  /** The preview's containers and image first (its connections end), then its relays, database, role and Redis user. */
  async teardownPreview(resources: ProvisionedResource[]): Promise<void> {
    for (const r of resources) {
      const [kind, id] = [r.externalId.slice(0, r.externalId.indexOf(':')), r.externalId.slice(r.externalId.indexOf(':') + 1)];
      if (kind === 'route' && id.startsWith('prv_')) {
        await this.removeContainers(id);
        for (const image of await this.docker.listImages({ filters: { label: [`${LABELS.deployment}=${id}`] } })) {
          await this.docker
            .getImage(image.Id)
            .remove()
            .catch(() => undefined);
        }
        await this.previews?.relays.stop(id, { remove: true });
      } else if (kind === 'pg') {
        if (!this.previews?.databases) throw new Error(`cannot drop the preview database ${id}: no preview database server is configured`);
        await this.previews.databases.drop(id);
      } else if (kind === 'redis') {
        if (!this.previews?.redis) throw new Error(`cannot remove the preview Redis user ${id}: REDIS_URL is not set`);
        await this.previews.redis.drop(id);
      }
    }
  }

  async previewEndpoint(previewId: string): Promise<Endpoint | null> {
    return (await this.endpoints(previewId))[0] ?? null;
  }

  /** Serves the relays of running previews whose relays no gateway on this host serves (this one restarted). */
  async servePreviews(previewIds: string[]): Promise<void> {
    if (!this.previews) return;
    for (const id of previewIds) {
      if (this.previews.relays.serves(id)) continue;
      if ((await this.containersOf(id)).length === 0) continue;
      await this.previews.relays.serve(id, this.relayTargets(id));
    }
  }

  private relayTargets(previewId: string): RelayTargets {
    const { databases, redis } = this.previews ?? {};
    const database = PreviewDatabases.nameOf(previewId);
    return {
      postgres: databases ? { ...databases.server, role: database, database } : undefined,
      redis: redis ? { ...redis.server, user: PreviewRedis.userOf(previewId), password: redis.passwordOf(previewId) } : undefined,
    };
  }

  /** What a preview's process sees: where it runs, its database and its Redis; none of the deploy's env (production secrets stay out of pull requests' code). */
  private previewEnv(spec: EggSpec & { preview: { app: string; prNumber: number } }): string[] {
    const id = spec.deploymentId;
    const env = [`PORT=${EGG_PORT}`, `HATCHERY_APP=${spec.preview.app}`, `HATCHERY_PREVIEW=${spec.preview.prNumber}`, `HATCHERY_PREVIEW_ID=${id}`];
    const { databases, redis } = this.previews ?? {};
    if (databases) {
      const name = PreviewDatabases.nameOf(id);
      const password = databases.passwordOf(id);
      env.push(
        `DATABASE_URL=postgresql://${name}:${password}@localhost/${name}?host=${RELAY_MOUNT}`,
        `PGHOST=${RELAY_MOUNT}`,
        `PGUSER=${name}`,
        `PGPASSWORD=${password}`,
        `PGDATABASE=${name}`,
      );
    }
    if (redis) {
      env.push(
        `REDIS_URL=unix://${RELAY_MOUNT}/${REDIS_SOCKET}`,
        `REDIS_SOCKET=${RELAY_MOUNT}/${REDIS_SOCKET}`,
        `REDIS_KEY_PREFIX=${PreviewRedis.prefixOf(id)}`,
      );
    }
    return env;
  }

  async build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult> {
    const timeout = AbortSignal.timeout(this.opts.buildTimeoutMs);
    const both = AbortSignal.any([signal, timeout]);
    try {
      const made = spec.image
        ? await this.useImage(spec, spec.image, log)
        : !spec.source && spec.fromDeployment
          ? await this.useImage(spec, imageTag({ slug: spec.preview?.app ?? spec.slug, deploymentId: spec.fromDeployment }), log)
          : await this.buildSource(spec, log, both);
      if (!made.ok) return made;
      both.throwIfAborted();
      if (spec.preview && this.previews) await this.previews.relays.serve(spec.deploymentId, this.relayTargets(spec.deploymentId));
      log('build', `==> Starting ${spec.slug}; waiting for it to listen on port ${EGG_PORT}`);
      const replicas = replicasOf(spec);
      const started = await this.launch(spec, both);
      if (!started.ok) {
        await this.removeContainers(spec.deploymentId);
        const reason = replicas > 1 ? `a replica ${started.reason}` : started.reason;
        log('build', `error: ${reason}`);
        return { ok: false, reason };
      }
      log('build', `==> ${spec.slug} is listening${replicas > 1 ? ` (${replicas} replicas)` : ''}`);
      return { ok: true };
    } catch (err) {
      if (signal.aborted) {
        // Cancelled (the deployment was deleted): whatever this build made goes with it.
        await this.discard(spec);
        throw signal.reason;
      }
      if (timeout.aborted) {
        await this.removeContainers(spec.deploymentId);
        const reason = `build timed out after ${this.opts.buildTimeoutMs} ms`;
        log('build', `error: ${reason}`);
        return { ok: false, reason };
      }
      throw err;
    }
  }

  /** Starts the built egg (every replica) and resolves once each listens, or with why not; what failed is removed by the caller. */
  protected async launch(spec: EggSpec, signal: AbortSignal): Promise<BuildResult> {
    const containers = await Promise.all(Array.from({ length: replicasOf(spec) }, (_, i) => this.startFresh(spec, i)));
    const results = await Promise.all(containers.map((c) => this.untilListening(c, signal)));
    return results.find((r) => !r.ok) ?? { ok: true };
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
      const reason = spec.preview
        ? `${spec.preview.app} has no live deployment to preview: deploy it first, or give the preview a source`
        : 'nothing to build: the deployment has no source and no image';
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

  private async createContainer(spec: EggSpec, replica = 0): Promise<Docker.Container> {
    for (const c of await this.containersOf(spec.deploymentId, replica)) await removed(this.docker.getContainer(c.Id));
    if (spec.preview) {
      const preview = spec.preview;
      const mounts: Docker.MountSettings[] = this.previews
        ? [{ Type: 'bind', Source: this.previews.relays.dirOf(spec.deploymentId), Target: RELAY_MOUNT, ReadOnly: true }]
        : [];
      return this.docker.createContainer({
        name: `hatchery-${spec.slug}-${spec.deploymentId.toLowerCase()}`,
        Image: imageTag(spec),
        Env: this.previewEnv({ ...spec, preview }),
        Labels: { [LABELS.app]: preview.app, [LABELS.deployment]: spec.deploymentId, [LABELS.preview]: spec.deploymentId },
        ExposedPorts: { [PORT_KEY]: {} },
        HostConfig: {
          // Never the egg's volume: preview data is never production data.
          ...hostConfig({ ...spec, volume: null }),
          Mounts: mounts,
          PortBindings: { [PORT_KEY]: [{ HostIp: '127.0.0.1', HostPort: '' }] },
          // Nothing watches a preview: the Engine restarts it when it crashes.
          RestartPolicy: { Name: 'unless-stopped' },
        },
      });
    }
    return this.docker.createContainer({
      name: `hatchery-${spec.slug}-${spec.deploymentId.toLowerCase()}${replica > 0 ? `-r${replica}` : ''}`,
      Image: imageTag(spec),
      Env: envOf(spec),
      Labels: { [LABELS.app]: spec.slug, [LABELS.deployment]: spec.deploymentId, [LABELS.replica]: String(replica) },
      ExposedPorts: { [PORT_KEY]: {} },
      HostConfig: {
        ...hostConfig(spec),
        PortBindings: { [PORT_KEY]: [{ HostIp: '127.0.0.1', HostPort: '' }] },
        RestartPolicy: { Name: 'no' },
      },
    });
  }

  /** The deployment's containers, running or not: all its replicas', or one replica's. */
  async containersOf(deploymentId: string, replica?: number): Promise<Docker.ContainerInfo[]> {
    const all = await this.docker.listContainers({ all: true, filters: { label: [`${LABELS.deployment}=${deploymentId}`] } });
    return replica === undefined ? all : all.filter((c) => replicaOf(c) === replica);
  }

  /** Removes the deployment's containers; resolves once they are gone (another removal of one may be under way). */
  protected removeContainers(deploymentId: string): Promise<void> {
    return this.removeLabelled(`${LABELS.deployment}=${deploymentId}`);
  }

  protected async removeLabelled(label: string): Promise<void> {
    for (const c of await this.docker.listContainers({ all: true, filters: { label: [label] } })) await removed(this.docker.getContainer(c.Id));
  }

  /**
   * Waits until the egg answers on its published port: some bytes back for a request, or a
   * connection it holds open. A port nothing listens on behind is refused or closed at once.
   */
  protected async untilListening(container: Docker.Container, signal: AbortSignal): Promise<BuildResult> {
    const deadline = Date.now() + this.opts.healthTimeoutMs;
    let port: number | null = null;
    let inspectedAt = 0;
    while (Date.now() < deadline) {
      signal.throwIfAborted();
      // The port is probed every 20 ms (a deploy and a wake wait for it: polling every 100 ms
      // added 50 ms to each on average), the container's state read every 100 ms or so (an exit ends the wait).
      if (port === null || Date.now() - inspectedAt >= 100) {
        const info = await container.inspect();
        inspectedAt = Date.now();
        if (!info.State.Running) return { ok: false, reason: `exited with code ${info.State.ExitCode} before listening on port ${EGG_PORT}` };
        port = publishedPort(info);
      }
      if (port && (await answers(port, Math.min(1000, deadline - Date.now())))) return { ok: true };
      await sleep(20, undefined, { signal });
    }
    return { ok: false, reason: `did not listen on port ${EGG_PORT}` };
  }

  run(spec: EggSpec, log: LogSink, hooks: RunHooks): RunningEgg {
    const replicas = replicasOf(spec);
    const opts = {
      backoff: this.opts.restartBackoffMs ?? { min: 1000, max: 60_000 },
      // Only a lone instance sleeps: waking several is not what a request waits for.
      sleepAfterMs: spec.sleeps && replicas === 1 ? (this.opts.sleepAfterMs ?? 0) : 0,
      drainMs: this.opts.drainMs ?? 2000,
    };
    if (replicas === 1) return new WatchedContainer(this, this.docker, spec, log, hooks, { ...opts, replica: 0 });
    // Each replica's lines in the one runtime log, each saying which replica wrote it.
    const watched = Array.from(
      { length: replicas },
      (_, i) =>
        new WatchedContainer(
          this,
          this.docker,
          spec,
          (type, message, at, from, replica) => log(type, `[replica ${i + 1}] ${message}`, at, from, replica),
          hooks,
          {
            ...opts,
            replica: i,
          },
        ),
    );
    return {
      stop: async (stopOpts) => {
        await Promise.all(watched.map((w) => w.stop(stopOpts)));
      },
      detach: () => watched.forEach((w) => w.detach()),
    };
  }

  /**
   * Where the deployment's replicas answer now: the running ones' published ports; with
   * `namespaces`, also where each listens in its own network namespace, if it runs on this host.
   */
  async endpoints(deploymentId: string): Promise<Endpoint[]> {
    const found: Endpoint[] = [];
    for (const c of await this.containersOf(deploymentId)) {
      if (c.State !== 'running') continue;
      const port = c.Ports.find((p) => p.PrivatePort === EGG_PORT && p.PublicPort)?.PublicPort;
      if (!port) continue;
      const inside = this.opts.namespaces ? await this.insideOf(c.Id) : null;
      found.push(inside ? { host: '127.0.0.1', port, inside } : { host: '127.0.0.1', port });
    }
    return found;
  }

  /** Host pids of running containers, by container id: read once from the Engine, checked against /proc on every use (a restart gives a new one). */
  private readonly pids = new Map<string, number>();

  /**
   * Running containers whose process was not to be seen from here (an Engine on another host), and
   * until when they are not inspected again (a minute: a process that died as it was read gets its
   * chance once restarted).
   */
  private readonly foreign = new Map<string, number>();

  /** The container's own network namespace, if its process runs on this host and can be seen from here. */
  private async insideOf(containerId: string): Promise<Endpoint['inside'] | null> {
    if ((this.foreign.get(containerId) ?? 0) > Date.now()) return null;
    let pid = this.pids.get(containerId);
    if (pid === undefined || !pidOfContainer(pid, containerId)) {
      const info = await this.docker
        .getContainer(containerId)
        .inspect()
        .catch(() => null);
      pid = info?.State.Pid ?? 0;
      // (Both bounded: the ids of removed containers go once a few hundred are known.)
      if (this.pids.size >= 512) this.pids.clear();
      if (this.foreign.size >= 512) this.foreign.clear();
      if (!pidOfContainer(pid, containerId)) {
        this.pids.delete(containerId);
        // Running with a pid this host does not show as the container's: not this host's process.
        if (info?.State.Running && pid > 0) this.foreign.set(containerId, Date.now() + 60_000);
        return null;
      }
      this.pids.set(containerId, pid);
    }
    const netns = netnsOf(pid);
    return netns === null ? null : { pid, netns, port: EGG_PORT };
  }

  /**
   * Starts the sleeping egg's container again with the memory it has now (its runner notices the
   * start and follows it again), or a new one if it is gone; resolves once the egg listens.
   */
  async wake(spec: EggSpec, signal: AbortSignal): Promise<Endpoint | null> {
    const [found] = await this.containersOf(spec.deploymentId, 0);
    let container: Docker.Container;
    if (!found) container = await this.startFresh(spec);
    else {
      container = this.docker.getContainer(found.Id);
      if (found.State !== 'running') {
        const bytes = spec.memoryMb * 1024 * 1024;
        await container.update({ Memory: bytes, MemorySwap: bytes });
        await container.start().catch(notModified);
      }
    }
    const listening = await this.untilListening(container, signal);
    return listening.ok ? ((await this.endpoints(spec.deploymentId))[0] ?? null) : null;
  }

  async discard(spec: Pick<EggSpec, 'slug' | 'deploymentId'>): Promise<void> {
    await this.removeContainers(spec.deploymentId);
    // Refused while a container (a cron run, a preview) still uses it; only the tag goes when another deployment's tag shares it.
    await this.docker
      .getImage(imageTag(spec))
      .remove()
      .catch(() => undefined);
  }

  /** Creates the deployment's container from its image and starts it (restart, rollback, adoption of one that is gone). */
  async startFresh(spec: EggSpec, replica = 0): Promise<Docker.Container> {
    const container = await this.createContainer(spec, replica);
    await container.start();
    return container;
  }
}

/** What an egg's process sees: the deploy's env, then what Hatchery sets (which wins). */
export function envOf(spec: EggSpec): string[] {
  return [
    ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    `PORT=${EGG_PORT}`,
    `HATCHERY_APP=${spec.slug}`,
    `HATCHERY_DEPLOYMENT_ID=${spec.deploymentId}`,
  ];
}

/** The limits and protections every container of an egg runs with: its memory, its volume at /data, no new privileges, few capabilities, a pids limit. */
function hostConfig(spec: EggSpec): Docker.HostConfig {
  return {
    Memory: spec.memoryMb * 1024 * 1024,
    MemorySwap: spec.memoryMb * 1024 * 1024,
    SecurityOpt: ['no-new-privileges'],
    CapDrop: ['ALL'],
    CapAdd: CAPABILITIES,
    PidsLimit: PIDS_LIMIT,
    Init: true,
    Mounts: spec.volume ? [{ Type: 'volume', Source: volumeName(spec.slug), Target: '/data' }] : [],
  };
}

/**
 * Splits a container's multiplexed stdout and stderr into lines, each to `emit` (a last partial
 * line too); resolves once the stream has ended.
 */
export function demuxLines(docker: Docker, stream: NodeJS.ReadableStream, emit: (line: string, from: OutputStream) => void): Promise<void> {
  const out = new PassThrough();
  const err = new PassThrough();
  const a = lineSplitter((line) => emit(line, 'stdout'));
  const b = lineSplitter((line) => emit(line, 'stderr'));
  // Decoded per stream, not per chunk: a character the Engine's frames split comes whole.
  out.setEncoding('utf8');
  err.setEncoding('utf8');
  out.on('data', (text: string) => a.push(text));
  err.on('data', (text: string) => b.push(text));
  docker.modem.demuxStream(stream, out, err);
  return new Promise<void>((resolve) => {
    const end = () => {
      a.end();
      b.end();
      resolve();
    };
    stream.once('end', end);
    stream.once('close', end);
    stream.once('error', end);
  });
}

/**
 * Runs a command's `work` and then `remove`s what runs it, whatever happened. Aborted, it is
 * removed at once and the promise rejects with the abort's reason, even if `work` finished.
 */
export async function removedAfter<T>(signal: AbortSignal, remove: () => Promise<void>, work: () => Promise<T>): Promise<T> {
  const onAbort = () => void remove();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    signal.throwIfAborted();
    const result = await work();
    signal.throwIfAborted();
    return result;
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    throw e;
  } finally {
    signal.removeEventListener('abort', onAbort);
    await remove();
  }
}

/**
 * Removes the container (killing it) and resolves once it is gone, whoever else is removing it
 * meanwhile. A removal the Engine refuses (a busy Engine may fail to kill a container in time) is
 * tried again, and a wait for another caller's removal is bounded, so this never waits for ever
 * on a container that stays: after `withinMs` it throws, naming the container and the last error.
 */
export async function removed(container: Docker.Container, withinMs = REMOVE_WITHIN_MS): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const failure = await container.remove({ force: true }).then(
      () => null,
      (err: { statusCode?: number; message?: string }) => err,
    );
    if (failure === null || failure.statusCode === 404) return;
    const pause = Math.max(1, Math.min(failure.statusCode === 409 ? 2000 : 250, deadline - Date.now()));
    // 409: another removal is under way: wait for it a moment (it may fail too). Else a moment before trying again.
    if (failure.statusCode === 409) await container.wait({ condition: 'removed', abortSignal: AbortSignal.timeout(pause) }).catch(() => undefined);
    else await new Promise((r) => setTimeout(r, pause));
    const gone = await container.inspect().then(
      () => false,
      (err: { statusCode?: number }) => err.statusCode === 404,
    );
    if (gone) return;
    if (Date.now() >= deadline)
      throw new Error(`container ${container.id} could not be removed within ${withinMs} ms: ${failure.message ?? JSON.stringify(failure)}`);
  }
}

/** How long `removed` keeps trying. */
const REMOVE_WITHIN_MS = 60_000;

/** Starting a container that already runs answers 304: not an error here. */
export function notModified(err: unknown): void {
  if ((err as { statusCode?: number }).statusCode !== 304) throw err;
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
export function answers(port: number, ms: number): Promise<boolean> {
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

/** One running deployment's container, watched: its log lines go to `log`; when it exits on its own, it is started again after a backoff; idle, it may sleep. */
class WatchedContainer implements RunningEgg {
  /** Aborted when this runner stops watching: every request it has open to the Engine (logs, wait, events) ends with it. */
  private readonly watching = new AbortController();
  /** This runner stopped the container because the egg was idle; a request starts it again. */
  private asleep: boolean;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly runtime: DockerRuntime,
    private readonly docker: Docker,
    private readonly spec: EggSpec,
    private readonly log: LogSink,
    private readonly hooks: RunHooks,
    private readonly opts: { backoff: { min: number; max: number }; sleepAfterMs: number; drainMs: number; replica: number },
  ) {
    this.asleep = spec.asleep === true;
    void this.watch().catch((err: unknown) => {
      if (!this.ended) this.log('runtime', `==> hatchery lost track of ${spec.slug}: ${engineError(err)}`);
    });
  }

  private get ended(): boolean {
    return this.watching.signal.aborted;
  }

  /** The replica this runner watches, as its lines name it (from 1). */
  private get replica(): number {
    return this.opts.replica + 1;
  }

  /** The deployment's container: the one running (adopted), else (unless asleep) a new one. */
  private async container(): Promise<Docker.Container | null> {
    const found = await this.runtime.containersOf(this.spec.deploymentId, this.opts.replica);
    const running = found.find((c) => c.State === 'running');
    if (running) {
      this.asleep = false;
      return this.docker.getContainer(running.Id);
    }
    if (this.asleep && found.length > 0) return null;
    this.asleep = false;
    return this.runtime.startFresh(this.spec, this.opts.replica);
  }

  private async watch(): Promise<void> {
    let container = await this.container();
    let delay = this.opts.backoff.min;
    // Lines from the container's start, the first time (the build started it and no one read them
    // yet), except those stored already: an adopted container's lines up to its last runner's detach.
    const seen = FollowedLines.after(await this.hooks.lastLineAt(this.replica));
    while (!this.ended) {
      if (!container) {
        container = await this.untilWoken();
        if (!container) return;
        const info = await container.inspect();
        this.log('runtime', `==> Waking ${this.spec.slug} with ${Math.round((info.HostConfig.Memory ?? 0) / 1024 / 1024)} MB of memory`);
      }
      const startedAt = Date.now();
      await this.follow(container, seen);
      this.watchIdle(container);
      const exit = (await container.wait({ abortSignal: this.watching.signal })) as { StatusCode: number };
      this.unwatchIdle();
      if (this.ended) return;
      if (this.asleep) {
        container = null;
        continue;
      }
      this.log('runtime', `==> ${this.spec.slug} exited with code ${exit.StatusCode}; restarting in ${Math.round(delay / 1000)} s`);
      await sleep(delay, undefined, { signal: this.watching.signal });
      delay = Date.now() - startedAt > 60_000 ? this.opts.backoff.min : Math.min(this.opts.backoff.max, delay * 2);
      try {
        await container.start();
      } catch {
        container = await this.container();
      }
    }
  }

  /**
   * Checks, a few times per sleep period, when the egg last served a request; past the period it
   * stops the container and tells the gateway, which stops metering it. A request that arrived
   * meanwhile keeps it awake (the container starts again).
   */
  private watchIdle(container: Docker.Container): void {
    const after = this.opts.sleepAfterMs;
    if (after <= 0) return;
    const awakeSince = Date.now();
    const check = async () => {
      const last = (await this.hooks.lastActive())?.getTime() ?? 0;
      const idleSince = Math.max(last, awakeSince);
      if (this.ended || this.idleTimer === null || Date.now() - idleSince < after) return;
      this.unwatchIdle();
      this.asleep = true;
      await container.stop({ t: 5 }).catch(notModified);
      if (await this.hooks.asleep(new Date(idleSince))) {
        this.log('runtime', `==> Sleeping: ${this.spec.slug} served no request for ${Math.round((Date.now() - idleSince) / 1000)} s`);
        return;
      }
      // A request came while it stopped: the router waits for it to listen again.
      await container.start().catch(notModified);
    };
    this.idleTimer = setInterval(
      () => void check().catch((err: unknown) => this.log('runtime', `==> idle check failed: ${engineError(err)}`)),
      Math.min(5000, Math.max(100, after / 4)),
    );
    this.idleTimer.unref();
  }

  private unwatchIdle(): void {
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.idleTimer = null;
  }

  /** Waits until someone (a request through a router) starts the sleeping egg's container; null once stopped. */
  private async untilWoken(): Promise<Docker.Container | null> {
    const events = await this.docker.getEvents({
      filters: { type: ['container'], event: ['start'], label: [`${LABELS.deployment}=${this.spec.deploymentId}`] },
      abortSignal: this.watching.signal,
    });
    try {
      while (!this.ended) {
        const found = await this.runtime.containersOf(this.spec.deploymentId, this.opts.replica);
        const running = found.find((c) => c.State === 'running');
        if (running) {
          this.asleep = false;
          return this.docker.getContainer(running.Id);
        }
        if (found.length === 0) {
          // Removed while asleep (by hand): the next request finds nothing to wake, so run it again.
          this.asleep = false;
          return this.runtime.startFresh(this.spec, this.opts.replica);
        }
        // The next start event, or a look every few seconds should an event be missed.
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            events.off('data', done);
            events.off('close', done);
            resolve();
          };
          const timer = setTimeout(done, 5000);
          events.once('data', done);
          events.once('close', done);
        });
      }
      return null;
    } finally {
      (events as { destroy?: () => void }).destroy?.();
    }
  }

  /** Follows the container's log, passing on the lines `seen` has not (across this runner's follows). */
  private async follow(container: Docker.Container, seen: FollowedLines): Promise<void> {
    const since = seen.follow();
    const stream = await container.logs({ follow: true, stdout: true, stderr: true, timestamps: true, since, abortSignal: this.watching.signal });
    const emit = (raw: string, from: OutputStream) => {
      const line = parseTimestamped(raw);
      if (!line) return this.log('runtime', raw, undefined, from, this.replica);
      // Following again starts at a whole second: lines already passed on come again.
      if (seen.fresh(line.ns)) this.log('runtime', line.message, line.at, from, this.replica);
    };
    void demuxLines(this.docker, stream, emit);
  }

  private unwatch(): void {
    this.unwatchIdle();
    this.watching.abort();
  }

  async stop(opts: { drain?: boolean } = {}): Promise<void> {
    this.unwatch();
    // Replica 0 also takes whatever replica is left beyond the ones running now (the egg had more before).
    const all = await this.runtime.containersOf(this.spec.deploymentId).catch(() => []);
    const found = all.filter((c) => replicaOf(c) === this.opts.replica || (this.opts.replica === 0 && replicaOf(c) >= replicasOf(this.spec)));
    const remove = () => Promise.all(found.map((c) => removed(this.docker.getContainer(c.Id))));
    // Superseded: the router already sends new requests to its successor; those in flight finish first.
    if (opts.drain) setTimeout(() => void remove(), this.opts.drainMs).unref();
    else await remove();
  }

  detach(): void {
    this.unwatch();
  }
}
