/**
 * A synthetic count matrix of any size, streamed as row blocks like the input readers do, for
 * benchmarks of the dataset writer. Realistic rather than uniform: gene popularities are
 * heavy-tailed (log-normal), each cell has a log-normal size factor, the genes a cell expresses
 * are drawn in proportion to popularity, and each expressed gene's count is 1 + a gamma-Poisson
 * (negative binomial) draw scaled by gene mean and cell size. Drawing the expressed genes instead of
 * sampling every gene of every cell keeps generation O(nonzeros), which is what makes 1M cells
 * feasible here. Deterministic: block b is generated from seed + b, so both writer passes agree.
 */
import type { CanonicalRowBlock, ColumnTable, DatasetSource } from "@deltacells/core";
import { mulberry32 } from "../test-utils/prng.js";

export interface SyntheticOptions {
  nCells: number;
  nGenes?: number;
  /** Mean number of expressed genes per cell. */
  genesPerCell?: number;
  seed?: number;
  /**
   * Give the source a cell table of 10 columns as converters see them (a barcode index, three
   * categoricals, int64, float32, float64, bool, a nullable Int32, a free string) and a 2-column
   * obsm X_umap, which becomes two more columns.
   */
  obs?: boolean;
}

/** The synthetic cell table: deterministic, about 100 bytes per cell in memory. */
function syntheticObs(nCells: number, seed: number): { table: ColumnTable; umap: Float32Array } {
  const r = mulberry32(seed * 31 + 7);
  const types = Array.from({ length: 20 }, (_, i) => `type_${i}`);
  const batches = Array.from({ length: 8 }, (_, i) => `batch_${i}`);
  const phases = ["G1", "S", "G2M"];
  const cats = (n: number) =>
    Int32Array.from({ length: nCells }, () => Math.floor(r() * n) - (r() < 0.01 ? 1 : 0));
  const maybe = new Uint8Array(nCells).map(() => (r() < 0.05 ? 1 : 0));
  const table: ColumnTable = {
    indexName: "barcode",
    index: Array.from({ length: nCells }, (_, i) => `CELL${String(i).padStart(8, "0")}-1`),
    columns: [
      { name: "cell_type", kind: "category", codes: cats(types.length), categories: types, ordered: false },
      { name: "batch", kind: "category", codes: cats(batches.length), categories: batches, ordered: false },
      { name: "phase", kind: "category", codes: cats(phases.length), categories: phases, ordered: false },
      {
        name: "n_counts",
        kind: "numeric",
        values: BigInt64Array.from({ length: nCells }, () => BigInt(Math.floor(r() * 5000))),
      },
      {
        name: "percent_mito",
        kind: "numeric",
        values: Float32Array.from({ length: nCells }, () => r() * 0.2),
      },
      { name: "score", kind: "numeric", values: Float64Array.from({ length: nCells }, () => normal(r)) },
      {
        name: "is_doublet",
        kind: "bool",
        values: Uint8Array.from({ length: nCells }, () => (r() < 0.1 ? 1 : 0)),
      },
      {
        name: "n_genes",
        kind: "numeric",
        values: Int32Array.from({ length: nCells }, () => Math.floor(r() * 3000)),
        nulls: maybe,
      },
      {
        name: "sample",
        kind: "string",
        values: Array.from({ length: nCells }, (_, i) => `sample-${i % 97}`),
      },
    ],
  };
  const umap = Float32Array.from({ length: nCells * 2 }, () => normal(r) * 5);
  return { table, umap };
}

function normal(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(rand() + 1e-300)) * Math.cos(2 * Math.PI * rand());
}

/** Marsaglia-Tsang gamma(shape, 1). */
function gamma(rand: () => number, shape: number): number {
  if (shape < 1) return gamma(rand, shape + 1) * rand() ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = normal(rand);
    const v = (1 + c * x) ** 3;
    if (v > 0 && Math.log(rand() + 1e-300) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

function poisson(rand: () => number, lambda: number): number {
  if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * normal(rand)));
  const l = Math.exp(-lambda);
  let k = 0;
  let p = rand();
  while (p > l) {
    k++;
    p *= rand();
  }
  return k;
}

