/**
 * Imported first by hdf5-worker.ts: h5wasm prints its complaints (invalid UTF-8 in a damaged
 * string, "Aborted(...)") through console.error/warn, bound when it loads. In the worker they are
 * kept (the last few, for an error report) instead of scrolling over the user's terminal; the
 * errors themselves reach the main thread as tagged errors.
 *
 * @module
 */

const recent: string[] = [];

function keep(...args: unknown[]): void {
  recent.push(args.map(String).join(" "));
  if (recent.length > 8) recent.shift();
}

console.error = keep;
console.warn = keep;

/** The last lines h5wasm printed. */
export function recentlyPrinted(): string[] {
  return [...recent];
}
