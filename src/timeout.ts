/**
 * `promise`, or what `late()` returns (or throws) if it has not settled within `ms`. The timer
 * is cleared either way, and never keeps the process alive by itself; `promise` itself is not
 * cancelled.
 */
export function within<T, F>(promise: Promise<T>, ms: number, late: () => F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<F>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (err) {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what `late` threw, passed on as it is
        reject(err);
      }
    }, ms).unref();
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
