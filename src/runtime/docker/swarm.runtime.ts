import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { BuildResult, CommandLog, CommandResult, CommandSpec, EggSpec, Endpoint, LogSink, RunHooks, RunningEgg } from '../runtime.port';
import {
  answers,
  CAPABILITIES,
  demuxLines,
  DockerRuntime,
  EGG_PORT,
  engineError,
  envOf,
  imageTag,
  LABELS,
  PIDS_LIMIT,
  removedAfter,
  replicasOf,
  volumeName,
} from './docker.runtime';
import { FollowedLines, parseTimestamped } from './lines';

const MB = 1024 * 1024;

/** The Swarm service of a deployment. */
export const serviceName = (spec: Pick<EggSpec, 'slug' | 'deploymentId'>): string => `hatchery-${spec.slug}-${spec.deploymentId.toLowerCase()}`;

/** What the Engine lists for a service (the parts read here). */
interface ServiceInfo {
  ID: string;
  Version: { Index: number };
  Spec: Docker.ServiceSpec & { Labels?: Record<string, string> };
}

/** What the Engine lists for a task (the parts read here). */
interface TaskInfo {
  ID: string;
  Slot?: number;
  DesiredState: string;
  Status: { State: string; Err?: string; ContainerStatus?: { ExitCode?: number } };
}

/** Task states after which a task never runs again. */
const ENDED = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);

/** A service's replica count, or null for a job. */
const replicasOfService = (s: ServiceInfo): number | null => s.Spec.Mode?.Replicated?.Replicas ?? null;
const memoryOfService = (s: ServiceInfo): number | null => {
  const t = s.Spec.TaskTemplate;
  return t?.Resources?.Limits?.MemoryBytes ?? null;
};

/**
 * `HATCHERY_DOCKER_MODE=swarm`: each deployment is a Swarm service instead of containers, on an
 * Engine that is a swarm manager. Its replicas are the service's; a restart (new memory or
 * replicas) is a rolling update, start-first, so a new task runs before an old one stops; the
 * Engine restarts a crashed task (restart policy `any`); the memory is `resources.limits`; an egg
 * with a volume is placed on the node that holds it (this manager); runtime lines come from the
 * service's logs, with their timestamps. A cron run is a one-shot job service.
 *
 * Ports: each task publishes 8080 in host mode on a port the Engine picks, and the router reaches
 * it at 127.0.0.1 on this node. Swarm cannot bind a published port to one address, so the port
 * listens on every interface of the node: firewall the ephemeral range (32768–60999) from outside.
 * The routing mesh is not used: it would need one fixed port per egg across the swarm, and its
 * virtual IPs are container addresses the router must not depend on.
 *
 * Previews run as plain containers on this node (as in container mode): their relays are Unix
 * sockets of this host. Swarm (API 1.41) has no `no-new-privileges` for a service's tasks; all
 * capabilities but a few are dropped and pids are limited as for containers.
 */
export class SwarmRuntime extends DockerRuntime {
  private node: Promise<string> | null = null;

  /** This manager's node id (where a volume lives); fails with what to do when the Engine is not a swarm manager. */
  localNode(): Promise<string> {
    this.node ??= this.docker.info().then((info: { Swarm?: { NodeID?: string; LocalNodeState?: string; ControlAvailable?: boolean } }) => {
      if (info.Swarm?.LocalNodeState !== 'active' || !info.Swarm.ControlAvailable || !info.Swarm.NodeID) {
        this.node = null;
        throw new Error('HATCHERY_DOCKER_MODE=swarm needs the Docker Engine to be a swarm manager: run `docker swarm init` (or join it as a manager)');
      }
      return info.Swarm.NodeID;
    });
    return this.node;
  }

