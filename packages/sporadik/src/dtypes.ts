/**
 * The zarr data types a layout may hold, and the typed arrays that carry them. 64-bit integers are
 * BigInt arrays, as in zarrita.
 */

import type { NumericArray } from "@deltacells/storage";

/** A zarr v3 `data_type` this package reads and writes. */
export type DataType =
  | "int8"
  | "int16"
  | "int32"
  | "int64"
  | "uint8"
  | "uint16"
  | "uint32"
  | "uint64"
  | "float32"
  | "float64";

/** Any array of numbers a layout's `data` may be (the shared `NumericArray` of @deltacells/storage). */
export type { NumericArray };

/** Any array of integers a layout's `indices` or `indptr` may be. */
export type IntegerArray = Exclude<NumericArray, Float32Array | Float64Array>;

/** The constructor of one of the typed arrays above. */
export type NumericArrayConstructor = {
  new (length: number): NumericArray;
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): NumericArray;
  readonly BYTES_PER_ELEMENT: number;
};

const CONSTRUCTORS: Record<DataType, NumericArrayConstructor> = {
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  float32: Float32Array,
  float64: Float64Array,
};

/** Whether `name` is a data type this package handles. */
export function isDataType(name: unknown): name is DataType {
  return typeof name === "string" && Object.hasOwn(CONSTRUCTORS, name);
}

/** The typed-array constructor for a data type. */
export function constructorOf(dtype: DataType): NumericArrayConstructor {
  return CONSTRUCTORS[dtype];
}

/** The data type a typed array holds. */
export function dtypeOf(array: NumericArray): DataType {
  if (array instanceof Int8Array) return "int8";
  if (array instanceof Int16Array) return "int16";
  if (array instanceof Int32Array) return "int32";
  if (array instanceof BigInt64Array) return "int64";
  if (array instanceof Uint8Array) return "uint8";
  if (array instanceof Uint16Array) return "uint16";
  if (array instanceof Uint32Array) return "uint32";
  if (array instanceof BigUint64Array) return "uint64";
  if (array instanceof Float32Array) return "float32";
  return "float64";
}

/** Whether a data type is a floating-point one (its fill value is written `0.0`). */
export function isFloat(dtype: DataType): boolean {
  return dtype === "float32" || dtype === "float64";
}

/** Whether a typed array holds BigInts. */
export function isBigArray(array: NumericArray): array is BigInt64Array | BigUint64Array {
  return array instanceof BigInt64Array || array instanceof BigUint64Array;
}

/** A typed array's element `i` as a number (BigInts converted; exact below 2^53). */
export function numberAt(array: NumericArray, i: number): number {
  const value = array[i];
  return typeof value === "bigint" ? Number(value) : (value ?? Number.NaN);
}

/**
 * Unravels the row-major flat indices `flat` over `dims`: the coordinate of `flat[i]` along
 * `dims[k]` goes to `into[k][i]`. The one loop behind every coordinate view of a layout, a slice
 * or a selection (their `indices` ravel the uncompressed axes).
 */
export function unravelInto(
  flat: NumericArray | readonly number[],
  dims: readonly number[],
  into: readonly Float64Array[],
): void {
  for (let i = 0; i < flat.length; i++) {
    const value = flat[i] as number | bigint;
    let rest = typeof value === "bigint" ? Number(value) : value;
    for (let k = dims.length - 1; k >= 0; k--) {
      const size = dims[k] as number;
      (into[k] as Float64Array)[i] = rest % size;
      rest = Math.floor(rest / size);
    }
  }
}

/** Whether `value` is one of the typed arrays a layout may hold. */
export function isNumericArray(value: unknown): value is NumericArray {
  return ArrayBuffer.isView(value) && !(value instanceof DataView) && !(value instanceof Uint8ClampedArray);
}
