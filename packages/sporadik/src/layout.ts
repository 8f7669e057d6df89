/**
 * A layout: one axis made contiguous. At rank two it is CSR (axis 0) or CSC (axis 1); above, the
 * other axes are raveled into `indices` in `indexOrder`, and `indptr` still names one run per
 * position: `indptr.length === shape[indexedAxis] + 1` at every rank.
 */
import {
  constructorOf,
  dtypeOf,
  type IntegerArray,
  isBigArray,
  isNumericArray,
  type NumericArray,
  numberAt,
  unravelInto,
} from "./dtypes.js";
import { LayoutError } from "./errors.js";
import { anndataEncoding, ENCODINGS, type Encoding, layoutPath, MIN_RANK, raveledShape } from "./spec.js";

/** The three arrays, the array's own shape, and which axis they make contiguous. */
export interface Layout {
  /** The array's own shape, at its own rank. */
  readonly shape: readonly number[];
  /** The axis this layout makes contiguous. */
  readonly indexedAxis: number;
  /** The other axes, in the order `indices` was raveled over them (row-major). */
  readonly indexOrder: readonly number[];
  readonly data: NumericArray;
  readonly indices: IntegerArray;
  readonly indptr: IntegerArray;
}

/** What two values at one coordinate mean: added together (scipy's choice) or refused. */
export type Duplicates = "sum" | "refuse";

/** The `encoding-type` of a layout's own group. */
export function encodingOf(layout: Layout): Encoding {
  return anndataEncoding(layout.shape.length, layout.indexedAxis);
}

/** The shape a layout's own group declares. */
export function declaredShapeOf(layout: Layout): number[] {
  return raveledShape(layout.shape, layout.indexedAxis, layout.indexOrder);
}

/** Where a layout lives in a store's prefix. */
export function pathOf(layout: Layout): string {
  return layoutPath(layout.indexedAxis);
}

/** The axes other than `axis`, ascending: the default `indexOrder`. */
export function otherAxes(rank: number, axis: number): number[] {
  const others: number[] = [];
  for (let a = 0; a < rank; a++) if (a !== axis) others.push(a);
  return others;
}

function checkShape(shape: readonly number[]): number[] {
  const out = [...shape];
  if (out.length < MIN_RANK) {
    throw new LayoutError(
      `A sparse array has at least ${MIN_RANK} axes, but shape is [${out.join(", ")}]. A vector has nothing to make contiguous against; add an axis of length 1.`,
    );
  }
  for (const size of out) {
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new LayoutError(
        `shape [${out.join(", ")}] has ${size}, which is not a length; every axis is a non-negative integer.`,
      );
    }
  }
  return out;
}

function checkAxis(shape: readonly number[], axis: number): void {
  if (!Number.isInteger(axis) || axis < 0 || axis >= shape.length) {
    throw new LayoutError(
      `axis ${axis} is not an axis of shape [${shape.join(", ")}], so nothing could compress along it. Use an axis from 0 to ${shape.length - 1}.`,
    );
  }
}

/**
 * The scipy rule for index width: 32 bits unless the largest index, offset or axis would not fit.
 * scipy compares `max(shape)` and `nnz` against int32's maximum; the raveled product matters above
 * rank two, where `indices` range over it.
 */
export function needsInt64(shape: readonly number[], indexOrder: readonly number[], nnz: number): boolean {
  const raveled = indexOrder.reduce((product, axis) => product * (shape[axis] as number), 1);
  const largest = Math.max(nnz, raveled, ...shape);
  return largest > 2 ** 31 - 1;
}

function indexArray(length: number, wide: boolean): Int32Array | BigInt64Array {
  return wide ? new BigInt64Array(length) : new Int32Array(length);
}

/**
 * A layout at any rank from its three arrays, checked before anything can be written: rank, axis,
 * `indexOrder` a permutation of the other axes, `indptr` of `shape[indexedAxis] + 1` entries, and
 * `data`/`indices` parallel. `indexOrder` defaults to the other axes in ascending order.
 */
