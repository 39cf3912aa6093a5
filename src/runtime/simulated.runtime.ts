import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { SimVolumeUsage } from './sim-volume-usage.entity';
import {
  BuildResult,
  CommandResult,
  CommandSpec,
  EggSpec,
  Endpoint,
  LogSink,
  PreviewSpec,
  ProvisionedResource,
  RunHooks,
  RunningEgg,
  Runtime,
} from './runtime.port';

const BUILD_STEPS = [
  (s: EggSpec) => `==> Build started for ${s.slug} (${s.deploymentId})`,
  () => '==> Installing dependencies',
  () => '==> Compiling',
  () => '==> Creating image',
];

/**
 * A runtime without infrastructure: a build takes `buildMs` and writes a few lines; a deploy
 * whose env holds HATCHERY_SIMULATE=fail fails. A running egg serves a request every
 * `runtimeLogMs`. With `sleepAfterMs`, an egg whose tier sleeps goes to sleep after running that
 * long, and the next request wakes it with the memory the gateway says it has then.
 */
export class SimulatedRuntime implements Runtime {
  readonly kind = 'simulated' as const;

  constructor(
    private readonly ds: DataSource,
    private readonly opts: { buildMs: number; runtimeLogMs: number; sleepAfterMs?: number; commandMs?: number },
  ) {}

  /** Nothing listens: a simulated egg serves no real request. */
  endpoints(_deploymentId: string): Promise<Endpoint[]> {
    return Promise.resolve([]);
  }

  wake(_spec: EggSpec, _signal: AbortSignal): Promise<Endpoint | null> {
    return Promise.resolve(null);
  }

  /** Nothing outlives a simulated deployment. */
  discard(_spec: Pick<EggSpec, 'slug' | 'deploymentId'>): Promise<void> {
    return Promise.resolve();
  }

  /** `exit N` exits with N; any other command exits 0. */
  async runCommand(spec: CommandSpec, signal: AbortSignal): Promise<CommandResult> {
    const stop = new AbortController();
    this.runningRuns.set(spec.runId, stop);
    try {
      await sleep(this.opts.commandMs ?? 0, undefined, { signal: AbortSignal.any([signal, stop.signal]) });
    } finally {
      this.runningRuns.delete(spec.runId);
    }
    const m = /^\s*exit\s+(\d{1,3})\s*$/.exec(spec.command);
    return { exitCode: m ? Number(m[1]) % 256 : 0 };
  }

  /** Commands running in this process, by run id. */
  protected readonly runningRuns = new Map<string, AbortController>();

  runningCommands(): Promise<string[]> {
    return Promise.resolve([...this.runningRuns.keys()]);
  }

  stopCommand(runId: string): Promise<void> {
    this.runningRuns.get(runId)?.abort();
    return Promise.resolve();
  }

  async volumeUsage(slug: string): Promise<number> {
    return (await this.ds.getRepository(SimVolumeUsage).findOneBy({ slug }))?.usedMb ?? 0;
  }

  async eraseVolume(slug: string): Promise<void> {
    await this.ds.getRepository(SimVolumeUsage).delete({ slug });
  }

  /** The preview resources that exist, by external id: what teardown must leave empty. */
  readonly previewResources = new Map<string, ProvisionedResource>();

  provisionPreview(spec: PreviewSpec): Promise<ProvisionedResource[]> {
    const made: ProvisionedResource[] = [
      { kind: 'route', name: spec.host, externalId: `sim-route-${spec.previewId}` },
      { kind: 'database', name: `${spec.slug.replace(/-/g, '_')}_db`, externalId: `sim-db-${spec.previewId}` },
      { kind: 'addon', name: `${spec.slug}-redis`, externalId: `sim-addon-${spec.previewId}` },
    ];
    for (const r of made) this.previewResources.set(r.externalId, r);
    return Promise.resolve(made);
  }

  teardownPreview(resources: ProvisionedResource[]): Promise<void> {
    for (const r of resources) this.previewResources.delete(r.externalId);
    return Promise.resolve();
  }

  /** A simulated preview is built, but nothing of it listens. */
  previewEndpoint(): Promise<Endpoint | null> {
    return Promise.resolve(null);
  }

  servePreviews(): Promise<void> {
    return Promise.resolve();
  }

  /** What `admin set-volume-usage` sets. */
  static async setVolumeUsage(ds: DataSource, slug: string, usedMb: number): Promise<void> {
    await ds.getRepository(SimVolumeUsage).upsert({ slug, usedMb }, ['slug']);
  }

  async build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult> {
    const step = this.opts.buildMs / (BUILD_STEPS.length + 1);
    for (const line of BUILD_STEPS) {
      log('build', line(spec));
      await sleep(step, undefined, { signal });
    }
    await sleep(step, undefined, { signal });
    if (spec.env.HATCHERY_SIMULATE === 'fail') {
      const reason = 'build failed: HATCHERY_SIMULATE=fail';
      log('build', `error: ${reason}`);
      return { ok: false, reason };
    }
    log('build', '==> Build succeeded');
    return { ok: true };
  }

  run(spec: EggSpec, log: LogSink, hooks: RunHooks): RunningEgg {
    log('runtime', `Starting ${spec.slug} with ${spec.memoryMb} MB of memory`);
    log('runtime', 'Listening on port 8080', undefined, 'stdout', 1);
    const sleepAfter = spec.sleeps ? (this.opts.sleepAfterMs ?? 0) : 0;
    let awakeSince = Date.now();
    let state: 'awake' | 'asleep' | 'waking' = spec.asleep ? 'asleep' : 'awake';
    let n = 0;
    const request = async () => {
      if (state === 'waking') return;
      if (state === 'asleep') {
        state = 'waking';
        const memoryMb = await hooks.wake();
        if (memoryMb === null || stopped) return;
        log('runtime', `Waking ${spec.slug} with ${memoryMb} MB of memory`);
        state = 'awake';
        awakeSince = Date.now();
      }
      log('runtime', `GET /healthz 200 ${1 + (n++ % 7)}ms`, undefined, 'stdout', 1);
      if (sleepAfter > 0 && Date.now() - awakeSince >= sleepAfter) {
        state = 'asleep';
        await hooks.asleep(new Date());
        log('runtime', `Sleeping: ${spec.slug} was idle`);
      }
    };
    let stopped = false;
    const timer = setInterval(() => void request().catch(() => undefined), this.opts.runtimeLogMs);
    timer.unref();
    const stop = () => {
      stopped = true;
      clearInterval(timer);
    };
    return { stop, detach: stop };
  }
}
