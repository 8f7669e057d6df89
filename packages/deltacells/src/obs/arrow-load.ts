/**
 * apache-arrow, loaded on first use: the obs read path builds Arrow data, but a page that never
 * reads obs should not download Arrow (most of the browser entry's size otherwise). A dynamic
 * import of a literal specifier, which bundlers (Vite, webpack, esbuild with splitting) turn into
 * a chunk of its own.
 */
let arrow: Promise<typeof import("./arrow.js")> | undefined;

/** The obs Arrow helpers of arrow.ts. */
export function loadArrow(): Promise<typeof import("./arrow.js")> {
  arrow ??= import("./arrow.js");
  return arrow;
}
