/**
 * A training loader running while its dataset is rewritten: what the dataset-version tests (folder
 * and S3) check of it. Not a test file itself.
 */
import assert from "node:assert/strict";
import type { Store } from "@deltacells/storage";
import { createLoader, type Dataset, encodeTile, isDeltacellsError, writeDataset } from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { type DenseMatrix, memorySource, randomMatrix } from "./dataset-fixtures.js";
import { checkBatchValues } from "./loader-fixtures.js";

/** 200 cells in 20 tiles of 10: a loader with one-tile windows has read only a few when its first batch comes. */
export const REWRITE_CELLS = 200;

/** Writes version `seed` of the dataset into `store` (same shape for every seed: tiles of similar sizes). */
export async function writeVersion(store: Store, seed: number): Promise<DenseMatrix> {
  const m = randomMatrix(REWRITE_CELLS, 20, seed);
  await writeDataset(memorySource(m), store, {
    encoder: { encode: (rows, o) => encodeTile(rows, { ...o, level: 3 }) },
    compress: zstdCompressor(3),
    tileSize: 10,
  });
  return m;
}

/**
 * Iterates a loader over `ds` (version `before`), runs `rewrite` after its first batch, and checks
 * that the epoch stops with `DatasetChanged` and that every batch it yielded holds `before`'s rows
 * only. Returns the batches yielded.
 */
export async function loaderAcrossRewrite(
  ds: Dataset,
  before: DenseMatrix,
  rewrite: () => Promise<void>,
  opts: { threads?: number; onUnreadableTile?: "error" | "skip" } = {},
): Promise<number> {
  // One tile per shuffle window and no batch made ahead: most tiles are read after the rewrite.
  const loader = await createLoader(ds, { batchSize: 10, bufferTiles: 1, prefetch: 0, seed: 3, ...opts });
  let yielded = 0;
  try {
    const err = await (async () => {
      for await (const batch of loader) {
        checkBatchValues(before, batch);
        yielded++;
        batch.release();
        if (yielded === 1) await rewrite();
      }
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err !== undefined, `the epoch ran to its end (${yielded} batches) over a rewritten dataset`);
    assert.ok(isDeltacellsError(err, "DatasetChanged"), String(err));
    assert.match(err.message, /changed since it was opened: tiles\/tile_\d{6}\.dct was rewritten/);
    assert.match(err.message, /open it again/);
    assert.ok(yielded < loader.batchesPerEpoch, `${yielded} of ${loader.batchesPerEpoch} batches`);
    assert.equal(loader.skipped.length, 0);
  } finally {
    await loader.close();
  }
  return yielded;
}