  /** The service a deployment (or cron run) runs as. */
  private async serviceSpec(spec: EggSpec, replicas: number): Promise<Docker.CreateServiceOptions> {
    const labels = { [LABELS.app]: spec.slug, [LABELS.deployment]: spec.deploymentId };
    const containerSpec = {
      Image: imageTag(spec),
      Env: envOf(spec),
      Labels: labels,
      Mounts: spec.volume ? [{ Type: 'volume' as const, Source: volumeName(spec.slug), Target: '/data' }] : [],
      Init: true,
      CapabilityDrop: ['ALL'],
      CapabilityAdd: CAPABILITIES,
    };
    return {
      Name: serviceName(spec),
      Labels: labels,
      TaskTemplate: {
        ContainerSpec: containerSpec,
        Resources: { Limits: { MemoryBytes: spec.memoryMb * MB, Pids: PIDS_LIMIT } },
        RestartPolicy: { Condition: 'any', Delay: 1_000_000_000, MaxAttempts: 0 },
        // A volume is a local volume of the node that made it: the egg runs there.
        Placement: { Constraints: spec.volume ? [`node.id==${await this.localNode()}`] : [] },
      },
      Mode: { Replicated: { Replicas: replicas } },
      UpdateConfig: { Parallelism: 1, Order: 'start-first', FailureAction: 'pause' },
      EndpointSpec: { Ports: [{ Protocol: 'tcp', TargetPort: EGG_PORT, PublishMode: 'host' }] },
    };
  }

  async findService(deploymentId: string): Promise<ServiceInfo | null> {
    const found = (await this.docker.listServices({ filters: { label: [`${LABELS.deployment}=${deploymentId}`] } })) as unknown as ServiceInfo[];
    return found.find((s) => s.Spec.Labels?.[LABELS.cronRun] === undefined) ?? null;
  }

  /**
   * Creates the deployment's service, or brings it to `spec` (memory, replicas): a rolling update,
   * start-first, when `force` or anything changed. Returns whether it changed anything.
   */
  async upsertService(spec: EggSpec, opts: { replicas?: number; force?: boolean } = {}): Promise<boolean> {
    const want = await this.serviceSpec(spec, opts.replicas ?? replicasOf(spec));
    const found = await this.findService(spec.deploymentId);
    if (!found) {
      await this.docker.createService(want);
      return true;
    }
    const same = memoryOfService(found) === spec.memoryMb * MB && replicasOfService(found) === (opts.replicas ?? replicasOf(spec));
    if (same && !opts.force) return false;
    const previous = found.Spec.TaskTemplate;
    const template = want.TaskTemplate as Docker.ContainerTaskSpec;
    await this.docker.getService(found.ID).update({
      _query: { version: found.Version.Index },
      _body: { ...want, TaskTemplate: { ...template, ForceUpdate: (previous?.ForceUpdate ?? 0) + (opts.force ? 1 : 0) } },
    });
    return true;
  }

  /** The service's tasks, newest state first. */
  async tasksOf(service: string): Promise<TaskInfo[]> {
    return (await this.docker.listTasks({ filters: { service: [service] } })) as TaskInfo[];
  }

  /**
   * Waits until `replicas` of the deployment's tasks run on this node and each answers on its
   * published port; a task that fails first says why (its exit code).
   */
  async untilServiceListens(spec: EggSpec, replicas: number, signal: AbortSignal): Promise<BuildResult> {
    const deadline = Date.now() + this.opts.healthTimeoutMs;
    let lastFailure: string | null = null;
    while (Date.now() < deadline) {
      signal.throwIfAborted();
      for (const task of await this.tasksOf(serviceName(spec))) {
        if (task.Status.State === 'failed' || task.Status.State === 'rejected') {
          const code = task.Status.ContainerStatus?.ExitCode;
          lastFailure = code !== undefined ? `exited with code ${code} before listening on port ${EGG_PORT}` : (task.Status.Err ?? 'its task failed');
        }
      }
      const running = (await this.endpoints(spec.deploymentId)).slice(0, replicas);
      if (running.length >= replicas) {
        const ok = await Promise.all(running.map((e) => answers(e.port, Math.min(1000, Math.max(50, deadline - Date.now())))));
        if (ok.every(Boolean)) return { ok: true };
      }
      await sleep(200, undefined, { signal });
    }
    return { ok: false, reason: lastFailure ?? `did not listen on port ${EGG_PORT}` };
  }

  protected override async launch(spec: EggSpec, signal: AbortSignal): Promise<BuildResult> {
    if (spec.preview) return super.launch(spec, signal);
    await this.upsertService(spec);
    return this.untilServiceListens(spec, replicasOf(spec), signal);
  }