export function layoutOver(
  shape: readonly number[],
  indexedAxis: number,
  arrays: { data: NumericArray; indices: IntegerArray; indptr: IntegerArray; indexOrder?: readonly number[] },
): Layout {
  const checked = checkShape(shape);
  checkAxis(checked, indexedAxis);
  const others = otherAxes(checked.length, indexedAxis);
  const order = arrays.indexOrder ? [...arrays.indexOrder] : others;
  const sorted = [...order].sort((a, b) => a - b);
  if (sorted.length !== others.length || sorted.some((axis, k) => axis !== others[k])) {
    throw new LayoutError(
      `index_order must be the axes other than ${indexedAxis}, in the order indices were raveled over them: a permutation of [${others.join(", ")}], but it is [${order.join(", ")}]. A wrong order puts every value in a different cell.`,
    );
  }
  for (const [name, array] of [
    ["data", arrays.data],
    ["indices", arrays.indices],
    ["indptr", arrays.indptr],
  ] as const) {
    if (!isNumericArray(array)) {
      throw new LayoutError(
        `${name} must be a typed array (e.g. Float32Array, Int32Array), not ${typeof array}.`,
      );
    }
  }
  if (arrays.indices instanceof Float32Array || arrays.indices instanceof Float64Array) {
    throw new LayoutError(
      "indices must be an integer typed array (Int32Array or BigInt64Array), not floats.",
    );
  }
  if (arrays.indptr instanceof Float32Array || arrays.indptr instanceof Float64Array) {
    throw new LayoutError("indptr must be an integer typed array (Int32Array or BigInt64Array), not floats.");
  }
  const expected = (checked[indexedAxis] as number) + 1;
  if (arrays.indptr.length !== expected) {
    throw new LayoutError(
      `A layout compressing axis ${indexedAxis} of [${checked.join(", ")}] has indptr of ${expected} entries (one per slice, plus the end), but it has ${arrays.indptr.length}. Was it built for another axis, or transposed?`,
    );
  }
  if (arrays.data.length !== arrays.indices.length) {
    throw new LayoutError(
      `data has ${arrays.data.length} entries and indices ${arrays.indices.length}; they are parallel, one index per value. One of them was cut short.`,
    );
  }
  const last = arrays.indptr.length > 0 ? numberAt(arrays.indptr, arrays.indptr.length - 1) : 0;
  if (numberAt(arrays.indptr, 0) !== 0 || last !== arrays.data.length) {
    throw new LayoutError(
      `indptr must run from 0 to the number of values (${arrays.data.length}), but it runs from ${numberAt(arrays.indptr, 0)} to ${last}. The runs it names would not cover data.`,
    );
  }
  for (let p = 0; p + 1 < arrays.indptr.length; p++) {
    if (numberAt(arrays.indptr, p + 1) < numberAt(arrays.indptr, p)) {
      throw new LayoutError(
        `indptr decreases at slice ${p} (${numberAt(arrays.indptr, p)} then ${numberAt(arrays.indptr, p + 1)}); each run must start where the previous one ended. Sort the values by their position along axis ${indexedAxis}.`,
      );
    }
  }
  const extent = order.reduce((product, axis) => product * (checked[axis] as number), 1);
  for (let i = 0; i < arrays.indices.length; i++) {
    const index = numberAt(arrays.indices, i);
    if (!(index >= 0 && index < extent)) {
      throw new LayoutError(
        `indices[${i}] is ${index}, but the other axes of [${checked.join(", ")}] ravel to ${extent} positions. The value would land outside the array; check the shape and the index order.`,
      );
    }
  }
  return {
    shape: checked,
    indexedAxis,
    indexOrder: order,
    data: arrays.data,
    indices: arrays.indices,
    indptr: arrays.indptr,
  };
}

/** A compressed rank-two matrix as scipy holds one: CSR makes axis 0 contiguous, CSC axis 1. */
export interface CompressedMatrix {
  format: "csr" | "csc";
  shape: readonly [number, number] | readonly number[];
  data: NumericArray;
  indices: IntegerArray;
  indptr: IntegerArray;
}