/** Walker's alias table: O(1) draws from a discrete distribution. */
function aliasTable(weights: Float64Array): { prob: Float64Array; alias: Int32Array } {
  const n = weights.length;
  const sum = weights.reduce((a, b) => a + b, 0);
  const prob = new Float64Array(n);
  const alias = new Int32Array(n);
  const scaled = Float64Array.from(weights, (w) => (w * n) / sum);
  const small: number[] = [];
  const large: number[] = [];
  for (let i = 0; i < n; i++) (scaled[i]! < 1 ? small : large).push(i);
  while (small.length && large.length) {
    const s = small.pop()!;
    const l = large.pop()!;
    prob[s] = scaled[s]!;
    alias[s] = l;
    scaled[l] = scaled[l]! + scaled[s]! - 1;
    (scaled[l]! < 1 ? small : large).push(l);
  }
  for (const i of [...small, ...large]) prob[i] = 1;
  return { prob, alias };
}

export function syntheticSource(opts: SyntheticOptions): DatasetSource {
  const nCells = opts.nCells;
  const nGenes = opts.nGenes ?? 33_000;
  const perCell = opts.genesPerCell ?? 1500;
  const seed = opts.seed ?? 1;
  const rand = mulberry32(seed);
  const popularity = Float64Array.from({ length: nGenes }, () => Math.exp(1.5 * normal(rand)));
  const { prob, alias } = aliasTable(popularity);
  const meanPop = popularity.reduce((a, b) => a + b, 0) / nGenes;
  const table: ColumnTable = {
    indexName: null,
    index: Array.from({ length: nGenes }, (_, g) => `SYN${g}`),
    columns: [
      {
        name: "gene_ids",
        kind: "string",
        values: Array.from({ length: nGenes }, (_, g) => `ENSSYN${String(g).padStart(8, "0")}`),
      },
    ],
  };
  const obs = opts.obs ? syntheticObs(nCells, seed) : undefined;
  return {
    ...(obs && {
      obs: async () => obs.table,
      obsmKeys: async () => ["X_umap"],
      obsm: async () => ({ X_umap: { kind: "dense", shape: [nCells, 2], values: obs.umap } }),
    }),
    format: "synthetic",
    location: `synthetic:${nCells}x${nGenes}@${perCell}`,
    matrixPath: "X",
    nCells,
    nGenes,
    var: async () => table,
    async *rowBlocks(o?: { blockCells?: number }): AsyncGenerator<CanonicalRowBlock> {
      const blockCells = o?.blockCells ?? 4096;
      const drawn = new Int32Array(nGenes);
      for (let start = 0, b = 0; start < nCells; start += blockCells, b++) {
        const r = mulberry32(seed * 7919 + b);
        const rows = Math.min(blockCells, nCells - start);
        const indptr = new Float64Array(rows + 1);
        let cap = Math.ceil(rows * perCell * 1.5) + 64;
        let indices = new Int32Array(cap);
        let data = new Int32Array(cap);
        let nnz = 0;
        for (let c = 0; c < rows; c++) {
          const size = Math.exp(0.5 * normal(r) - 0.125);
          const want = Math.min(nGenes, Math.max(1, Math.round(perCell * size)));
          if (nnz + want > cap) {
            cap = Math.ceil((nnz + want) * 1.5);
            const i2 = new Int32Array(cap);
            i2.set(indices.subarray(0, nnz));
            const d2 = new Int32Array(cap);
            d2.set(data.subarray(0, nnz));
            indices = i2;
            data = d2;
          }
          const rowStart = nnz;
          for (let k = 0; k < want; k++) {
            const u = r() * nGenes;
            const i = Math.floor(u);
            const g = u - i < prob[i]! ? i : alias[i]!;
            if (drawn[g] === 0) {
              drawn[g] = 1;
              indices[nnz++] = g;
            }
          }
          const row = indices.subarray(rowStart, nnz);
          row.sort();
          for (let k = rowStart; k < nnz; k++) {
            const g = indices[k]!;
            drawn[g] = 0;
            // negative binomial: Poisson with a gamma-distributed rate (dispersion shape 2)
            const mean = (popularity[g]! / meanPop) * size * 0.8;
            data[k] = 1 + poisson(r, (gamma(r, 2) / 2) * mean);
          }
          indptr[c + 1] = nnz;
        }
        yield {
          rowStart: start,
          nRows: rows,
          indptr,
          indices: indices.slice(0, nnz),
          data: data.slice(0, nnz),
        };
      }
    },
  };
}
