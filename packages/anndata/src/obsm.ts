/**
 * AnnData `obsm`: per-cell matrices (embeddings such as X_pca and X_umap, or per-cell tables),
 * read over a {@link Tree}. Browser-safe.
 *
 * Current encoding: `obsm` is a group with one element per key: a dense array, a csr_matrix or
 * csc_matrix group, or a dataframe group. Pre-0.7 h5ad: `obsm` is one compound dataset with a
 * sub-array field per key (anndata splits it into one array per field, as here).
 */

import { columnOrder, readDataFrame } from "./dataframe.js";
import { AnndataError, objectIn } from "./errors.js";
import { attrString, joinPath, type Tree, type TreeArray, toNumbers } from "./tree.js";
import type { Embedding, NumericValues } from "./types.js";

const OBSM = "obsm";

/** The obsm keys of an AnnData tree, in store order ([] when there is no obsm). */
export async function obsmKeys(tree: Tree): Promise<string[]> {
  const node = await tree.get(OBSM);
  if (node === undefined) return [];
  if (node.kind === "group") return node.keys();
  if (node.fields) return node.fields.map((f) => f.name);
  throw new AnndataError(
    `${tree.location}: obsm is an array that is not a record array; expected a group (or a pre-0.7 compound dataset).`,
    { tag: "MalformedInput", object: objectIn(tree.location, OBSM) },
  );
}

/** Reads one obsm entry, whole; `nCells` is the length the first axis must have. */
export async function readObsmEntry(tree: Tree, key: string, nCells: number): Promise<Embedding> {
  const loc = tree.location;
  const obsm = await tree.get(OBSM);
  if (obsm?.kind === "array") return legacyEntry(tree, obsm, key, nCells);
  const path = joinPath(OBSM, key);
  const node = await tree.get(path);
  if (node === undefined) {
    throw new AnndataError(`${loc}: has no obsm entry ${JSON.stringify(key)}.`, {
      tag: "MissingMatrix",
      object: objectIn(loc, path),
    });
  }
  const enc = attrString((await node.attrs())["encoding-type"]);
  let entry: Embedding;
  if (node.kind === "array") {
    if (enc !== undefined && enc !== "array") throw unsupported(tree, key, path, JSON.stringify(enc));
    entry = await denseEntry(tree, key, node);
  } else if (enc === "csr_matrix" || enc === "csc_matrix") {
    entry = await sparseEntry(tree, key, path, enc);
  } else if (enc === "dataframe") {
    const table = await readDataFrame(tree, path, nCells);
    entry = { kind: "table", name: key, shape: [table.index.length, table.columns.length], table };
  } else {
    throw unsupported(
      tree,
      key,
      path,
      enc === undefined ? "none (a group without encoding-type)" : JSON.stringify(enc),
    );
  }
  if (entry.shape[0] !== nCells) {
    throw new AnndataError(
      `${loc}: obsm entry ${JSON.stringify(key)} has ${entry.shape[0]} rows, but the matrix has ${nCells} cells.`,
      { tag: "MalformedInput", object: objectIn(loc, path) },
    );
  }
  return entry;
}

/** `encoding`: a quoted encoding-type, or a description of what was found instead. */
function unsupported(tree: Tree, key: string, path: string, encoding: string): AnndataError {
  return new AnndataError(
    `${tree.location}: obsm entry ${JSON.stringify(key)} (${path}) has encoding ${encoding}, ` +
      "which is not supported: only dense numeric arrays, csr_matrix, csc_matrix and dataframe entries are read. " +
      "Read the other entries by name, or convert this one (e.g. to a numeric array) with anndata.",
    { tag: "Unsupported", object: objectIn(tree.location, path) },
  );
}

/** The numpy name of an element type ("float32", "int64", "bool"). */
function dtypeOf(kind: string, itemSize: number): string {
  return kind === "bool" ? "bool" : `${kind}${itemSize * 8}`;
}

async function denseEntry(tree: Tree, key: string, a: TreeArray): Promise<Embedding> {
  if (a.element !== "float" && a.element !== "int" && a.element !== "uint" && a.element !== "bool") {
    const what = a.element === "string" ? "string-array" : a.element === "compound" ? "rec-array" : a.element;
    throw unsupported(tree, key, a.path, JSON.stringify(what));
  }
  if (a.shape.length === 0) {
    throw new AnndataError(`${tree.location}: obsm entry ${JSON.stringify(key)} is a scalar.`, {
      tag: "MalformedInput",
      object: objectIn(tree.location, a.path),
    });
  }
  return {
    kind: "dense",
    name: key,
    shape: [...a.shape],
    dtype: dtypeOf(a.element, a.itemSize),
    values: await a.read(),
  };
}

