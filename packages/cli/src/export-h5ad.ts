/**
 * AnnData `.h5ad` output written with h5wasm: X as a `csr_matrix` group (data int32, indices
 * int32, indptr int64) filled tile by tile into resizable datasets, obs and var as `dataframe`
 * groups (var with the gene table's columns), with the encoding attributes anndata >= 0.8 expects.
 */
import type { SourceColumn, SourceTable } from "@deltacells/core";
import h5wasm, { type Group } from "h5wasm/node";
import type { ExportedObs } from "./export-obs.js";
import type { ExportPlan } from "./export-rows.js";

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

/** One dataframe column in anndata's encoding. */
function column(g: Group, col: SourceColumn): void {
  switch (col.kind) {
    case "string":
      stringArray(
        g,
        col.name,
        col.values.map((v) => v ?? ""),
      );
      return;
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
      // h5wasm cannot write HDF5's bool enum: the column reads back as uint8 (0/1), or as float64
      // with NaN for the missing values when it has any (nullable-boolean needs a bool mask).
      const nulls = col.nulls;
      const data =
        nulls?.some((x) => x !== 0) === true
          ? Float64Array.from(col.values, (v, i) => (nulls[i] ? Number.NaN : v))
          : col.values;
      const ds = g.create_dataset({ name: col.name, data });
      encoding(ds as unknown as Group, "array", "0.2.0");
      return;
    }
    case "numeric": {
      // anndata's nullable-integer encoding needs an HDF5 bool mask, which h5wasm cannot write:
      // a column with missing values is written as float64 with NaN for them.
      let values: typeof col.values | Float64Array = col.values;
      if (col.nulls) {
        const src = col.values;
        const nulls = col.nulls;
        values = Float64Array.from({ length: src.length }, (_, i) =>
          nulls[i] ? Number.NaN : Number(src[i]!),
        );
      }
      const ds = g.create_dataset({ name: col.name, data: values });
      encoding(ds as unknown as Group, "array", "0.2.0");
      return;
    }
  }
}

function dataframe(
  file: Group,
  name: string,
  index: string[],
  columns: SourceColumn[] = [],
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
  for (const col of columns) column(g, col);
}

const CHUNK = 1 << 16;

/**
 * `var` holds the gene names (under the gene table's index name) and the gene table's columns
 * (rows in the export's column order).
 */
export async function writeH5ad(
  path: string,
  plan: ExportPlan,
  obsNames: string[],
  varNames: string[],
  varColumns: SourceColumn[] = [],
  varIndexName: string | null = null,
  obs?: ExportedObs,
): Promise<void> {
  // HDF5 failures then throw (summarised by the command) instead of printing their whole stack.
  (await h5wasm.ready).activate_throwing_error_handler();
  const file = new h5wasm.File(path, "w");
  try {
    encoding(file, "anndata", "0.1.0");
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
    if (obs) dataframe(file, "obs", obs.index, obs.columns, obs.indexName);
    else dataframe(file, "obs", obsNames);
    dataframe(file, "var", varNames, varColumns, varIndexName);
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
}

/** The table's rows reordered: row k of the result is row `rows[k]` of `table`. */
export function reorderRows(table: SourceTable, rows: Int32Array): SourceTable {
  const pick = <T>(src: ArrayLike<T>) => Array.from(rows, (r) => src[r]!);
  const columns = table.columns.map((c): SourceColumn => {
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
