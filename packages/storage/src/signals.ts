/** Small helpers for AbortSignal plumbing shared by the wrappers. Browser-safe. */

/** The callbacks waiting on one signal, and the one listener that calls them. */
interface Waiting {
  callbacks: Set<() => void>;
  fire: () => void;
}

const waitingOn = new WeakMap<AbortSignal, Waiting>();

/**
 * Calls `callback` once when `signal` aborts, as `addEventListener("abort", callback, { once:
 * true })` would (never, for a signal aborted already or none); returns the function that stops waiting.
 * Every read in flight waits on its caller's signal, often one long-lived signal for all of them
 * (a stream's stop): they share one listener on it, added with the first waiter and removed with
 * the last, so that neither Node's warning past 10 listeners on one signal nor a listener left
 * behind comes from many reads at once.
 */
export function onAbort(signal: AbortSignal | undefined, callback: () => void): () => void {
  if (signal === undefined || signal.aborted) return () => {};
  let waiting = waitingOn.get(signal);
  if (waiting === undefined) {
    const callbacks = new Set<() => void>();
    const fire = () => {
      waitingOn.delete(signal);
      // As an event's dispatch: a waiter that stops waiting while others are called is not
      // called, and one that throws is reported without keeping the others from being called.
      for (const c of [...callbacks]) {
        if (!callbacks.has(c)) continue;
        try {
          c();
        } catch (err) {
          queueMicrotask(() => {
            throw err;
          });
        }
      }
    };
    waiting = { callbacks, fire };
    waitingOn.set(signal, waiting);
    signal.addEventListener("abort", fire, { once: true });
  }
  // A callback of its own: the same function waiting twice is two waiters.
  const entry = () => callback();
  const { callbacks } = waiting;
  callbacks.add(entry);
  return () => {
    if (!callbacks.delete(entry) || callbacks.size > 0) return;
    if (waitingOn.get(signal) === waiting) {
      waitingOn.delete(signal);
      signal.removeEventListener("abort", waiting.fire);
    }
  };
}

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
    const stop = onAbort(signal, () => reject(signal.reason));
    promise.then(
      (v) => {
        stop();
        resolve(v);
      },
      (e) => {
        stop();
        reject(e);
      },
    );
  });
}

/**
 * Waits `ms` milliseconds, or rejects with the signal's reason when it aborts first. It stops
 * waiting on the signal when the wait ends, so retries on a long-lived signal do not pile up.
 */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise<void>((resolve) => setTimeout(resolve, ms));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      resolve();
    }, ms);
    const stop = onAbort(signal, () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
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
  return { controller, release: onAbort(parent, () => controller.abort(parent.reason)) };
}