  /** The deployment's service first (its tasks stop with it), then any container left. */
  protected override async removeContainers(deploymentId: string): Promise<void> {
    await this.removeServices(`${LABELS.deployment}=${deploymentId}`);
    await super.removeContainers(deploymentId);
  }

  override run(spec: EggSpec, log: LogSink, hooks: RunHooks): RunningEgg {
    const replicas = replicasOf(spec);
    return new WatchedService(this, this.docker, spec, log, hooks, {
      sleepAfterMs: spec.sleeps && replicas === 1 ? (this.opts.sleepAfterMs ?? 0) : 0,
      drainMs: this.opts.drainMs ?? 2000,
    });
  }

  /** Scales the sleeping egg's service back to one task with the memory it has now; resolves once it listens. */
  override async wake(spec: EggSpec, signal: AbortSignal): Promise<Endpoint | null> {
    await this.upsertService(spec, { replicas: 1 });
    const listening = await this.untilServiceListens(spec, 1, signal);
    return listening.ok ? ((await this.endpoints(spec.deploymentId))[0] ?? null) : null;
  }

  /**
   * A cron run as a one-shot job service of the live deployment's image (`sh -c <command>`, its env,
   * memory and volume, placed with it); its output, with its timestamps, once it ended.
   */
  override async runCommand(spec: CommandSpec, signal: AbortSignal, log: CommandLog = () => undefined): Promise<CommandResult> {
    if (!spec.egg) return { exitCode: null, reason: `${spec.slug} has no live deployment to run the command in` };
    const base = await this.serviceSpec(spec.egg, 1);
    const template = base.TaskTemplate as Docker.ContainerTaskSpec;
    const labels = { [LABELS.app]: spec.slug, [LABELS.cronRun]: spec.runId };
    const name = `hatchery-cron-${spec.runId.toLowerCase()}`;
    const service = await this.docker.createService({
      Name: name,
      Labels: labels,
      TaskTemplate: {
        ...template,
        ContainerSpec: {
          ...template.ContainerSpec,
          Command: ['sh', '-c', spec.command],
          Env: [...envOf(spec.egg), `HATCHERY_CRON_RUN_ID=${spec.runId}`],
          Labels: labels,
        },
        RestartPolicy: { Condition: 'none' },
      },
      Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
    });
    const remove = async () => {
      await this.removeServices(`${LABELS.cronRun}=${spec.runId}`);
      await this.removeLabelled(`${LABELS.cronRun}=${spec.runId}`);
    };
    return removedAfter(signal, remove, async () => {
      let ended: TaskInfo | undefined;
      while (!ended) {
        signal.throwIfAborted();
        ended = (await this.tasksOf(name)).find((t) => ENDED.has(t.Status.State));
        if (!ended) await sleep(250, undefined, { signal });
      }
      // Not followed: a finished job's log would be followed forever.
      const output = (await service.logs({ stdout: true, stderr: true, timestamps: true, follow: false })) as unknown as Buffer;
      await demuxLines(this.docker, Readable.from([output]), (raw, from) => {
        const line = parseServiceLine(raw);
        log(line.message, line.at, from);
      });
      const code = ended.Status.ContainerStatus?.ExitCode;
      if (code !== undefined) return { exitCode: code };
      return ended.Status.State === 'complete' ? { exitCode: 0 } : { exitCode: null, reason: ended.Status.Err ?? `its task ended ${ended.Status.State}` };
    });
  }

  /** Removes the services with the label (their tasks stop with them); what is gone already is not an error. */
  private async removeServices(label: string): Promise<void> {
    for (const s of (await this.docker.listServices({ filters: { label: [label] } })) as unknown as ServiceInfo[]) {
      await this.docker
        .getService(s.ID)
        .remove()
        .catch(() => undefined);
    }
  }

  override async runningCommands(): Promise<string[]> {
    const services = (await this.docker.listServices({ filters: { label: [LABELS.cronRun] } })) as unknown as ServiceInfo[];
    return [...new Set([...services.map((s) => s.Spec.Labels![LABELS.cronRun]), ...(await super.runningCommands())])];
  }

