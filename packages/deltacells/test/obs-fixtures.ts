/** A source with a cell table of every kind and an embedding, for the obs tests. Not a test file. */
import type { ColumnTable, DatasetSource } from "../src/index.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

/** A cell table: index, category (with missing), nullable int32, int64, float32, bool with nulls, string. */
export function cellTable(n: number): ColumnTable {
  return {
    indexName: "cell id",
    index: Array.from({ length: n }, (_, i) => `cell-${i}`),
    columns: [
      {
        name: "cell type/ü",
        kind: "category",
        codes: Int32Array.from({ length: n }, (_, i) => (i % 9 === 4 ? -1 : i % 3)),
        categories: ["B", "T", "NK"],
        ordered: false,
      },
      {
        name: "maybe",
        kind: "numeric",
        values: Int32Array.from({ length: n }, (_, i) => i * 10),
        nulls: Uint8Array.from({ length: n }, (_, i) => (i % 5 === 0 ? 1 : 0)),
      },
      {
        name: "n_counts",
        kind: "numeric",
        values: BigInt64Array.from({ length: n }, (_, i) => BigInt(i * 1000)),
      },
      { name: "score", kind: "numeric", values: Float32Array.from({ length: n }, (_, i) => i / 4) },
      {
        name: "flag",
        kind: "bool",
        values: Uint8Array.from({ length: n }, (_, i) => i % 2),
        nulls: Uint8Array.from({ length: n }, (_, i) => (i === 7 ? 1 : 0)),
      },
      {
        name: "donor",
        kind: "string",
        values: Array.from({ length: n }, (_, i) => (i === 3 ? null : `d${i % 4}`)),
      },
    ],
  };
}

/** 35 cells x 12 genes with obs and a 2-column UMAP: with tileSize 10 and 3 tiles per shard, 4 tiles in 2 shards. */
export function obsSource(nCells = 35): DatasetSource {
  const m = randomMatrix(nCells, 12, 5);
  const table = cellTable(nCells);
  const umap = Float64Array.from({ length: nCells * 2 }, (_, i) => i * 0.5);
  return {
    ...memorySource(m),
    format: "h5ad",
    obs: async () => table,
    obsmKeys: async () => ["X_umap", "X_pca"],
    obsm: async (keys?: string[]) => {
      const all = {
        X_umap: { kind: "dense", shape: [nCells, 2], values: umap },
        X_pca: { kind: "dense", shape: [nCells, 5], values: new Float32Array(nCells * 5) },
      };
      return Object.fromEntries((keys ?? Object.keys(all)).map((k) => [k, all[k as keyof typeof all]]));
    },
  };
}
