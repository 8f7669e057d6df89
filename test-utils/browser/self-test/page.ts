/** A page module that misbehaves on purpose: the harness's own tests check that it notices. */

/** Starts a module Web Worker that logs an error, and resolves with its message. */
export function workerLogsAnError(): Promise<string> {
  const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  return new Promise((resolve) => {
    worker.onmessage = (e: MessageEvent<unknown>) => {
      // Leave the console message time to reach the harness before the call returns.
      setTimeout(() => resolve(String(e.data)), 100);
    };
  });
}

/** Throws from a timer after the call has started; the call itself resolves later. */
export function throwsLater(): Promise<number> {
  setTimeout(() => {
    throw new Error("thrown from a timer");
  }, 0);
  return new Promise((resolve) => setTimeout(() => resolve(1), 100));
}

/** Never settles. */
export function hangs(): Promise<never> {
  return new Promise(() => {});
}

/** Returns its argument, as the harness passed it. */
export function echo(x: unknown): unknown {
  return x;
}

/** Whether the page is cross-origin isolated (SharedArrayBuffer available). */
export function isolation(): { crossOriginIsolated: boolean; sharedArrayBuffer: boolean } {
  return {
    crossOriginIsolated: globalThis.crossOriginIsolated,
    sharedArrayBuffer: typeof SharedArrayBuffer === "function",
  };
}
