/**
 * A minimal hierarchical store (groups, attributes, n-d arrays) over which the AnnData logic is
 * written once for HDF5 and zarr. Browser-safe: implementations live in their own modules.
 */

import type { DatetimeUnit } from "./datetime-text.js";
import type { NumericValues } from "./types.js";

/**
 * Element type of an array, as far as the readers care. `datetime`: numpy datetime64, int64 counts
 * of {@link TreeArray.datetime}'s unit since 1970-01-01 (NaT the smallest int64).
 */
export type ElementKind = "int" | "uint" | "float" | "bool" | "string" | "datetime" | "compound" | "other";

/** One field of a compound (structured) element type: legacy anndata obs/var tables. */
export interface CompoundField {
  name: string;
  kind: ElementKind;
  /** Bytes per element (of one element of a sub-array field). */
  itemSize: number;
  /**
   * Shape of a sub-array field (each record holds an array, as the pre-0.7 obsm `X_pca` field);
   * absent for scalar fields. `readCompound` returns such a field row-major, records x elements.
   */
  shape?: number[];
  /** The unit of a `datetime` field, which `readCompound` gives as int64 counts. */
  datetime?: DatetimeUnit;
  /** The stored type in words, for a field no reader decodes (see {@link TreeArray.dtype}). */
  dtype?: string;
}

export interface TreeArray {
  readonly kind: "array";
  /** Path inside the store, without a leading slash. */
  readonly path: string;
  readonly shape: number[];
  readonly element: ElementKind;
  /** Bytes per element (for numbers). */
  readonly itemSize: number;
  /** Fields, for compound element types. */
  readonly fields?: CompoundField[];
  /** The unit of a `datetime` array; `read` gives its int64 counts. */
  readonly datetime?: DatetimeUnit;
  /**
   * The stored type in the format's words, where `element` cannot say it (`datetime64[ns]`,
   * `timedelta64[s]`, `complex128`, `HDF5 opaque (8 bytes)`): what a refusal names.
   */
  readonly dtype?: string;
  /**
   * Rows per chunk along the first axis when a read decodes every chunk it touches whole (zarr);
   * undefined where a range costs only its rows (HDF5).
   */
  readonly chunkRows?: number;
  attrs(): Promise<Record<string, unknown>>;
  /** Numeric/bool values of rows `[start, end)` (first dimension; the whole array by default), row-major. */
  read(start?: number, end?: number): Promise<NumericValues>;
  /** String values of `[start, end)` of a 1-d string array. */
  readStrings(start?: number, end?: number): Promise<string[]>;
  /** Columns of a 1-d compound array: one array (strings or numbers) per field. */
  readCompound(): Promise<Map<string, string[] | NumericValues>>;
}

export interface TreeGroup {
  readonly kind: "group";
  readonly path: string;
  attrs(): Promise<Record<string, unknown>>;
  keys(): Promise<string[]>;
}

export type TreeNode = TreeArray | TreeGroup;

export interface Tree {
  /** The input path. */
  readonly location: string;
  /** The node at `path` ("" for the root), or undefined when absent. */
  get(path: string): Promise<TreeNode | undefined>;
  close(): Promise<void>;
}

/** Joins store paths ("a", "b" -> "a/b"; "" is the root). */
export function joinPath(a: string, b: string): string {
  return a === "" ? b : `${a}/${b}`;
}

/** Numbers from a numeric typed array, BigInt64 converted (exactly up to 2^53). */
export function toNumbers(v: NumericValues): ArrayLike<number> {
  if (v instanceof BigInt64Array) {
    const out = new Float64Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = Number(v[i]);
    return out;
  }
  return v;
}

/** Decodes an attribute value that may be stored as bytes into a string. */
export function attrString(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (v instanceof Uint8Array) return new TextDecoder().decode(v);
  return undefined;
}
