/** Small helpers for AbortSignal plumbing shared by the wrappers. Browser-safe. */

/** Rejects with the signal's reason as soon as it aborts, otherwise settles like `promise`. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/** Waits `ms` milliseconds, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return raceAbort(
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => clearTimeout(t), { once: true });
    }),
    signal,
  );
}

/**
 * A controller that also aborts (with the same reason) when `parent` does. `release()` detaches
 * it from the parent; call it when the child's work is over so long-lived signals do not
 * accumulate listeners.
 */
export function childController(parent: AbortSignal | undefined): {
  controller: AbortController;
  release(): void;
} {
  const controller = new AbortController();
  if (parent === undefined) return { controller, release() {} };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, release() {} };
  }
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  return { controller, release: () => parent.removeEventListener("abort", onAbort) };
}
