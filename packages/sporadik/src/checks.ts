/**
 * What a reader checks in the `indices` it read, where a damaged chunk or zarr's fill value for a
 * missing one would otherwise pass for positions: within one slice they are strictly increasing
 * and inside the axes they ravel over. A run of zeros (the fill value) longer than one breaks it.
 */
import type { IntegerArray } from "./dtypes.js";

/**
 * The offset into `indices` of the first position that breaks the rule in the runs `indptr` names
 * (run `i` is `[indptr[i], indptr[i+1])`, offsets into `indices`), or -1 when every run keeps it.
 * One pass over `indices`, no allocation.
 */
export function firstDisorderedIndex(indices: IntegerArray, indptr: IntegerArray, extent: number): number {
  const runs = indptr.length - 1;
  if (indices instanceof BigInt64Array || indices instanceof BigUint64Array) {
    const top = BigInt(extent);
    for (let i = 0; i < runs; i++) {
      const hi = Number(indptr[i + 1]);
      let previous = -1n;
      for (let k = Number(indptr[i]); k < hi; k++) {
        const v = indices[k] as bigint;
        if (v <= previous || v >= top) return k;
        previous = v;
      }
    }
    return -1;
  }
  for (let i = 0; i < runs; i++) {
    const hi = Number(indptr[i + 1]);
    let previous = -1;
    for (let k = Number(indptr[i]); k < hi; k++) {
      const v = indices[k] as number;
      if (v <= previous || v >= extent) return k;
      previous = v;
    }
  }
  return -1;
}
