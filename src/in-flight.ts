/** Work a service started and must let finish when it stops: `track` each, `settled` at stop. */
export class InFlight {
  private readonly tasks = new Set<Promise<unknown>>();

  /** Holds `task` until it settles; returns it. */
  track<T>(task: Promise<T>): Promise<T> {
    this.tasks.add(task);
    void task.finally(() => this.tasks.delete(task)).catch(() => undefined);
    return task;
  }

  /** Resolves once everything tracked so far has settled, however it ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.tasks]);
  }
}
