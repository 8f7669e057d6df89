/**
 * The sporadik format itself: the names, versions and rules that are normative, and nothing else.
 *
 * A second implementation reproduces this module and no more; the writer and reader in this package
 * are one implementation of it. Nothing here touches bytes, stores or zarr, so it imports nothing.
 *
 * @module
 */

/** The spec version this package writes into the block. */
export const SPEC_VERSION = "1";

/** The spec versions this package reads. A store declaring any other is refused, never guessed at. */
export const SUPPORTED_SPECS: ReadonlySet<string> = new Set(["1"]);

/** The key, in the root group's own attributes, under which the block lives. */
export const BLOCK_KEY = "sporadik";

/** The group, one level below the root, that every layout hangs under. */
export const LAYOUTS_GROUP = "layouts";

/** The lowest rank the format describes: a compressed axis needs another axis to hold positions. */
export const MIN_RANK = 2;

/** anndata's `encoding-version` carried by every layout group. */
export const ENCODING_VERSION = "0.1.0";

/** anndata's two rank-two spellings, and the axis each one's `indptr` walks. */
export const ENCODINGS: Readonly<Record<"csr_matrix" | "csc_matrix", number>> = Object.freeze({
  csr_matrix: 0,
  csc_matrix: 1,
});

/** One of anndata's sparse encodings. */
export type Encoding = keyof typeof ENCODINGS;

/** One entry of the block's `layouts` list. */
export interface BlockLayout {
  path: string;
  indexed_axis: number;
  index_order: number[];
}

/** The block, exactly as it is stored under {@link BLOCK_KEY}. */
export interface Block {
  spec: string;
  complete: boolean;
  shape: number[];
  layouts: BlockLayout[];
}

/**
 * Where the layout making `indexedAxis` contiguous lives inside the prefix. Named for the axis, not
 * an encoding, so a reader can recompute it and refuse a layout filed under the wrong name.
 */
export function layoutPath(indexedAxis: number): string {
  return `${LAYOUTS_GROUP}/axis${indexedAxis}`;
}

/**
 * The `encoding-type` a layout group declares. At rank two it is anndata's (CSR for axis 0, CSC for
 * axis 1); above it the group holds the array raveled to two axes, which is a CSR matrix.
 */
export function anndataEncoding(rank: number, indexedAxis: number): Encoding {
  if (rank === MIN_RANK) return indexedAxis === 0 ? "csr_matrix" : "csc_matrix";
  return "csr_matrix";
}

/**
 * The shape a layout group declares: the array's own at rank two, otherwise the raveled pair
 * `[shape[indexedAxis], product of shape over indexOrder]` the group literally holds.
 */
export function raveledShape(
  shape: readonly number[],
  indexedAxis: number,
  indexOrder: readonly number[],
): number[] {
  if (shape.length === MIN_RANK) return [...shape];
  let remainder = 1;
  for (const axis of indexOrder) remainder *= shape[axis] ?? Number.NaN;
  return [shape[indexedAxis] ?? Number.NaN, remainder];
}

/**
 * The block a writer lands last, once every chunk is durable: spec, completeness, the array's shape
 * and one entry per layout in ascending axis order. `layouts` maps an indexed axis to its
 * `indexOrder`, the order `indices` was raveled over the other axes (not recoverable from bytes).
 */
export function blockFor(
  shape: readonly number[],
  layouts: ReadonlyMap<number, { readonly indexOrder: readonly number[] }>,
): Block {
  const axes = [...layouts.keys()].sort((a, b) => a - b);
  return {
    spec: SPEC_VERSION,
    complete: true,
    shape: [...shape],
    layouts: axes.map((axis) => ({
      path: layoutPath(axis),
      indexed_axis: axis,
      index_order: [...(layouts.get(axis)?.indexOrder ?? [])],
    })),
  };
}
