import { DataSource } from 'typeorm';
import { BuildResult, EggSpec, LogSink } from '../../src/runtime/runtime.port';
import { SimulatedRuntime } from '../../src/runtime/simulated.runtime';
import { asError } from './errors';

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

/** The simulated runtime, but builds of held eggs (`held.add(slug)`) wait until `release(slug)`. */
export class GatedRuntime extends SimulatedRuntime {
  readonly held = new Set<string>();
  private readonly gates = new Map<string, Deferred>();

  constructor(ds: DataSource, opts: ConstructorParameters<typeof SimulatedRuntime>[1] = { buildMs: 150, runtimeLogMs: 60_000 }) {
    super(ds, opts);
  }

  async build(spec: EggSpec, log: LogSink, signal: AbortSignal): Promise<BuildResult> {
    if (this.held.has(spec.slug)) {
      await new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(asError(signal.reason)), { once: true });
        void this.gate(spec.slug).promise.then(resolve);
      });
    }
    return super.build(spec, log, signal);
  }

  release(slug: string): void {
    this.held.delete(slug);
    this.gate(slug).resolve();
  }

  private gate(slug: string): Deferred {
    let g = this.gates.get(slug);
    if (!g) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.gates.set(slug, (g = { promise, resolve }));
    }
    return g;
  }
}
