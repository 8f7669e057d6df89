/** Small helpers for AbortSignal plumbing shared by the wrappers. Browser-safe. */

/**
 * Rejects with the signal's reason as soon as it aborts, otherwise settles like `promise`. A
 * `promise` left behind by the abort is still handled: it usually fails too (an aborted read), and
 * nobody else awaits it, so its rejection would be unhandled (which ends a Node process).
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
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

/**
 * Waits `ms` milliseconds, or rejects with the signal's reason when it aborts first. Its one abort
 * listener is removed when the wait ends, so retries on a long-lived signal do not pile them up.
 */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise<void>((resolve) => setTimeout(resolve, ms));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
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
