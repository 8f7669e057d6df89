/**
 * Reads by row range of a chunked array (zarr) that decode each chunk once when the ranges come
 * in increasing order, as a converter reads a cell table tile by tile. A zarr read decodes every
 * chunk it touches, and anndata writes obs columns in few large chunks: without this, tiles much
 * smaller than a chunk would decode it again for each tile. Only the chunks under the last range
 * are kept, so memory stays one or two chunks per column. Browser-safe.
 */

import type { TreeArray } from "./tree.js";
import type { NumericValues } from "./types.js";

/** Decoded rows `[start, start + values.length)` of whole chunks. */
interface Window<T> {
  start: number;
  values: T;
}

type Rows<T> = {
  length: number;
  slice(s: number, e: number): T;
};

/** Reads of `[a, b)` served from whole chunks of `chunk` rows, the last ones kept. */
function windowed<T extends Rows<T>>(
  nRows: number,
  chunk: number,
  load: (s: number, e: number) => Promise<T>,
  concat: (x: T, y: T) => T,
): (a?: number, b?: number) => Promise<T> {
  let win: Window<T> | undefined;
  return async (a = 0, b = nRows) => {
    if (a >= b) return load(a, b);
    const end = () => win!.start + win!.values.length;
    if (!win || a < win.start || a >= end()) {
      const s = Math.floor(a / chunk) * chunk;
      win = { start: s, values: await load(s, Math.min(nRows, Math.ceil(b / chunk) * chunk)) };
    } else if (b > end()) {
      // keep the chunks from the one holding `a`, decode only those after the window
      const keep = Math.floor((a - win.start) / chunk) * chunk;
      const more = await load(end(), Math.min(nRows, Math.ceil(b / chunk) * chunk));
      win = { start: win.start + keep, values: concat(win.values.slice(keep, win.values.length), more) };
    }
    return win.values.slice(a - win.start, b - win.start);
  };
}

function concatNumbers(x: NumericValues, y: NumericValues): NumericValues {
  const out = new (x.constructor as new (n: number) => NumericValues)(x.length + y.length);
  out.set(x as never);
  out.set(y as never, x.length);
  return out;
}

/**
 * `a` with reads by row range through a window of whole chunks when it is chunked along its
 * first axis (`chunkRows`); otherwise `a` itself (HDF5 reads a range without the rest).
 */
export function chunkWindowed(a: TreeArray): TreeArray {
  const chunk = a.chunkRows;
  const n = a.shape[0] ?? 0;
  if (chunk === undefined || chunk <= 0 || a.shape.length !== 1) return a;
  const read = windowed<NumericValues>(n, chunk, (s, e) => a.read(s, e), concatNumbers);
  const readStrings = windowed<string[]>(
    n,
    chunk,
    (s, e) => a.readStrings(s, e),
    (x, y) => x.concat(y),
  );
  return {
    kind: "array",
    path: a.path,
    shape: a.shape,
    element: a.element,
    itemSize: a.itemSize,
    attrs: () => a.attrs(),
    read,
    readStrings,
    readCompound: () => a.readCompound(),
  };
}
