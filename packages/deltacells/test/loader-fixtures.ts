/**
 * Fixtures for the loader tests: a small dataset with obs written to memory (53 cells in tiles of
 * 8, the last one of 5; 12 genes reordered by the writer), the source matrix it came from, and
 * helpers that check batches against that matrix. Not a test file itself.
 */
import assert from "node:assert/strict";
import { MemoryStore } from "@deltacells/storage";
import { type Batch, encodeTile, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import type { DenseMatrix } from "./dataset-fixtures.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";
import { obsSource } from "./obs-fixtures.js";

export const N_CELLS = 53;
export const TILE_SIZE = 8;

/** The dataset (in a MemoryStore) and its source matrix (source gene order). */
export async function loaderDataset(nCells = N_CELLS, tileSize = TILE_SIZE) {
  const store = new MemoryStore();
  const encoder = {
    encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 3 }),
  };
  await writeDataset(obsSource(nCells), store, {
    encoder,
    compress: zstdCompressor(3),
    tileSize,
    nChunks: 2,
    obs: { tilesPerFile: 3 },
  });
  // obsSource's matrix, spelled out again: randomMatrix(nCells, 12, 5).
  return { store, m: randomMatrix(nCells, 12, 5) };
}

/** A dataset of long rows (about 90 of 300 genes per cell: the loader's memcpy path), without obs. */
export async function wideDataset() {
  const store = new MemoryStore();
  const m = randomMatrix(40, 300, 9, 0.15);
  const encoder = {
    encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 3 }),
  };
  await writeDataset(memorySource(m), store, {
    encoder,
    compress: zstdCompressor(3),
    tileSize: 16,
    nChunks: 2,
  });
  return { store, m };
}

/** Row `r` of a batch as [column, value] pairs sorted by column. */
export function batchRow(b: Batch, r: number): [number, number][] {
  const out: [number, number][] = [];
  if (b.format === "csr") {
    for (let j = b.indptr[r]!; j < b.indptr[r + 1]!; j++) out.push([b.indices[j]!, b.data[j]!]);
  } else {
    for (let c = 0; c < b.nGenes; c++) {
      const v = b.values[r * b.nGenes + c]!;
      if (v !== 0) out.push([c, v]);
    }
  }
  return out.sort((x, y) => x[0] - y[0]);
}

/** Cell c of the source matrix restricted to `genes` (source indices, output order), as [column, value] pairs. */
export function sourceRow(m: DenseMatrix, c: number, genes?: ArrayLike<number>): [number, number][] {
  const out: [number, number][] = [];
  const cols = genes ?? Array.from({ length: m.nGenes }, (_, g) => g);
  for (let k = 0; k < cols.length; k++) {
    const v = m.values[c * m.nGenes + cols[k]!]!;
    if (v !== 0) out.push([k, v]);
  }
  return out;
}

/** Every row of the batch equals its cell's source row. */
export function checkBatchValues(m: DenseMatrix, b: Batch, genes?: ArrayLike<number>): void {
  for (let r = 0; r < b.size; r++) {
    assert.deepEqual(
      batchRow(b, r),
      sourceRow(m, b.cells[r]!, genes),
      `batch ${b.index} row ${r} (cell ${b.cells[r]})`,
    );
  }
}
