/**
 * Many slices read together, and the frame they came out of. Row `i` of a selection is
 * `positions[i]` of the array it was read from, not `i`: that is why a selection is its own type
 * rather than a layout (a layout of `positions.length` slices would be a different array).
 */
import {
  constructorOf,
  dtypeOf,
  type IntegerArray,
  type NumericArray,
  numberAt,
  unravelInto,
} from "./dtypes.js";
import { SporadikError } from "./errors.js";
import { type Layout, layoutOver, needsInt64 } from "./layout.js";

/** One contiguous run of elements, `[lo, hi)`. */
export type Run = readonly [number, number];

/**
 * Sorted runs with touching or overlapping ones merged; empty runs dropped. Only exactly adjacent
 * (or overlapping) ranges merge: merging across a gap trades bytes for a request, which is the
 * object store's coalescing to decide, with its own measurements.
 */
export function coalesce(runs: readonly Run[]): Run[] {
  const live = runs.filter(([lo, hi]) => hi > lo).sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [lo, hi] of live) {
    const last = out.at(-1);
    if (last !== undefined && lo <= last[1]) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** A batch of slices along one axis: the caller's positions, and one run per position. */
export class Selection {
  /** The positions asked for, in the caller's order, repeats included. Row `i` is `positions[i]`. */
  readonly positions: Float64Array;
  /** One run per row: `indptr[i]:indptr[i + 1]` into `indices` and `data`. */
  readonly indptr: IntegerArray;
  /** Raveled positions over the other axes (in `indexOrder`), as in the store. */
  readonly indices: IntegerArray;
  readonly data: NumericArray;
  /** The shape of the array this was read from, not of the selection. */
  readonly shape: readonly number[];
  readonly indexedAxis: number;
  readonly indexOrder: readonly number[];

  constructor(fields: {
    positions: Float64Array;
    indptr: IntegerArray;
    indices: IntegerArray;
    data: NumericArray;
    shape: readonly number[];
    indexedAxis: number;
    indexOrder: readonly number[];
  }) {
    this.positions = fields.positions;
    this.indptr = fields.indptr;
    this.indices = fields.indices;
    this.data = fields.data;
    this.shape = fields.shape;
    this.indexedAxis = fields.indexedAxis;
    this.indexOrder = fields.indexOrder;
  }

  /** How many slices were asked for, repeats included. */
  get length(): number {
    return this.positions.length;
  }

  /** How many values the selection holds. */
  get nnz(): number {
    return this.data.length;
  }

  /** The uncompressed axes' lengths, in `indexOrder`: what `indices` ravel over. */
  get indexShape(): number[] {
    return this.indexOrder.map((axis) => this.shape[axis] as number);
  }

  /** Row `which` of the selection (its place in `positions`, not a position along the axis). */
  sliceAt(which: number): { positions: IntegerArray; values: NumericArray } {
    if (!Number.isInteger(which) || which < 0 || which >= this.length) {
      throw new SporadikError(
        `${which} is not one of the ${this.length} rows of this selection (0 to ${this.length - 1}).`,
        { tag: "InvalidArgument", expected: `0 <= row < ${this.length}`, found: which },
      );
    }
    const lo = numberAt(this.indptr, which);
    const hi = numberAt(this.indptr, which + 1);
    return { positions: this.indices.subarray(lo, hi) as IntegerArray, values: this.data.subarray(lo, hi) };
  }

  /**
   * Every value's coordinates in the original array's frame, one array per axis in axis order: the
   * indexed axis's from `positions`, repeated once per value of its row; the others unraveled.
   */
  coords(): { coords: Float64Array[]; values: NumericArray } {
    const nnz = this.nnz;
    const coords = this.shape.map(() => new Float64Array(nnz));
    const along = coords[this.indexedAxis] as Float64Array;
    for (let row = 0; row < this.length; row++) {
      along.fill(this.positions[row] as number, numberAt(this.indptr, row), numberAt(this.indptr, row + 1));
    }
    unravelInto(
      this.indices,
      this.indexShape,
      this.indexOrder.map((axis) => coords[axis] as Float64Array),
    );
    return { coords, values: this.data };
  }

  /** The selection dense over the uncompressed axes: row-major `[length, ...indexShape]`. */
  toDense(): { shape: number[]; values: NumericArray } {
    const width = this.indexShape.reduce((a, b) => a * b, 1);
    const dense = new (constructorOf(dtypeOf(this.data)))(this.length * width);
    for (let row = 0; row < this.length; row++) {
      for (let j = numberAt(this.indptr, row); j < numberAt(this.indptr, row + 1); j++) {
        (dense as Float64Array)[row * width + numberAt(this.indices, j)] = this.data[j] as number;
      }
    }
    return { shape: [this.length, ...this.indexShape], values: dense };
  }

  /**
   * The selection as an array of its own, `length` slices along its axis: for a caller who means
   * "these slices are my array now", so that row `i` means `i` and `positions` no longer matter.
   */
  asLayout(): Layout {
    const shape = this.shape.map((size, axis) => (axis === this.indexedAxis ? this.length : size));
    return layoutOver(shape, this.indexedAxis, {
      data: this.data,
      indices: this.indices,
      indptr: this.indptr,
      indexOrder: this.indexOrder,
    });
  }
}

/** An `indptr` for `counts`, int32 unless its total needs int64 (scipy's rule, as for layouts). */
export function indptrOf(
  counts: Float64Array,
  shape: readonly number[],
  indexOrder: readonly number[],
): IntegerArray {
  let total = 0;
  for (const count of counts) total += count;
  const wide = needsInt64(shape, indexOrder, total) || counts.length > 2 ** 31 - 1;
  const out = wide ? new BigInt64Array(counts.length + 1) : new Int32Array(counts.length + 1);
  let running = 0;
  for (let i = 0; i < counts.length; i++) {
    running += counts[i] as number;
    if (wide) (out as BigInt64Array)[i + 1] = BigInt(running);
    else (out as Int32Array)[i + 1] = running;
  }
  return out;
}
