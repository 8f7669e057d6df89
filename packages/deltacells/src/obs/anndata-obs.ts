/**
 * The obs of a range of cells rebuilt as AnnData holds them (what `deltacells export` writes to an
 * `.h5ad`): the index from the column named in `metadata.obs_index` (with the pandas index name of
 * `metadata.obs_index_name`), the embedding columns `KEY_0..` back into float32 `obsm[KEY]`, every
 * other column as a table column (ordered categoricals and pandas nullable columns as the
 * converter recorded them in `metadata.obs_ordered` and `metadata.obs_nullable`).
 * A dataset whose metadata names no index column (one written by another implementation: the
 * metadata is free-form) keeps every column, and its cells are named by their numbers in the
 * dataset, as an AnnData without obs names has them.
 */
import type { Dataset } from "../dataset/reader.js";
import type { TableColumn as FrameColumn } from "../dataset/source.js";
import type { ObsColumn } from "./frame.js";
import { numericValues, type ObsNumericType } from "./schema.js";

/** A range of cells' obs as AnnData holds them: what `writeH5ad` of @deltacells/anndata/node takes. */
export interface AnnDataObs {
  /** The pandas name of the index, or null when it has none. */
  indexName: string | null;
  /** The index labels (obs_names), one per cell. */
  index: string[];
  /** The other columns, in the dataset's order. */
  columns: FrameColumn[];
  /** The embeddings, `k` float32 values per cell, row-major. */
  obsm: { name: string; k: number; values: Float32Array }[];
}

/** Values of rows `[a, b)` of a column, with a null mask when any is missing, tile batch by tile batch. */
function slice(col: ObsColumn, a: number, b: number): { values: unknown[]; nulls: Uint8Array | undefined } {
  const values = new Array<unknown>(b - a);
  let nulls: Uint8Array | undefined;
  let start = 0;
  for (const batch of col.table.batches) {
    const end = start + batch.numRows;
    if (end > a && start < b) {
      const v = batch.getChildAt(0)!;
      for (let i = Math.max(a, start); i < Math.min(b, end); i++) {
        const x = v.get(i - start);
        if (x === null || x === undefined) {
          nulls ??= new Uint8Array(b - a);
          nulls[i - a] = 1;
        }
        values[i - a] = x;
      }
    }
    start = end;
  }
  return { values, nulls };
}

function tableColumn(col: ObsColumn, a: number, b: number): FrameColumn {
  const { values, nulls } = slice(col, a, b);
  switch (col.kind) {
    case "category":
      return {
        name: col.name,
        kind: "category",
        codes: Int32Array.from(values, (c) => Number(c ?? -1)),
        categories: col.categories!,
        ordered: false,
      };
    case "bool":
      return {
        name: col.name,
        kind: "bool",
        values: Uint8Array.from(values, (v) => (v ? 1 : 0)),
        ...(nulls && { nulls }),
      };
    case "string":
      return {
        name: col.name,
        kind: "string",
        values: values.map((v) => (typeof v === "string" ? v : null)),
      };
    default: {
      const out = numericValues(col.arrowType as ObsNumericType, values);
      return { name: col.name, kind: "numeric", values: out as never, ...(nulls && { nulls }) };
    }
  }
}

/**
 * The index labels of cells `[a, b)`: a category column's labels (not its codes), any other
 * column's values as text, a missing one as "".
 */
function indexLabels(col: ObsColumn, a: number, b: number): string[] {
  const { values } = slice(col, a, b);
  if (col.kind === "category") {
    const categories = col.categories!;
    return values.map((c) => (c === null || c === undefined || Number(c) < 0 ? "" : categories[Number(c)]!));
  }
  return values.map((v) => (v === null || v === undefined ? "" : String(v)));
}

/**
 * The obs of cells `[a, b)` of `ds` as AnnData holds them (see {@link AnnDataObs}), or undefined
 * when the dataset has none.
 */
export async function anndataObs(ds: Dataset, a: number, b: number): Promise<AnnDataObs | undefined> {
  if (!ds.manifest.has_obs) return undefined;
  const frame = await ds.obs();
  const md = ds.manifest.metadata as {
    obs_index?: string;
    obs_index_name?: string | null;
    obs_embeddings?: Record<string, number>;
  };
  // No named index: no column is taken for one (a first column of labels would become
  // repeated cell names and leave obs).
  const indexColumn = md.obs_index;
  const embeddings = Object.entries(md.obs_embeddings ?? {});
  const embedded = new Set(
    embeddings.flatMap(([key, k]) => Array.from({ length: k }, (_, j) => `${key}_${j}`)),
  );
  const ordered = new Set((ds.manifest.metadata.obs_ordered as string[] | undefined) ?? []);
  const nullable = new Set((ds.manifest.metadata.obs_nullable as string[] | undefined) ?? []);
  const index =
    indexColumn === undefined
      ? Array.from({ length: b - a }, (_, i) => String(a + i))
      : indexLabels(frame.column(indexColumn), a, b);
  const columns = frame.columns
    .filter((c) => c.name !== indexColumn && !embedded.has(c.name))
    .map((c): FrameColumn => {
      const t = tableColumn(c, a, b);
      if (t.kind === "category") return { ...t, ordered: ordered.has(c.name) };
      return nullable.has(c.name) ? { ...t, nullable: true } : t;
    });
  const obsm = embeddings.map(([name, k]) => {
    const values = new Float32Array((b - a) * k);
    for (let j = 0; j < k; j++) {
      const { values: col } = slice(frame.column(`${name}_${j}`), a, b);
      col.forEach((v, i) => {
        values[i * k + j] = v === null || v === undefined ? Number.NaN : Number(v);
      });
    }
    return { name, k, values };
  });
  return {
    indexName:
      indexColumn === undefined ? null : md.obs_index_name === undefined ? indexColumn : md.obs_index_name,
    index,
    columns,
    obsm,
  };
}

/**
 * The names of cells `[a, b)` of `ds` (the obs index, as {@link anndataObs} gives it), reading
 * that one column; the cells' numbers in the dataset when it has no obs or names no index column.
 */
export async function cellNames(ds: Dataset, a: number, b: number): Promise<string[]> {
  const indexColumn = ds.manifest.has_obs ? ds.manifest.metadata.obs_index : undefined;
  if (typeof indexColumn !== "string") return Array.from({ length: b - a }, (_, i) => String(a + i));
  const frame = await ds.obs([indexColumn]);
  return indexLabels(frame.column(indexColumn), a, b);
}

/**
 * The gene names of `ds` in the converted input's order (what its sporadik companion and an export
 * use), from `var_names.txt` and `gene_order.npy`; in the dataset's order when it has no
 * gene_order.npy; undefined when it has no names.
 */
export async function sourceGeneNames(ds: Dataset): Promise<string[] | undefined> {
  const names = await ds.geneNames();
  const order = await ds.geneOrder();
  if (names === undefined || order === undefined) return names;
  const out = new Array<string>(names.length);
  for (let j = 0; j < names.length; j++) out[order[j]!] = names[j]!;
  return out;
}