/** A rank-two layout from a CSR or CSC matrix; the axis is read off its format. */
export function layoutFromCompressed(matrix: CompressedMatrix): Layout {
  const encoding = `${matrix.format}_matrix`;
  if (!Object.hasOwn(ENCODINGS, encoding)) {
    throw new LayoutError(
      `A "${matrix.format}" matrix has no anndata spelling; convert it to "csr" or "csc" first, choosing the axis a reader will select along.`,
    );
  }
  if (matrix.shape.length !== MIN_RANK) {
    throw new LayoutError(
      `A ${matrix.format.toUpperCase()} matrix has rank two, but shape is [${matrix.shape.join(", ")}]. Above rank two use layoutFromCoords or layoutOver.`,
    );
  }
  return layoutOver(matrix.shape, ENCODINGS[encoding as Encoding], matrix);
}

/** Coordinates of one axis: any array of non-negative integers. */
export type CoordinateArray = ArrayLike<number> | BigInt64Array | BigUint64Array;

function coordinateAt(coords: CoordinateArray, i: number): number {
  const value = coords[i];
  return typeof value === "bigint" ? Number(value) : (value as number);
}

/**
 * A layout from coordinates and values (COO) at any rank, making `indexedAxis` contiguous: the other
 * axes are raveled in ascending order, entries sorted by (position, raveled index), and the runs
 * counted into `indptr`. Repeated coordinates are summed (scipy's behaviour) unless `duplicates` is
 * `"refuse"`. `indices`/`indptr` are int32 unless an index or offset needs int64, as in scipy.
 */