  override async stopCommand(runId: string): Promise<void> {
    await this.removeServices(`${LABELS.cronRun}=${runId}`);
    await super.stopCommand(runId);
  }
}

/** A service log line: `<timestamp> [<details>] <message>`. */
function parseServiceLine(raw: string): { message: string; at?: Date; ns?: bigint; task?: string } {
  const line = parseTimestamped(raw);
  if (!line) return { message: raw };
  // With `details`, the task's attributes come first: `com.docker.swarm.node.id=…,…task.id=… <message>`.
  const details = /^(\S*com\.docker\.swarm\.\S*) (.*)$/s.exec(line.message);
  const task = details ? /com\.docker\.swarm\.task\.id=([^,\s]+)/.exec(details[1])?.[1] : undefined;
  return { message: details ? details[2] : line.message, at: line.at, ns: line.ns, task };
}

/**
 * A running deployment's service, watched: its log lines to `log` (each replica's marked, when
 * there are several), a task that exits logged with its code (the Engine starts another), and,
 * alone and idle, scaled to zero until a request wakes it.
 */
class WatchedService implements RunningEgg {
  private readonly watching = new AbortController();
  private readonly name: string;
  private readonly replicas: number;
  /** Tasks whose end was already logged (or had ended before this runner looked). */
  private readonly ended = new Set<string>();
  private readonly slots = new Map<string, number>();
  private asleep: boolean;
  /** Since when the egg runs (this runner started, or it woke): it is idle from then at the earliest. */
  private awakeSince = Date.now();
  private timers: NodeJS.Timeout[] = [];
  /**
   * Work under way that may create or scale the service (the start, a poll, an idle check). `stop`
   * waits for it before removing the service: a start that found the service gone a moment after
   * `stop` removed it would otherwise create it again, with nobody left to remove it.
   */
  private readonly busy = new Set<Promise<unknown>>();

  constructor(
    private readonly runtime: SwarmRuntime,
    private readonly docker: Docker,
    private readonly spec: EggSpec,
    private readonly log: LogSink,
    private readonly hooks: RunHooks,
    private readonly opts: { sleepAfterMs: number; drainMs: number },
  ) {
    this.name = serviceName(spec);
    this.replicas = replicasOf(spec);
    this.asleep = spec.asleep === true;
    void this.watch().catch((err: unknown) => {
      if (!this.stopped) this.log('runtime', `==> hatchery lost track of ${spec.slug}: ${engineError(err)}`);
    });
  }

  private get stopped(): boolean {
    return this.watching.signal.aborted;
  }

  /** Runs `work` counted as under way (see `busy`). */
  private async busily<T>(work: () => Promise<T>): Promise<T> {
    const p = work();
    const settled = p.catch(() => undefined);
    this.busy.add(settled);
    try {
      return await p;
    } finally {
      this.busy.delete(settled);
    }
  }

  private async watch(): Promise<void> {
    const stored = await this.busily(() => this.start());
    if (this.stopped) return;
    this.every(2000, () => this.pollTasks(false));
    if (this.opts.sleepAfterMs > 0) this.every(Math.min(5000, Math.max(100, this.opts.sleepAfterMs / 4)), () => this.checkIdle());
    await this.follow(FollowedLines.after(stored));
  }

  /**
   * Adopts the service as it is; brings it to the deployment's memory and replicas (a restart:
   * rolling, start-first); or creates it again if it is gone. Returns when the newest stored line is.
   */
  private async start(): Promise<Date | null> {
    if (this.stopped) return null;
    const found = await this.runtime.findService(this.spec.deploymentId);
    const asleep = this.asleep && found !== null && replicasOfService(found) === 0;
    if (!asleep && !this.stopped) {
      this.asleep = false;
      const changed = await this.runtime.upsertService(this.spec, { force: this.spec.restarting === true });
      if (changed && found) this.log('runtime', `==> Rolling ${this.spec.slug} onto ${this.spec.memoryMb} MB × ${this.replicas}, new tasks first`);
    }
    // What ended before this runner looked is not news.
    await this.pollTasks(true);
    return this.hooks.lastLineAt();
  }

