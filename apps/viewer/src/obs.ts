/**
 * The dataset's obs (format spec, "Obs"), as the page draws it: an adapter over `@deltacells/core`'s
 * own reader (`dataset.obsSchema()` and `dataset.obs(columns)`), which reads only the columns asked
 * for, by range, through the store the dataset was opened on (the page's counted, abortable store).
 * This file only turns the reader's Arrow columns (one record batch per tile) into one typed array
 * per column, in cell order, for the plot.
 */
import type { Dataset, ObsColumn, ObsColumnSchema } from "@deltacells/core";

/** One column as `obs/schema.json` declares it. */
export type ObsColumnInfo = ObsColumnSchema;

/**
 * Category codes in the smallest unsigned type that holds them and the missing value, which is
 * `categories.length` (one byte a cell for up to 255 categories: 5 MB at 5,000,000 cells).
 */
export type Codes = Uint8Array | Uint16Array | Uint32Array;

/** A column read for every cell: category codes (`categories.length`: missing) or numbers (NaN missing). */
export type ObsValues =
  | { name: string; kind: "category"; codes: Codes; categories: string[] }
  | { name: string; kind: "numeric"; values: Float32Array };

/** An array for codes `0 .. n` (n: missing) of `length` cells. */
export function codesArray(n: number, length: number): Codes {
  return n < 0xff ? new Uint8Array(length) : n < 0xffff ? new Uint16Array(length) : new Uint32Array(length);
}

export interface Obs {
  readonly columns: ObsColumnInfo[];
  /** The named columns for every cell, in cell order. */
  read(names: string[], signal?: AbortSignal): Promise<Map<string, ObsValues>>;
}

/** A tagged error for an obs column the page cannot draw. */
export class ObsError extends Error {
  readonly _tag = "ObsError";
}

/** The obs of a dataset, or undefined when it has none. Costs one request (the schema). */
export async function openObs(ds: Dataset, signal?: AbortSignal): Promise<Obs | undefined> {
  if (!ds.manifest.has_obs) return undefined;
  const schema = await ds.obsSchema({ signal });
  return {
    columns: schema.columns,
    async read(names, readSignal) {
      const frame = await ds.obs(names, { signal: readSignal });
      return new Map(frame.columns.map((c) => [c.name, valuesOf(c, ds.nCells)]));
    },
  };
}

/** One column's tiles copied into one array for every cell. */
function valuesOf(column: ObsColumn, nCells: number): ObsValues {
  const { name, kind, categories } = column;
  if (kind === "category") {
    // Codes are stored non-null (-1 is missing), int8/int16/int32; here -1 becomes the count.
    const vocabulary = categories ?? [];
    const missing = vocabulary.length;
    const codes = codesArray(missing, nCells);
    let at = 0;
    for (let t = 0; t < column.table.batches.length; t++) {
      const tile = column.tile(t).toArray() as Int8Array | Int16Array | Int32Array;
      for (let i = 0; i < tile.length; i++) codes[at + i] = tile[i]! < 0 ? missing : tile[i]!;
      at += tile.length;
    }
    return { name, kind, codes, categories: vocabulary };
  }
  if (kind !== "numeric") {
    throw new ObsError(
      `obs column ${JSON.stringify(name)} is ${kind}: the page draws category and numeric columns only`,
    );
  }
  const values = new Float32Array(nCells);
  let at = 0;
  for (let t = 0; t < column.table.batches.length; t++) {
    const tile = column.tile(t);
    const raw = tile.toArray() as ArrayLike<number | bigint>;
    if (tile.nullCount === 0 && !(raw instanceof BigInt64Array || raw instanceof BigUint64Array)) {
      values.set(raw as ArrayLike<number>, at);
    } else {
      // Nulls become NaN; 64-bit integers are converted one by one (rare in obs).
      for (let i = 0; i < tile.length; i++) values[at + i] = tile.isValid(i) ? Number(raw[i]) : Number.NaN;
    }
    at += tile.length;
  }
  return { name, kind, values };
}

/** The embeddings among the columns: `X_name_0` and `X_name_1` pairs, `X_umap` first. */
export function embeddingsOf(columns: readonly ObsColumnInfo[]): { name: string; x: string; y: string }[] {
  const names = new Set(columns.filter((c) => c.kind === "numeric").map((c) => c.name));
  const found = [...names]
    .map((n) => /^(.+)_0$/.exec(n)?.[1])
    .filter((base): base is string => base !== undefined && names.has(`${base}_1`))
    .map((base) => ({ name: base, x: `${base}_0`, y: `${base}_1` }));
  return found.sort((a, b) => Number(b.name === "X_umap") - Number(a.name === "X_umap"));
}
