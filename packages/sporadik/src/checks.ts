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

/**
 * The first of `values[0:end)` outside `[0, top)`, as its offset, or -1: an `indices` chunk
 * checked once when it is decoded, whatever slices are read from it later.
 */
export function firstOutside(values: IntegerArray, end: number, top: number): number {
  if (values instanceof BigInt64Array || values instanceof BigUint64Array) {
    const limit = BigInt(top);
    for (let k = 0; k < end; k++) {
      const v = values[k] as bigint;
      if (v < 0n || v >= limit) return k;
    }
    return -1;
  }
  // Read as unsigned, a negative int32 is above any extent: one comparison per position.
  const unsigned =
    values instanceof Int32Array ? new Uint32Array(values.buffer, values.byteOffset, values.length) : values;
  return firstAtLeast(unsigned as ArrayLike<number>, end, top);
}

/** The first of `values[0:end)` at or above `top` (or not a number), or -1. */
function firstAtLeast(values: ArrayLike<number>, end: number, top: number): number {
  for (let k = 0; k < end; k++) if (!((values[k] as number) < top)) return k;
  return -1;
}

/**
 * The first of `values[0:end)` that is below the one before it (or below `floor`, for the first)
 * or above `top`, as its offset, or -1: an `indptr` chunk checked once when it is decoded.
 */
export function firstNotMonotone(values: IntegerArray, end: number, floor: number, top: number): number {
  let previous = floor;
  for (let k = 0; k < end; k++) {
    const v = Number(values[k]);
    if (!(v >= previous && v <= top)) return k;
    previous = v;
  }
  return -1;
}
