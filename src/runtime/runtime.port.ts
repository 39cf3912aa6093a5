/** The port to whatever builds and runs eggs. The simulated adapter is the default. */
export interface EggSpec {
  deploymentId: string;
  slug: string;
  env: Record<string, string>;
  memoryMb: number;
  /** Whether the egg's tier lets the runtime put it to sleep when idle. */
  sleeps: boolean;
  /** An image to run instead of building one (the Docker host has it or can pull it). */
  image?: string | null;
  /** The egg's source (a .tar.gz), read from storage when a build needs it. */
  source?: (() => Promise<NodeJS.ReadableStream>) | null;
}

export interface RunHooks {
  /**
   * Called when the runtime wakes a sleeping egg: records the wake and returns the memory to
   * run with (the egg's effective memory at that moment), or null if the deployment is gone.
   */
  wake(): Promise<number | null>;
}

/** A log line; `at` is when the egg wrote it, where the runtime knows (a container's timestamps). */
export type LogSink = (type: 'build' | 'runtime', message: string, at?: Date) => void;

export type BuildResult = { ok: true } | { ok: false; reason: string };

export interface RunningEgg {
  /** Stops the egg for good: it was superseded or deleted. */
  stop(): void;
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
}

export interface Runtime {
  /** Runs a one-off command in the egg's environment (a cron run); resolves with its exit code. */
  runCommand(spec: CommandSpec, signal: AbortSignal): Promise<{ exitCode: number }>;
  /** Builds the egg; rejects with an AbortError when `signal` aborts. */
  build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult>;
  /** Space in MB used on the egg's volume. */
  volumeUsage(slug: string): Promise<number>;
  /** Erases the egg's volume data, irreversibly. */
  eraseVolume(slug: string): Promise<void>;
  /** Creates what a preview environment owns: its routes, database and addons. */
  provisionPreview(spec: PreviewSpec): Promise<ProvisionedResource[]>;
  /** Removes them; removing what is already gone is not an error. */
  teardownPreview(resources: ProvisionedResource[]): Promise<void>;
  /** Starts the built egg; its output arrives through `log` until stopped. */
  run(spec: EggSpec, log: LogSink, hooks: RunHooks): RunningEgg;
}