export function layoutFromCoords(
  shape: readonly number[],
  coords: readonly CoordinateArray[],
  values: NumericArray,
  indexedAxis: number,
  options: { duplicates?: Duplicates } = {},
): Layout {
  const checked = checkShape(shape);
  checkAxis(checked, indexedAxis);
  if (coords.length !== checked.length) {
    throw new LayoutError(
      `coords holds ${coords.length} coordinate arrays for a shape of ${checked.length} axes; there is one per axis, in axis order, each as long as values.`,
    );
  }
  const n = values.length;
  for (let axis = 0; axis < checked.length; axis++) {
    const coordinate = coords[axis] as CoordinateArray;
    if (coordinate.length !== n) {
      throw new LayoutError(
        `the coordinates along axis ${axis} number ${coordinate.length} against ${n} values; they are parallel, one coordinate per value per axis.`,
      );
    }
    const size = checked[axis] as number;
    for (let i = 0; i < n; i++) {
      const c = coordinateAt(coordinate, i);
      if (!(Number.isInteger(c) && c >= 0 && c < size)) {
        throw new LayoutError(
          `the coordinates along axis ${axis} include ${c}, which is not a position along an axis of ${size}. Every coordinate names a cell of the declared shape.`,
        );
      }
    }
  }
  const order = otherAxes(checked.length, indexedAxis);
  const indexShape = order.map((axis) => checked[axis] as number);
  const raveledSize = indexShape.reduce((a, b) => a * b, 1);
  if (raveledSize > Number.MAX_SAFE_INTEGER) {
    throw new LayoutError(
      `the axes other than ${indexedAxis} of [${checked.join(", ")}] ravel past 2^53 positions, which this implementation cannot index exactly.`,
    );
  }
  // Raveled position of every entry over the other axes, row-major in `order`.
  const raveled = new Float64Array(n);
  let stride = 1;
  for (let k = order.length - 1; k >= 0; k--) {
    const coordinate = coords[order[k] as number] as CoordinateArray;
    for (let i = 0; i < n; i++) raveled[i] = (raveled[i] as number) + coordinateAt(coordinate, i) * stride;
    stride *= indexShape[k] as number;
  }
  const along = coords[indexedAxis] as CoordinateArray;
  const slices = checked[indexedAxis] as number;
  // Counting sort by position (stable), then each run sorted by raveled index.
  const starts = new Float64Array(slices + 1);
  for (let i = 0; i < n; i++) {
    const p = coordinateAt(along, i);
    starts[p + 1] = (starts[p + 1] as number) + 1;
  }
  for (let p = 0; p < slices; p++) starts[p + 1] = (starts[p + 1] as number) + (starts[p] as number);
  const fill = starts.slice(0, slices);
  const walk = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const p = coordinateAt(along, i);
    walk[fill[p] as number] = i;
    fill[p] = (fill[p] as number) + 1;
  }
  const byRaveled = (a: number, b: number) => (raveled[a] as number) - (raveled[b] as number);
  for (let p = 0; p < slices; p++) {
    const lo = starts[p] as number;
    const hi = starts[p + 1] as number;
    let ordered = true;
    for (let j = lo + 1; j < hi && ordered; j++) {
      if ((raveled[walk[j] as number] as number) < (raveled[walk[j - 1] as number] as number))
        ordered = false;
    }
    if (!ordered) walk.subarray(lo, hi).sort(byRaveled);
  }
  // Collapse repeated coordinates, summing or refusing.
  let repeats = 0;
  for (let p = 0; p < slices; p++) {
    for (let j = (starts[p] as number) + 1; j < (starts[p + 1] as number); j++) {
      if (raveled[walk[j] as number] === raveled[walk[j - 1] as number]) repeats++;
    }
  }
  if (repeats > 0 && options.duplicates === "refuse") {
    throw new LayoutError(
      `${repeats} of ${n} coordinates name a cell another one already names. A layout holds one value per cell: drop the duplicates, or pass duplicates: "sum" to add them together as scipy does.`,
    );
  }
  const nnz = n - repeats;
  const wide = needsInt64(checked, order, nnz);
  const Data = constructorOf(dtypeOf(values));
  const data = new Data(nnz);
  const indices = indexArray(nnz, wide);
  const indptr = indexArray(slices + 1, wide);
  const float32 = values instanceof Float32Array;
  let out = -1;
  for (let p = 0; p < slices; p++) {
    const lo = starts[p] as number;
    const hi = starts[p + 1] as number;
    let previous = -1;
    for (let j = lo; j < hi; j++) {
      const i = walk[j] as number;
      const r = raveled[i] as number;
      if (r === previous) {
        if (isBigArray(data))
          (data as BigInt64Array)[out] = ((data[out] as bigint) + (values[i] as bigint)) as bigint;
        else {
          const sum = (data[out] as number) + (values[i] as number);
          (data as Float64Array)[out] = float32 ? Math.fround(sum) : sum;
        }
        continue;
      }
      out++;
      previous = r;
      (data as Float64Array)[out] = values[i] as number;
      if (wide) (indices as BigInt64Array)[out] = BigInt(r);
      else (indices as Int32Array)[out] = r;
    }
    if (wide) (indptr as BigInt64Array)[p + 1] = BigInt(out + 1);
    else (indptr as Int32Array)[p + 1] = out + 1;
  }
  return layoutOver(checked, indexedAxis, { data, indices, indptr, indexOrder: order });
}

/**
 * A layout from a dense row-major array of `shape`, keeping the cells that are not zero. For small
 * arrays only: anything the format is for does not fit in memory dense.
 */
export function layoutFromDense(shape: readonly number[], dense: NumericArray, indexedAxis: number): Layout {
  const checked = checkShape(shape);
  const total = checked.reduce((a, b) => a * b, 1);
  if (dense.length !== total) {
    throw new LayoutError(
      `a dense array of shape [${checked.join(", ")}] has ${total} cells, but ${dense.length} values were given.`,
    );
  }
  const nonzero: number[] = [];
  for (let i = 0; i < total; i++) if (dense[i] !== 0 && dense[i] !== 0n) nonzero.push(i);
  const coords = checked.map(() => new Float64Array(nonzero.length));
  const Values = constructorOf(dtypeOf(dense));
  const values = new Values(nonzero.length);
  unravelInto(nonzero, checked, coords);
  for (let k = 0; k < nonzero.length; k++)
    (values as Float64Array)[k] = dense[nonzero[k] as number] as number;
  return layoutFromCoords(checked, coords, values, indexedAxis, { duplicates: "refuse" });
}

