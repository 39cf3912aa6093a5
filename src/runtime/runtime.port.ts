/** The port to whatever builds and runs eggs. The simulated adapter is the default. */
export interface EggSpec {
  deploymentId: string;
  slug: string;
  env: Record<string, string>;
  memoryMb: number;
  /** How many instances to run behind the router (1 when absent); an egg sleeps only with one. */
  replicas?: number;
  /** Whether the egg's tier lets the runtime put it to sleep when idle. */
  sleeps: boolean;
  /** An image to run instead of building one (the Docker host has it or can pull it). */
  image?: string | null;
  /** The egg's source (a .tar.gz), read from storage when a build needs it. */
  source?: (() => Promise<NodeJS.ReadableStream>) | null;
  /** The egg's persistent volume, mounted at /data; null: it has none. */
  volume?: { sizeMb: number } | null;
  /** The egg was put to sleep and no request has woken it since. */
  asleep?: boolean;
  /** `run` restarts it (restartApp): whatever already runs of it starts again, even with nothing changed. */
  restarting?: boolean;
  /**
   * Runs the image this deployment of the egg was built into instead of building one (a preview
   * of the egg's latest deployment, when no source is given).
   */
  fromDeployment?: string | null;
  /**
   * Set for a preview environment: `deploymentId` is the preview's id and `slug` its name
   * (`<egg>-pr-<n>`). Its container gets no volume and none of the deploy's env, only its own
   * database and Redis (what `provisionPreview` made), and restarts by itself; nothing runs it.
   */
  preview?: { app: string; prNumber: number } | null;
}

/** Where the router reaches an egg: a port on the Docker host's loopback. */
export interface Endpoint {
  host: string;
  port: number;
  /**
   * Where the same replica listens in its own network namespace, when it runs on this host and
   * the runtime was asked to say (`namespaces`): a process of it by host pid, that namespace's
   * identity when it was read (src/runtime/namespaces.ts `netnsOf`), and the egg's port there. A
   * router that may enter the namespace connects to 127.0.0.1:port in it, skipping the published
   * port's proxy; it checks the identity first, as the process may be gone.
   */
  inside?: { pid: number; netns: number; port: number };
}

export interface RunHooks {
  /**
   * Called when the runtime wakes a sleeping egg: records the wake and returns the memory to
   * run with (the egg's effective memory at that moment), or null if the deployment is gone.
   */
  wake(): Promise<number | null>;
  /** The runtime put the egg to sleep: its energy stops being metered until it wakes. False: a request came meanwhile, keep it awake. */
  asleep(idleSince: Date): Promise<boolean>;
  /** When the egg last served a request (or started), for a runtime that puts idle eggs to sleep. */
  lastActive(): Promise<Date | null>;
  /**
   * When the newest stored line the egg itself wrote was written (of replica `replica`, from 1; or
   * of any replica): a runner adopting a running egg passes on only what is newer.
   */
  lastLineAt(replica?: number): Promise<Date | null>;
}

/** Which of the process's outputs a line came from, where the runtime knows it. */
export type OutputStream = 'stdout' | 'stderr';

/**
 * A log line; `at` is when the egg wrote it, where the runtime knows (a container's timestamps);
 * `stream` the output it came from and `replica` the egg's replica that wrote it (from 1; 0 when
 * the runtime cannot tell which), both absent for the platform's own lines.
 */
export type LogSink = (type: 'build' | 'runtime', message: string, at?: Date, stream?: OutputStream, replica?: number) => void;

/** A command's output line (see `runCommand`). */
export type CommandLog = (line: string, at?: Date, stream?: OutputStream) => void;

export type BuildResult = { ok: true } | { ok: false; reason: string };

export interface RunningEgg {
  /**
   * Stops the egg for good: it was deleted, or is to start again (restart). With `drain`, it was
   * superseded: requests already sent to it get a moment to finish first. With `restarting`, the
   * next `run` of the same deployment follows at once: a runtime that can roll it over in place
   * (a Swarm service) keeps it running for that.
   */
  stop(opts?: { drain?: boolean; restarting?: boolean }): void | Promise<void>;
  /**
   * Stops watching the egg but leaves it running, for the next runner to adopt (this gateway is
   * shutting down or lost its lease). Where nothing outlives the process, the same as stop.
   */
  detach(): void;
}

export interface PreviewSpec {
  previewId: string;
  slug: string;
  host: string;
}

export interface ProvisionedResource {
  kind: 'route' | 'database' | 'addon';
  name: string;
  externalId: string;
}

export interface CommandSpec {
  slug: string;
  command: string;
  /** The run, which names what runs it (a container's label), so it can be found and stopped from any gateway. */
  runId: string;
  /** The egg's live deployment, whose image, env, memory and volume the command runs with; null: none is live. */
  egg: EggSpec | null;
}

/** How a command ended: its exit code, or null with why it never ran (no live deployment). */
export type CommandResult = { exitCode: number; reason?: undefined } | { exitCode: null; reason: string };

export interface Runtime {
  /** Which adapter: only `docker` builds sources and serves requests. */
  readonly kind: 'docker' | 'simulated';
  /** Where the deployment's replicas answer now; none when nothing of it listens (not running, asleep, simulated). */
  endpoints(deploymentId: string): Promise<Endpoint[]>;
  /** Starts a sleeping egg again with `spec.memoryMb`; resolves once it listens, with where (null: it cannot run here). */
  wake(spec: EggSpec, signal: AbortSignal): Promise<Endpoint | null>;
  /** Removes what a deleted deployment left on the host: its containers, and its image unless something else uses it. */
  discard(spec: Pick<EggSpec, 'slug' | 'deploymentId'>): Promise<void>;
  /**
   * Runs a one-off command in the egg's environment (a cron run), its output lines to `log`;
   * resolves with its exit code. Rejects with an AbortError when `signal` aborts (it is stopped).
   */
  runCommand(spec: CommandSpec, signal: AbortSignal, log?: CommandLog): Promise<CommandResult>;
  /** Commands still running on the host (run ids), whoever started them. */
  runningCommands(): Promise<string[]>;
  /** Stops a command wherever it runs; stopping one that ended is not an error. */
  stopCommand(runId: string): Promise<void>;
  /** Builds the egg; rejects with an AbortError when `signal` aborts. */
  build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult>;
  /** Space in MB used on the egg's volume. */
  volumeUsage(slug: string): Promise<number>;
  /** Erases the egg's volume data, irreversibly. */
  eraseVolume(slug: string): Promise<void>;
  /** Creates what a preview environment owns: its routes, database and addons. */
  provisionPreview(spec: PreviewSpec): Promise<ProvisionedResource[]>;
  /** Removes them, and whatever runs for the preview; removing what is already gone is not an error. */
  teardownPreview(resources: ProvisionedResource[]): Promise<void>;
  /** Where the preview answers now; null when nothing of it listens. */
  previewEndpoint(previewId: string): Promise<Endpoint | null>;
  /** Makes sure what these running previews reach from their containers is served from this host (after a gateway restart). */
  servePreviews(previewIds: string[]): Promise<void>;
  /** Starts the built egg; its output arrives through `log` until stopped. */
  run(spec: EggSpec, log: LogSink, hooks: RunHooks): RunningEgg;
}
