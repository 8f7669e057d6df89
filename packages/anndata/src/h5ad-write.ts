/**
 * AnnData `.h5ad` output written with h5wasm: X as a `csr_matrix` group (data int32, indices
 * int32, indptr int64) filled tile by tile into resizable datasets, obs and var as `dataframe`
 * groups (var with the gene table's columns), with the encoding attributes anndata >= 0.8 expects.
 */
import h5wasm, { type Group } from "h5wasm/node";
import { BoolDatasets } from "./h5-bool.js";
import type { TableColumn } from "./types.js";

function encoding(g: Group, type: string, version: string): void {
  g.create_attribute("encoding-type", type);
  g.create_attribute("encoding-version", version);
}

function stringArray(g: Group, name: string, values: string[]): void {
  // The dtype said, not guessed: h5wasm makes int32 of an empty list, which anndata cannot read.
  const ds = g.create_dataset({ name, data: values, dtype: "S" });
  encoding(ds as unknown as Group, "string-array", "0.2.0");
}

function codesArray(codes: Int32Array, n: number): Int8Array | Int16Array | Int32Array {
  if (n <= 127) return Int8Array.from(codes);
  if (n <= 32767) return Int16Array.from(codes);
  return codes;
}

type NumericColumn = Extract<TableColumn, { kind: "numeric" }>;

/**
 * A data frame column to write: a {@link TableColumn}, whose numbers may also be uint64;
 * `nullable` marks one that came from a pandas nullable array (Int32, boolean, string), which
 * keeps its nullable encoding even with no value missing.
 */
export type FrameColumn =
  | Exclude<TableColumn, NumericColumn>
  | (Omit<NumericColumn, "values"> & { values: NumericColumn["values"] | BigUint64Array });

/** A data frame to write: a string index (with its pandas name) and typed columns. */
export interface Frame {
  indexName: string | null;
  index: string[];
  columns: FrameColumn[];
}

/** obs to write: the data frame, and the per-cell matrices of `obsm` (float32, row-major). */
export interface H5adObs extends Frame {
  obsm: { name: string; k: number; values: Float32Array }[];
}

/** The matrix of an export: its shape and nonzeros, and CSR parts of consecutive rows, in order. */
export interface H5adMatrix {
  nCells: number;
  nGenes: number;
  nnz: number;
  /** Each part's `indptr` starts at 0; `indices` and `data` hold at least its nonzeros. */
  parts(): AsyncIterable<{
    nCells: number;
    indptr: ArrayLike<number>;
    indices: Int32Array;
    data: Int32Array;
  }>;
}

const anyMissing = (nulls: Uint8Array | undefined): nulls is Uint8Array =>
  nulls?.some((x) => x !== 0) === true;

/** anndata's nullable-* group: `values` as `write(values)` makes it, `mask` a bool array. */
function nullable(
  g: Group,
  name: string,
  type: string,
  mask: Uint8Array,
  bools: BoolDatasets,
  write: (c: Group) => void,
): void {
  const c = g.create_group(name);
  encoding(c, type, "0.1.0");
  write(c);
  encoding(bools.create(c, "mask", mask) as unknown as Group, "array", "0.2.0");
}

function array(g: Group, name: string, data: Extract<FrameColumn, { kind: "numeric" }>["values"]): void {
  const ds = g.create_dataset({ name, data: data as Float64Array });
  encoding(ds as unknown as Group, "array", "0.2.0");
}

/** One dataframe column in anndata's encoding, as anndata writes its dtype. */
function column(g: Group, col: FrameColumn, bools: BoolDatasets): void {
  switch (col.kind) {
    case "string": {
      const values = col.values.map((v) => v ?? "");
      if (!col.nullable && !col.values.includes(null)) {
        stringArray(g, col.name, values);
        return;
      }
      const mask = Uint8Array.from(col.values, (v) => (v === null ? 1 : 0));
      nullable(g, col.name, "nullable-string-array", mask, bools, (c) => stringArray(c, "values", values));
      return;
    }
    case "category": {
      const c = g.create_group(col.name);
      encoding(c, "categorical", "0.2.0");
      c.create_attribute("ordered", col.ordered ? 1 : 0);
      const codes = c.create_dataset({ name: "codes", data: codesArray(col.codes, col.categories.length) });
      encoding(codes as unknown as Group, "array", "0.2.0");
      stringArray(c, "categories", col.categories);
      return;
    }
    case "bool": {
      const { nulls, values } = col;
      if (!col.nullable && !anyMissing(nulls)) {
        encoding(bools.create(g, col.name, values) as unknown as Group, "array", "0.2.0");
        return;
      }
      // pandas writes False under a missing value
      const mask = nulls ?? new Uint8Array(values.length);
      const data = values.map((v, i) => (mask[i] ? 0 : v));
      nullable(g, col.name, "nullable-boolean", mask, bools, (c) =>
        encoding(bools.create(c, "values", data) as unknown as Group, "array", "0.2.0"),
      );
      return;
    }
    case "numeric": {
      const { nulls, values } = col;
      const integer = !(values instanceof Float32Array || values instanceof Float64Array);
      if (integer && (col.nullable || anyMissing(nulls))) {
        // pandas writes 0 under a missing value
        const mask = nulls ?? new Uint8Array(values.length);
        const data = values.slice() as typeof values;
        for (let i = 0; i < data.length; i++) if (mask[i]) data[i] = typeof data[i] === "bigint" ? 0n : 0;
        nullable(g, col.name, "nullable-integer", mask, bools, (c) => array(c, "values", data));
        return;
      }
      if (!anyMissing(nulls)) {
        array(g, col.name, values);
        return;
      }
      // a float column's missing values are NaN in numpy
      const data = values.slice() as Float32Array | Float64Array;
      for (let i = 0; i < data.length; i++) if (nulls[i]) data[i] = Number.NaN;
      array(g, col.name, data);
      return;
    }
  }
}

