/** Batch reads: two waves whatever the batch size, counted at the store, and Python's answers. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { layoutFromCoords, openReader, writeStore } from "../src/index.js";
import { coalesce } from "../src/selection.js";
import { counting, plain, python, random, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);

/** A tall store (12,000 x 20, ~5% dense) in both write modes. */
async function tall(byteAddressable: boolean) {
  const shape = [12_000, 20];
  const spec = randomCoords(shape, 0.05, 31);
  const layouts = [0, 1].map((axis) =>
    layoutFromCoords(shape, spec.coords, new Float32Array(spec.values), axis),
  );
  const backing = counting(new MemoryStore());
  // Chunked at 1,000 elements so a batch touches many chunks (and shares some).
  await writeStore(backing, layouts, byteAddressable ? { byteAddressable } : { chunk: 1000 });
  const reader = await openReader(backing, { axis: 0 });
  backing.reset();
  return { backing, reader, layout: layouts[0] as (typeof layouts)[0] };
}

function pick(count: number, seed: number, below: number): number[] {
  const next = random(seed);
  return Array.from({ length: count }, () => Math.floor(next() * below));
}

for (const byteAddressable of [true, false]) {
  const mode = byteAddressable ? "byte-addressable" : "chunked";
  test(`a ${mode} batch of 1, 10 or 10,000 positions is read in two waves`, async () => {
    const { backing, layout } = await tall(byteAddressable);
    for (const count of [1, 10, 10_000]) {
      // A fresh reader, so a chunked batch cannot lean on chunks an earlier batch left in the cache.
      // Unbounded concurrency: an instant in-memory store drains a bounded pool between hand-offs,
      // which a wave counter cannot tell from a new wave (the bound is tested on its own below).
      const reader = await openReader(backing, { axis: 0, concurrency: Number.POSITIVE_INFINITY });
      backing.reset();
      const positions = pick(count, count, 12_000);
      const selection = await reader.slicesAt(positions);
      assert.equal(backing.waves(), 2, `${count} positions`);
      assert.equal(selection.length, count);
      // Every row equals the layout's own run for that position.
      const indptr = layout.indptr as Int32Array;
      for (const row of [0, Math.floor(count / 2), count - 1]) {
        const p = positions[row] as number;
        const { values } = selection.sliceAt(row);
        assert.deepEqual(plain(values), plain(layout.data.subarray(indptr[p], indptr[p + 1])));
      }
      if (!byteAddressable) {
        const keys = backing.requests.map((r) => r.key);
        assert.equal(new Set(keys).size, keys.length, "each chunk is fetched once per batch");
        if (count === 10_000) assert.ok(keys.length > 20, "the batch spans many chunks");
      }
    }
  });
}

test("a byte-addressable batch fetches exactly its brackets and its runs", async () => {
  const { backing, reader, layout } = await tall(true);
  const positions = [4000, 10, 11, 12, 7000, 10];
  await reader.slicesAt(positions);
  const indptr = layout.indptr as Int32Array;
  const windows = coalesce(positions.map((p) => [p, p + 2]));
  const runs = coalesce(positions.map((p) => [indptr[p] as number, indptr[p + 1] as number]));
  const elements = runs.reduce((sum, [lo, hi]) => sum + hi - lo, 0);
  const ranges = backing.requests.filter((r) => r.kind === "getRange");
  assert.equal(ranges.length, backing.requests.length, "only byte ranges");
  const brackets = ranges.filter((r) => r.key.includes("/indptr/"));
  assert.equal(brackets.length, windows.length);
  assert.equal(
    brackets.reduce((sum, r) => sum + r.bytes, 0),
    windows.reduce((sum, [lo, hi]) => sum + 4 * (hi - lo), 0),
  );
  assert.equal(ranges.length - brackets.length, 2 * runs.length);
  assert.equal(
    ranges.reduce((sum, r) => sum + r.bytes, 0) - brackets.reduce((s, r) => s + r.bytes, 0),
    8 * elements,
  );
});

test("a contiguous run of positions is one bracket range and one run per array", async () => {
  const { backing, reader, layout } = await tall(true);
  const selection = await reader.slicesOver(100, 150);
  assert.deepEqual(
    backing.requests.map((r) => r.key.split("/").at(-3)),
    ["indptr", "indices", "data"],
  );
  const indptr = layout.indptr as Int32Array;
  assert.deepEqual(plain(selection.data), plain(layout.data.subarray(indptr[100], indptr[150])));
  assert.deepEqual(
    plain(selection.positions),
    Array.from({ length: 50 }, (_, k) => 100 + k),
  );
});

