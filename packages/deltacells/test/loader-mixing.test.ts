/**
 * The mixing report: entropies and counts of constructed batches checked against the formula by
 * hand, the random reference as a property of the dataset, and a loader's epoch measured through
 * the dataset's obs (by cell index) against the labels the loader itself attached to each batch.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLoader, isDeltacellsError, MixingMeter, mixingMeter, openDataset } from "../src/index.js";
import { loaderDataset } from "./loader-fixtures.js";

const close = (a: number, b: number, what: string, eps = 1e-9) =>
  assert.ok(Math.abs(a - b) <= eps, `${what}: ${a} vs ${b}`);

/** 16 cells in 4 tiles of 4, labels 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3 (sorted, as an atlas by donor). */
const sorted = () =>
  new MixingMeter(
    "donor",
    Int32Array.from({ length: 16 }, (_, c) => c >> 2),
    4,
    [4, 4, 4, 4],
  );

test("a batch from one tile of one label has entropy 0; a batch of four labels evenly, 2 bits", () => {
  const meter = sorted();
  meter.add([0, 1, 2, 3]);
  meter.add([0, 4, 8, 12]);
  meter.add(Float64Array.of(5, 6, 9, 10, 99), 4); // only the first 4 rows count
  const r = meter.report();
  assert.equal(r.batches, 3);
  assert.equal(r.rows, 12);
  assert.equal(r.labels, 4);
  close(r.datasetEntropy, 2, "dataset entropy");
  close(r.batchEntropy.min, 0, "one label");
  close(r.batchEntropy.max, 2, "four labels evenly");
  close(r.batchEntropy.median, 1, "two labels evenly");
  close(r.batchEntropy.mean, 1, "mean");
  close(r.entropyRatio, 0.5, "ratio");
  assert.deepEqual(r.tilesPerBatch, { mean: 7 / 3, min: 1, median: 2, max: 4 });
  assert.deepEqual(r.labelsPerBatch, { mean: 7 / 3, min: 1, median: 2, max: 4 });
});

test("missing labels count as one more label, and the entropy follows the formula", () => {
  // Labels 0, 0, 1, missing: p = 1/2, 1/4, 1/4.
  const meter = new MixingMeter("x", Int32Array.of(0, 0, 1, -1), 2, [4]);
  meter.add([0, 1, 2, 3]);
  const r = meter.report();
  close(r.datasetEntropy, 1.5, "dataset");
  close(r.batchEntropy.mean, 1.5, "batch");
  assert.equal(r.labels, 3);
});

test("the random reference is that of random batches of the sizes seen: the same every time, below the dataset's", () => {
  const report = () => {
    const meter = sorted();
    meter.add([0, 1, 2, 3]);
    meter.add([4, 5, 6, 7]);
    return meter.report();
  };
  const a = report();
  assert.deepEqual(report(), a);
  // 4 cells drawn from 16 of 4 labels (4 each): below 2 bits, well above the sorted batches' 0.
  assert.ok(a.randomBatchEntropy < 2 && a.randomBatchEntropy > 1.2, String(a.randomBatchEntropy));
  close(a.randomRatio, 0, "sorted batches against random ones");
  // A batch of every cell holds the dataset's distribution exactly.
  const whole = sorted();
  whole.add(Array.from({ length: 16 }, (_, c) => c));
  close(whole.report().randomBatchEntropy, 2, "a batch of the whole dataset");
});

test("over a loader's epoch the report agrees with the labels the loader attached to each batch", async () => {
  const { store } = await loaderDataset(200, 8);
  const ds = await openDataset(store);
  const column = "cell type/ü";
  for (const bufferTiles of [1, 8]) {
    const meter = await mixingMeter(ds, column);
    const loader = await createLoader(ds, { batchSize: 16, seed: 3, bufferTiles, obs: [column] });
    const entropies: number[] = [];
    const tiles: number[] = [];
    for await (const b of loader) {
      meter.add(b.cells);
      const col = b.obs[column]!;
      assert.equal(col.kind, "category");
      const counts = new Map<number, number>();
      for (const code of col.kind === "category" ? col.codes : [])
        counts.set(code, (counts.get(code) ?? 0) + 1);
      entropies.push(-[...counts.values()].reduce((h, k) => h + (k / b.size) * Math.log2(k / b.size), 0));
      tiles.push(new Set([...b.cells].map((c) => Math.floor(c / 8))).size);
      b.release();
    }
    const r = meter.report();
    close(r.batchEntropy.mean, entropies.reduce((a, b) => a + b) / entropies.length, "mean entropy");
    close(r.tilesPerBatch.mean, tiles.reduce((a, b) => a + b) / tiles.length, "tiles per batch");
    assert.equal(r.tilesPerBatch.max, Math.max(...tiles));
    if (bufferTiles === 1)
      assert.ok(r.tilesPerBatch.max <= 3, "one tile a window: a batch spans at most 3 tiles");
    else assert.ok(r.tilesPerBatch.mean > 4, `windows of 8 tiles: ${r.tilesPerBatch.mean} tiles per batch`);
  }
});

test("a numeric column is refused: the report counts labels", async () => {
  const { store } = await loaderDataset(40, 8);
  const ds = await openDataset(store);
  await assert.rejects(mixingMeter(ds, "score"), (e: unknown) => {
    assert.ok(isDeltacellsError(e, "InvalidInput"));
    assert.match(e.message, /"score" .* is numeric: .* category or bool column/);
    return true;
  });
  const flags = (await mixingMeter(ds, "flag")).report();
  assert.equal(flags.labels, 3, "false, true and one missing");
});