function dataframe(
  file: Group,
  name: string,
  index: string[],
  bools: BoolDatasets,
  columns: FrameColumn[] = [],
  indexName: string | null = null,
): void {
  const g = file.create_group(name);
  encoding(g, "dataframe", "0.2.0");
  // anndata stores the index under its name (the `_index` attribute says which); an unnamed index,
  // or one named like a column, as `_index`.
  const indexKey = indexName && !columns.some((c) => c.name === indexName) ? indexName : "_index";
  g.create_attribute("_index", indexKey);
  // anndata writes an empty column list as an empty float64 array (what h5py makes of []).
  if (columns.length)
    g.create_attribute(
      "column-order",
      columns.map((c) => c.name),
    );
  else g.create_attribute("column-order", new Float64Array(0), [0]);
  stringArray(g, indexKey, index);
  for (const col of columns) column(g, col, bools);
}

const CHUNK = 1 << 16;

/**
 * `var` holds the gene names (under the gene table's index name) and the gene table's columns
 * (rows in the export's column order).
 */
export async function writeH5ad(
  path: string,
  plan: H5adMatrix,
  obsNames: string[],
  varNames: string[],
  varColumns: FrameColumn[] = [],
  varIndexName: string | null = null,
  obs?: H5adObs,
): Promise<void> {
  // HDF5 failures then throw (summarised by the command) instead of printing their whole stack.
  (await h5wasm.ready).activate_throwing_error_handler();
  const file = new h5wasm.File(path, "w");
  const bools = new BoolDatasets();
  try {
    encoding(file, "anndata", "0.1.0");
    // The data frames first: their bool placeholders then sit near the start of the file, where
    // the patch after close finds them without reading the matrix.
    if (obs) dataframe(file, "obs", obs.index, bools, obs.columns, obs.indexName);
    else dataframe(file, "obs", obsNames, bools);
    dataframe(file, "var", varNames, bools, varColumns, varIndexName);
    const X = file.create_group("X");
    encoding(X, "csr_matrix", "0.1.0");
    X.create_attribute("shape", BigInt64Array.from([BigInt(plan.nCells), BigInt(plan.nGenes)]));
    // h5wasm takes the HDF5 type from the typed array. scipy wants indices and indptr of one
    // dtype, so both are int32 (as anndata writes them) unless nnz needs int64.
    const wide = plan.nnz > 2 ** 31 - 1;
    const growable = (name: string, big: boolean) =>
      X.create_dataset({
        name,
        data: big ? new BigInt64Array(0) : new Int32Array(0),
        shape: [0],
        maxshape: [null],
        chunks: [CHUNK],
      });
    const data = growable("data", false);
    const indices = growable("indices", wide);
    const indptr = X.create_dataset({
      name: "indptr",
      data: wide ? new BigInt64Array(plan.nCells + 1) : new Int32Array(plan.nCells + 1),
    });
    let at = 0;
    let row = 0;
    for await (const part of plan.parts()) {
      const n = part.indptr[part.nCells]!;
      if (n > 0) {
        data.resize([at + n]);
        indices.resize([at + n]);
        data.write_slice([[at, at + n]], part.data.subarray(0, n));
        const idx = part.indices.subarray(0, n);
        indices.write_slice([[at, at + n]], wide ? BigInt64Array.from(idx, BigInt) : idx);
      }
      const ptr = wide
        ? BigInt64Array.from({ length: part.nCells }, (_, r) => BigInt(at + part.indptr[r + 1]!))
        : Int32Array.from({ length: part.nCells }, (_, r) => at + part.indptr[r + 1]!);
      if (part.nCells > 0) indptr.write_slice([[row + 1, row + 1 + part.nCells]], ptr);
      at += n;
      row += part.nCells;
    }
    for (const name of ["obsm", "varm", "obsp", "varp", "layers", "uns"])
      encoding(file.create_group(name), "dict", "0.1.0");
    for (const e of obs?.obsm ?? []) {
      const ds = (file.get("obsm") as Group).create_dataset({
        name: e.name,
        data: e.values,
        shape: [plan.nCells, e.k],
      });
      encoding(ds as unknown as Group, "array", "0.2.0");
    }
  } finally {
    file.close();
  }
  await bools.patch(path);
}

/** The table's rows reordered: row k of the result is row `rows[k]` of `table`. */
export function reorderRows(table: Frame, rows: Int32Array): Frame {
  const pick = <T>(src: ArrayLike<T>) => Array.from(rows, (r) => src[r]!);
  const columns = table.columns.map((c): FrameColumn => {
    switch (c.kind) {
      case "string":
        return { ...c, values: pick(c.values) };
      case "category":
        return { ...c, codes: Int32Array.from(rows, (r) => c.codes[r]!) };
      case "bool":
        return {
          ...c,
          values: Uint8Array.from(rows, (r) => c.values[r]!),
          ...(c.nulls ? { nulls: Uint8Array.from(rows, (r) => c.nulls![r]!) } : {}),
        };
      default: {
        const src = c.values;
        const values = new (src.constructor as new (n: number) => typeof src)(rows.length);
        for (let k = 0; k < rows.length; k++) values[k] = src[rows[k]!]!;
        return { ...c, values, ...(c.nulls ? { nulls: Uint8Array.from(rows, (r) => c.nulls![r]!) } : {}) };
      }
    }
  });
  return { indexName: table.indexName, index: pick(table.index), columns };
}