/**
 * The largest absolute value of every slice, in the data's own type; an empty slice is zero. The
 * writer stores it so a reader never reduces over every value to get it.
 */
export function maximaOf(data: NumericArray, indptr: IntegerArray): NumericArray {
  const Ctor = constructorOf(dtypeOf(data));
  const slices = Math.max(indptr.length - 1, 0);
  const out = new Ctor(slices);
  if (isBigArray(data)) {
    for (let p = 0; p < slices; p++) {
      let best = 0n;
      for (let j = numberAt(indptr, p); j < Math.min(numberAt(indptr, p + 1), data.length); j++) {
        const v = data[j] as bigint;
        const a = v < 0n ? -v : v;
        if (a > best) best = a;
      }
      (out as BigInt64Array)[p] = best;
    }
    return out;
  }
  const values = data as Float64Array;
  const target = out as Float64Array;
  for (let p = 0; p < slices; p++) {
    let best = 0;
    // Clamped to the values, so a damaged indptr cannot send this loop past them.
    for (let j = numberAt(indptr, p); j < Math.min(numberAt(indptr, p + 1), values.length); j++) {
      const a = Math.abs(values[j] as number);
      // NaN propagates, as numpy's maximum does.
      if (a > best || Number.isNaN(a)) best = a;
    }
    target[p] = best;
  }
  return out;
}

/**
 * The layouts of one store, keyed by the axis each makes contiguous. Refuses an empty set, two
 * layouts of one axis, and layouts of different shapes, before anything is written.
 */
export function layoutsByAxis(layouts: Layout | readonly Layout[]): Map<number, Layout> {
  const list = Array.isArray(layouts) ? (layouts as readonly Layout[]) : [layouts as Layout];
  if (list.length === 0) {
    throw new LayoutError("A sparse store is its layouts, and none were given. Pass at least one layout.");
  }
  const byAxis = new Map<number, Layout>();
  for (const layout of list) {
    const checked = layoutOver(layout.shape, layout.indexedAxis, layout);
    if (byAxis.has(checked.indexedAxis)) {
      throw new LayoutError(
        `Two layouts compress axis ${checked.indexedAxis}. That is one capability twice, and nothing could say which a reader should use. Give one layout per axis.`,
      );
    }
    byAxis.set(checked.indexedAxis, checked);
  }
  const shapes = new Set([...byAxis.values()].map((layout) => JSON.stringify(layout.shape)));
  if (shapes.size > 1) {
    throw new LayoutError(
      `The layouts hold different shapes ${[...shapes].join(" and ")}. A store is one array in up to one layout per axis; two arrays are two stores. Was one transposed rather than re-compressed?`,
    );
  }
  return byAxis;
}

/**
 * A layout back to coordinates and values, one coordinate array per axis in axis order: the
 * compressed axis's from `indptr`, the others unraveled through `indexOrder`. The exchange format
 * between layouts of different axes.
 */
export function coordsOfLayout(layout: Layout): { coords: Float64Array[]; values: NumericArray } {
  const nnz = layout.data.length;
  const coords = layout.shape.map(() => new Float64Array(nnz));
  const along = coords[layout.indexedAxis] as Float64Array;
  const slices = layout.indptr.length - 1;
  for (let p = 0; p < slices; p++) along.fill(p, numberAt(layout.indptr, p), numberAt(layout.indptr, p + 1));
  unravelInto(
    layout.indices,
    layout.indexOrder.map((axis) => layout.shape[axis] as number),
    layout.indexOrder.map((axis) => coords[axis] as Float64Array),
  );
  return { coords, values: layout.data };
}