test("order is the caller's and repeats are answered", async () => {
  const { reader } = await tall(false);
  const selection = await reader.slicesAt([9, 3, 9, 0]);
  assert.deepEqual(plain(selection.positions), [9, 3, 9, 0]);
  for (const [row, p] of [9, 3, 9, 0].entries()) {
    const one = await reader.sliceAt(p);
    assert.deepEqual(plain(selection.sliceAt(row).positions), plain(one.positions));
    assert.deepEqual(plain(selection.sliceAt(row).values), plain(one.values));
  }
});

test("an empty batch is an empty selection and costs nothing", async () => {
  const { backing, reader } = await tall(true);
  const selection = await reader.slicesAt([]);
  assert.equal(selection.length, 0);
  assert.equal(selection.nnz, 0);
  assert.deepEqual(plain(selection.indptr), [0]);
  assert.equal(backing.requests.length, 0);
});

test("a batch with a position outside the axis is refused before any read", async () => {
  const { backing, reader } = await tall(true);
  await assert.rejects(reader.slicesAt([1, 12_000]), { _tag: "PositionError", message: /12000 positions/ });
  await assert.rejects(reader.slicesOver(11_990, 12_001), {
    _tag: "PositionError",
    message: /12000 positions/,
  });
  assert.equal(backing.requests.length, 0);
});

test("Python's slices_at gives the same selection, coordinates and dense batch", async () => {
  const shape = [9, 7, 5];
  const spec = randomCoords(shape, 0.2, 41);
  for (const byteAddressable of [false, true]) {
    const path = join(dir, `batch-${byteAddressable}.zarr`);
    await writeStore(
      new FolderStore(path),
      shape.map((_, axis) => layoutFromCoords(shape, spec.coords, new Float32Array(spec.values), axis)),
      { byteAddressable, chunk: 13 },
    );
    for (const axis of [0, 2]) {
      const positions = axis === 0 ? [8, 0, 3, 3, 4] : [4, 1, 1, 0];
      const reader = await openReader(new FolderStore(path), { axis });
      const ours = await reader.slicesAt(positions);
      const theirs = python<{
        positions: number[];
        indptr: number[];
        indices: { dtype: string; values: number[] };
        data: { dtype: string; values: number[] };
        coords: number[][];
        values: number[];
        dense: number[];
        dense_shape: number[];
      }>("slices", path, String(axis), JSON.stringify(positions));
      assert.deepEqual(plain(ours.positions), theirs.positions);
      assert.deepEqual(plain(ours.indptr), theirs.indptr);
      assert.deepEqual(plain(ours.indices), theirs.indices.values);
      assert.deepEqual(plain(ours.data), theirs.data.values);
      const { coords, values } = ours.coords();
      assert.deepEqual(coords.map(plain), theirs.coords);
      assert.deepEqual(plain(values), theirs.values);
      const dense = await reader.denseSlices(positions);
      assert.deepEqual(dense.shape, theirs.dense_shape);
      assert.deepEqual(plain(dense.values), theirs.dense);
    }
  }
});

test("a selection taken as a layout is a valid array of its own rows", async () => {
  const { reader } = await tall(false);
  const layout = (await reader.slicesAt([5, 2, 5])).asLayout();
  assert.deepEqual(layout.shape, [3, 20]);
  const backing = new MemoryStore();
  await writeStore(backing, layout);
  const again = await openReader(backing);
  assert.deepEqual(plain((await again.sliceAt(1)).values), plain((await reader.sliceAt(2)).values));
});

test("a wave of thousands of requests keeps at most 64 in flight and answers the same", async () => {
  const { backing, reader } = await tall(true);
  const positions = pick(3000, 3, 12_000);
  const bounded = await reader.slicesAt(positions);
  assert.ok(backing.requests.length > 1000);
  assert.ok(backing.maxInFlight() <= 64, `${backing.maxInFlight()} in flight`);
  const unbounded = await (
    await openReader(backing, { axis: 0, concurrency: Number.POSITIVE_INFINITY })
  ).slicesAt(positions);
  assert.deepEqual(plain(bounded.data), plain(unbounded.data));
  assert.deepEqual(plain(bounded.indptr), plain(unbounded.indptr));
});