async function sparseEntry(
  tree: Tree,
  key: string,
  path: string,
  enc: "csr_matrix" | "csc_matrix",
): Promise<Embedding> {
  const loc = tree.location;
  const bad = (what: string) =>
    new AnndataError(`${loc}: obsm entry ${JSON.stringify(key)} (${enc}): ${what}.`, {
      tag: "MalformedInput",
      object: objectIn(loc, path),
    });
  const part = async (name: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, name));
    if (a?.kind !== "array") throw bad(`no ${name} array`);
    return a;
  };
  const attrs = (await (await tree.get(path))?.attrs()) ?? {};
  const shape = Array.from((attrs.shape ?? []) as ArrayLike<number | bigint>, Number);
  if (shape.length !== 2 || !shape.every((n) => Number.isInteger(n) && n >= 0))
    throw bad("no valid shape attribute");
  const [nRows, nCols] = shape as [number, number];
  const dataArray = await part("data");
  const indptr = Float64Array.from(toNumbers(await (await part("indptr")).read()));
  const indices = Int32Array.from(toNumbers(await (await part("indices")).read()));
  const data = await dataArray.read();
  const [nMajor, nMinor] = enc === "csr_matrix" ? [nRows, nCols] : [nCols, nRows];
  const nnz = indices.length;
  if (indptr.length !== nMajor + 1) throw bad(`indptr has ${indptr.length} entries, expected ${nMajor + 1}`);
  if (data.length !== nnz) throw bad(`data has ${data.length} entries but indices ${nnz}`);
  if (indptr[0] !== 0 || indptr[nMajor] !== nnz) throw bad(`indptr does not run from 0 to ${nnz}`);
  for (let i = 0; i < nMajor; i++) {
    if ((indptr[i + 1] as number) < (indptr[i] as number)) throw bad(`indptr decreases at ${i}`);
  }
  for (let k = 0; k < nnz; k++) {
    const j = indices[k] as number;
    if (j < 0 || j >= nMinor) throw bad(`index ${j} at entry ${k} is outside [0, ${nMinor})`);
  }
  const csr =
    enc === "csr_matrix" ? { indptr, indices, data } : transpose(nCols, nRows, indptr, indices, data);
  return {
    kind: "sparse",
    name: key,
    shape: [nRows, nCols],
    dtype: dtypeOf(dataArray.element, dataArray.itemSize),
    ...csr,
  };
}

/**
 * CSC (nCols columns over nRows rows) to CSR by a stable counting sort on the row: within a row,
 * entries come in column order, duplicates kept (the result of scipy's `tocsr()`).
 */
function transpose(
  nCols: number,
  nRows: number,
  colPtr: Float64Array,
  rowIdx: Int32Array,
  values: NumericValues,
): { indptr: Float64Array; indices: Int32Array; data: NumericValues } {
  const nnz = rowIdx.length;
  const indptr = new Float64Array(nRows + 1);
  for (let k = 0; k < nnz; k++) indptr[(rowIdx[k] as number) + 1]! += 1;
  for (let r = 0; r < nRows; r++) indptr[r + 1]! += indptr[r] as number;
  const next = indptr.slice(0, nRows);
  const indices = new Int32Array(nnz);
  const data = new (values.constructor as new (n: number) => NumericValues)(nnz);
  for (let c = 0; c < nCols; c++) {
    for (let k = colPtr[c] as number; k < (colPtr[c + 1] as number); k++) {
      const r = rowIdx[k] as number;
      const at = next[r] as number;
      next[r] = at + 1;
      indices[at] = c;
      data[at] = values[k] as never;
    }
  }
  return { indptr, indices, data };
}

/** Pre-0.7: one sub-array field of the compound obsm dataset per key. */
async function legacyEntry(tree: Tree, obsm: TreeArray, key: string, nCells: number): Promise<Embedding> {
  const loc = tree.location;
  const field = obsm.fields?.find((f) => f.name === key);
  if (field === undefined) {
    throw new AnndataError(`${loc}: has no obsm entry ${JSON.stringify(key)}.`, {
      tag: "MissingMatrix",
      object: objectIn(loc, OBSM),
    });
  }
  if (field.kind !== "float" && field.kind !== "int" && field.kind !== "uint" && field.kind !== "bool") {
    throw unsupported(tree, key, `${OBSM}[${key}]`, `none (a ${field.kind} field of a pre-0.7 record array)`);
  }
  const n = obsm.shape[0] ?? 0;
  if (n !== nCells) {
    throw new AnndataError(
      `${loc}: the pre-0.7 obsm record array has ${n} rows, but the matrix has ${nCells} cells.`,
      { tag: "MalformedInput", object: objectIn(loc, OBSM) },
    );
  }
  const values = (await obsm.readCompound()).get(key);
  if (values === undefined || Array.isArray(values)) {
    throw unsupported(tree, key, `${OBSM}[${key}]`, "none (an unreadable field of a pre-0.7 record array)");
  }
  return {
    kind: "dense",
    name: key,
    shape: [n, ...(field.shape ?? [])],
    dtype: dtypeOf(field.kind, field.itemSize),
    values,
  };
}

/**
 * The kind and shape of one obsm entry, from its metadata (no values read): "dense" (a numeric
 * array), "sparse", "table" (a dataframe: cells x columns), or "other" (an encoding the reader
 * does not represent, shape as stored when known).
 */
export async function obsmShape(
  tree: Tree,
  key: string,
  nCells: number,
): Promise<{ kind: "dense" | "sparse" | "table" | "other"; shape: number[] }> {
  const obsm = await tree.get(OBSM);
  if (obsm?.kind === "array") {
    const field = obsm.fields?.find((f) => f.name === key);
    const numeric = field && ["float", "int", "uint", "bool"].includes(field.kind);
    return { kind: numeric ? "dense" : "other", shape: [obsm.shape[0] ?? 0, ...(field?.shape ?? [])] };
  }
  const node = await tree.get(joinPath(OBSM, key));
  if (node === undefined) return { kind: "other", shape: [] };
  const attrs = await node.attrs();
  const enc = attrString(attrs["encoding-type"]);
  if (node.kind === "array") {
    const numeric = ["float", "int", "uint", "bool"].includes(node.element);
    return {
      kind: numeric && (enc === undefined || enc === "array") ? "dense" : "other",
      shape: [...node.shape],
    };
  }
  if (enc === "csr_matrix" || enc === "csc_matrix")
    return { kind: "sparse", shape: Array.from((attrs.shape ?? []) as ArrayLike<number | bigint>, Number) };
  if (enc === "dataframe") {
    return { kind: "table", shape: [nCells, columnOrder(attrs["column-order"]).length] };
  }
  return { kind: "other", shape: [] };
}
