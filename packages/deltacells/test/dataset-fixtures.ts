/**
 * Fixtures for the dataset tests: a small in-memory source with a gene table, and a seeded
 * generator of realistic counts. Not a test file itself.
 */
import { mulberry32 as rng } from "../../../test-utils/prng.js";
import type { CanonicalRowBlock, ColumnTable, DatasetSource } from "../src/index.js";

/** A dense cells x genes matrix of counts (row-major), small enough to spell out in tests. */
export interface DenseMatrix {
  nCells: number;
  nGenes: number;
  values: Int32Array;
}

/** A sparse random matrix with a few genes much more expressed than others and some empty cells. */
export function randomMatrix(nCells: number, nGenes: number, seed = 1, density = 0.2): DenseMatrix {
  const rand = rng(seed);
  const values = new Int32Array(nCells * nGenes);
  for (let c = 0; c < nCells; c++) {
    if (c % 7 === 3) continue; // an empty cell now and then
    for (let g = 0; g < nGenes; g++) {
      const boost = g % 5 === 0 ? 3 : 1;
      if (rand() < density * boost) values[c * nGenes + g] = 1 + Math.floor(rand() * rand() * 20 * boost);
    }
  }
  return { nCells, nGenes, values };
}

/** The source-order CSR of rows a..b of a dense matrix. */
export function denseToBlock(m: DenseMatrix, a: number, b: number): CanonicalRowBlock {
  const indptr = new Float64Array(b - a + 1);
  const idx: number[] = [];
  const val: number[] = [];
  for (let c = a; c < b; c++) {
    for (let g = 0; g < m.nGenes; g++) {
      const v = m.values[c * m.nGenes + g]!;
      if (v !== 0) {
        idx.push(g);
        val.push(v);
      }
    }
    indptr[c - a + 1] = idx.length;
  }
  return { rowStart: a, nRows: b - a, indptr, indices: Int32Array.from(idx), data: Int32Array.from(val) };
}

/** A gene table with every column kind the readers produce. */
export function geneTable(nGenes: number): ColumnTable {
  return {
    indexName: "gene_symbols",
    index: Array.from({ length: nGenes }, (_, g) => `GENE${g}`),
    columns: [
      {
        name: "gene_ids",
        kind: "string",
        values: Array.from({ length: nGenes }, (_, g) => `ENSG${String(g).padStart(8, "0")}`),
      },
      {
        name: "feature_types",
        kind: "category",
        codes: Int32Array.from({ length: nGenes }, (_, g) => (g === 1 ? -1 : g % 2)),
        categories: ["Gene Expression", "Antibody Capture"],
        ordered: false,
      },
      {
        name: "n_cells",
        kind: "numeric",
        values: BigInt64Array.from({ length: nGenes }, (_, g) => BigInt(g * 3)),
      },
      { name: "mean", kind: "numeric", values: Float64Array.from({ length: nGenes }, (_, g) => g / 7) },
      {
        name: "small",
        kind: "numeric",
        values: Int8Array.from({ length: nGenes }, (_, g) => (g % 100) - 50),
      },
      {
        name: "highly_variable",
        kind: "bool",
        values: Uint8Array.from({ length: nGenes }, (_, g) => (g % 3 === 0 ? 1 : 0)),
      },
    ],
  };
}

/** A `DatasetSource` over a dense matrix, yielding blocks of `blockCells` cells. */
export function memorySource(
  m: DenseMatrix,
  opts: { table?: ColumnTable; blockCells?: number } = {},
): DatasetSource & { passes: number } {
  const table = opts.table ?? geneTable(m.nGenes);
  const src = {
    format: "memory",
    location: "memory://fixture",
    matrixPath: "X",
    nCells: m.nCells,
    nGenes: m.nGenes,
    passes: 0,
    var: async () => table,
    async *rowBlocks(o?: { blockCells?: number }): AsyncGenerator<CanonicalRowBlock> {
      src.passes++;
      const step = opts.blockCells ?? o?.blockCells ?? 5;
      for (let a = 0; a < m.nCells; a += step) yield denseToBlock(m, a, Math.min(m.nCells, a + step));
    },
  };
  return src;
}