  /** Follows the service's logs (again if the stream ends), passing on the lines `seen` has not. */
  private async follow(seen: FollowedLines): Promise<void> {
    while (!this.stopped) {
      const since = seen.follow();
      const stream = await this.docker.getService(this.name).logs({
        follow: true,
        stdout: true,
        stderr: true,
        timestamps: true,
        details: true,
        since,
        abortSignal: this.watching.signal,
      } as Docker.ContainerLogsOptions);
      await demuxLines(this.docker, stream, (raw, from) => {
        const line = parseServiceLine(raw);
        if (line.ns !== undefined && !seen.fresh(line.ns)) return;
        const slot = line.task ? this.slots.get(line.task) : undefined;
        // (A task this runner has not polled yet is of an unknown replica, unless there is one.)
        const replica = slot ?? (this.replicas === 1 ? 1 : 0);
        this.log('runtime', this.replicas > 1 && slot !== undefined ? `[replica ${slot}] ${line.message}` : line.message, line.at, from, replica);
      });
      if (this.stopped) return;
      // The stream ended (the Engine restarted it): again from the newest line, later ones only.
      await sleep(500, undefined, { signal: this.watching.signal }).catch(() => undefined);
    }
  }

  /** Learns the tasks' replica numbers and logs each task that exited (the Engine starts another). */
  private async pollTasks(initial: boolean): Promise<void> {
    const tasks = await this.runtime.tasksOf(this.name);
    for (const t of tasks) {
      if (t.Slot !== undefined) this.slots.set(t.ID, t.Slot);
      if (!ENDED.has(t.Status.State) || this.ended.has(t.ID)) continue;
      this.ended.add(t.ID);
      if (initial || t.Status.State !== 'failed') continue;
      const who = this.replicas > 1 && t.Slot !== undefined ? `replica ${t.Slot} of ${this.spec.slug}` : this.spec.slug;
      const code = t.Status.ContainerStatus?.ExitCode;
      this.log('runtime', `==> ${who} exited${code !== undefined ? ` with code ${code}` : ''}; Swarm starts it again`);
    }
    if (this.asleep && tasks.some((t) => t.Status.State === 'running' && t.DesiredState === 'running')) {
      this.asleep = false;
      this.awakeSince = Date.now();
      this.log('runtime', `==> Waking ${this.spec.slug}`);
    }
  }

  /** Alone and idle past the period: scaled to zero, and the gateway stops metering it. */
  private async checkIdle(): Promise<void> {
    if (this.asleep) return;
    const last = Math.max((await this.hooks.lastActive())?.getTime() ?? 0, this.awakeSince);
    if (Date.now() - last < this.opts.sleepAfterMs || this.stopped) return;
    this.asleep = true;
    await this.runtime.upsertService(this.spec, { replicas: 0 });
    if (await this.hooks.asleep(new Date(last))) {
      this.log('runtime', `==> Sleeping: ${this.spec.slug} served no request for ${Math.round((Date.now() - last) / 1000)} s`);
      return;
    }
    // A request came meanwhile: back to one.
    this.asleep = false;
    this.awakeSince = Date.now();
    await this.runtime.upsertService(this.spec, { replicas: 1 });
  }

  private every(ms: number, work: () => Promise<void>): void {
    const timer = setInterval(() => void this.busily(work).catch((err: unknown) => !this.stopped && this.log('runtime', `==> ${engineError(err)}`)), ms);
    timer.unref();
    this.timers.push(timer);
  }

  private unwatch(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.watching.abort();
  }

  async stop(opts: { drain?: boolean; restarting?: boolean } = {}): Promise<void> {
    this.unwatch();
    // A restart keeps the service: the next runner rolls it onto the new memory and replicas.
    if (opts.restarting) return;
    const remove = async () => {
      await Promise.all(this.busy);
      const found = await this.runtime.findService(this.spec.deploymentId).catch(() => null);
      if (found)
        await this.docker
          .getService(found.ID)
          .remove()
          .catch(() => undefined);
    };
    if (opts.drain) setTimeout(() => void remove(), this.opts.drainMs).unref();
    else await remove();
  }

  detach(): void {
    this.unwatch();
  }
}
