/**
 * Resuming and memory: a loader created from another's state yields exactly the batches that one
 * had not yet yielded, from every position of a small epoch, and fetches only the tiles those
 * batches hold; tiles are decoded ahead only as far as the memory cap allows.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type RangeQuery, type ReadableStore, withStats } from "@deltacells/storage";
import {
  createLoader,
  type Dataset,
  isDeltacellsError,
  type LoaderOptions,
  openDataset,
  tileKey,
} from "../src/index.js";
import { loaderDataset, TILE_SIZE } from "./loader-fixtures.js";

/** A store that records the keys of the objects read. */
function recording(inner: ReadableStore) {
  const keys: string[] = [];
  const store = {
    url: "memory://recording",
    get: (k: string, o?: object) => {
      keys.push(k);
      return inner.get(k, o);
    },
    getRange: (k: string, r: RangeQuery, o?: object) => inner.getRange(k, r, o),
  };
  return { store, keys };
}

/** The cells of every batch a loader yields until `stopAfter` batches (or the epoch's end). */
async function cellsOf(ds: Dataset, opts: LoaderOptions, stopAfter = Number.POSITIVE_INFINITY) {
  const loader = await createLoader(ds, opts);
  const batches: number[][] = [];
  if (stopAfter > 0)
    for await (const b of loader) {
      batches.push([...b.cells]);
      b.release();
      if (batches.length === stopAfter) break;
    }
  return { batches, state: loader.state(), loader };
}

const tileOf = (cell: number) => Math.floor(cell / TILE_SIZE);

for (const opts of [
  { batchSize: 4, seed: 3, epoch: 1, worldSize: 2, rank: 1, bufferTiles: 1 },
  { batchSize: 3, seed: 3, epoch: 2, worldSize: 3, rank: 2, bufferTiles: 1, dropLast: true },
  { batchSize: 4, seed: 8, epoch: 0, worldSize: 2, rank: 0, bufferTiles: 1, shuffle: false },
] satisfies LoaderOptions[]) {
  test(`resuming from every batch yields exactly the rest and reads only its tiles (${JSON.stringify(opts)})`, async () => {
    const { store } = await loaderDataset();
    const rec = recording(store);
    const ds = await openDataset(rec.store);
    const full = (await cellsOf(ds, opts)).batches;
    assert.ok(full.length >= 4, `${full.length} batches`);
    for (let k = 0; k <= full.length; k++) {
      const { state } = await cellsOf(ds, opts, k);
      const saved = JSON.parse(JSON.stringify(state));
      rec.keys.length = 0;
      const rest = await cellsOf(ds, { resume: saved });
      if (k === full.length) {
        // A finished epoch resumes into the next one.
        assert.equal(saved.epoch, opts.epoch + 1);
        assert.equal(saved.batchesYielded, 0);
        continue;
      }
      assert.equal(saved.epoch, opts.epoch);
      assert.equal(saved.batchesYielded, k);
      assert.deepEqual(rest.batches, full.slice(k), `resumed at batch ${k}`);
      // One window per tile here: the tiles read are exactly those of the cells still to come.
      const expected = [...new Set(full.slice(k).flat().map(tileOf))].map(tileKey).sort();
      assert.deepEqual([...rec.keys].sort(), expected, `tiles read when resuming at batch ${k}`);
    }
  });
}

test("startBatch resumes like a state; a state refuses contradicting options and another dataset", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const opts = { batchSize: 6, seed: 4, epoch: 3, bufferTiles: 3 };
  const full = (await cellsOf(ds, opts)).batches;
  assert.deepEqual((await cellsOf(ds, { ...opts, startBatch: 5 })).batches, full.slice(5));
  const { state } = await cellsOf(ds, opts, 2);
  assert.deepEqual((await cellsOf(ds, { resume: state, batchSize: 6 })).batches, full.slice(2));
  await assert.rejects(
    createLoader(ds, { resume: state, batchSize: 7 }),
    (e) => isDeltacellsError(e, "InvalidInput") && e.field === "batchSize",
  );
  await assert.rejects(createLoader(ds, { resume: state, epoch: 1 }), (e) =>
    isDeltacellsError(e, "InvalidInput"),
  );
  const other = await openDataset((await loaderDataset(40)).store);
  await assert.rejects(
    createLoader(other, { resume: state }),
    (e) => isDeltacellsError(e, "InvalidInput") && e.field === "resume",
  );
});

test("tiles are decoded ahead only as far as the memory cap allows, whatever the dataset's size", async () => {
  const { store } = await loaderDataset(400);
  const counted = withStats(store);
  const ds = await openDataset(counted);
  const opts = { batchSize: 6, seed: 1, bufferTiles: 2, prefetch: 1 };
  const { batchBytes } = (await createLoader(ds, opts)).memory;
  const m = ds.manifest;
  const costs = m.tile_cells.map((c, t) => 8 * (c + 1) + 8 * m.tile_nnz[t]! + m.tile_bytes[t]!);
  const maxCost = Math.max(...costs);
  const minCost = Math.min(...costs);
  // Room for 5 of the largest tiles beside the batch buffers.
  const memoryCap = batchBytes + 5 * maxCost;
  const loader = await createLoader(ds, { ...opts, memoryCap });
  const budget = memoryCap - batchBytes;
  counted.reset();
  const consumed = new Set<number>();
  let batches = 0;
  for await (const b of loader) {
    for (const c of b.cells) consumed.add(tileOf(c));
    b.release();
    batches++;
    await sleep(2); // a slow consumer: the loader could run far ahead if nothing held it back
    const fetched = counted.stats.requests.get;
    // Tiles fetched beyond those the batches reached: at most what fits in the budget (plus the
    // current window's other tile).
    assert.ok(
      fetched <= consumed.size + 2 + Math.floor(budget / minCost),
      `after ${batches} batches: ${fetched} tiles fetched, ${consumed.size} reached, budget ${budget} B`,
    );
    assert.ok(loader.memory.tileBytes <= budget, `${loader.memory.tileBytes} > ${budget}`);
  }
  assert.equal(counted.stats.requests.get, ds.nTiles, "every tile read once");
  assert.ok(loader.memory.peakTileBytes <= budget);
  assert.ok(loader.memory.peakTileBytes >= 2 * minCost, "it did read ahead");
  // And without a tight cap it does run ahead (the assertion above can fail).
  const loose = await createLoader(ds, opts);
  counted.reset();
  for await (const b of loose) {
    b.release();
    await sleep(20);
    assert.ok(counted.stats.requests.get > 2 + Math.floor(budget / minCost) + 12);
    break;
  }
});

test("breaking out gives every tile back, reports nothing, and the next iteration goes on from there", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const opts = { batchSize: 5, seed: 7, bufferTiles: 2, prefetch: 3, onUnreadableTile: "skip" } as const;
  const full = (await cellsOf(ds, opts)).batches;
  const loader = await createLoader(ds, opts);
  const seen: number[][] = [];
  for await (const b of loader) {
    seen.push([...b.cells]);
    b.release();
    if (seen.length === 3) break;
  }
  assert.equal(loader.memory.tileBytes, 0, "no tile held after the loop");
  assert.deepEqual(loader.skipped, [], "stopping is not a fault");
  for await (const b of loader) {
    seen.push([...b.cells]);
    b.release();
  }
  assert.deepEqual(seen, full);
});

test("an aborted signal stops the iteration with its reason", async () => {
  const { store } = await loaderDataset();
  const ds = await openDataset(store);
  const controller = new AbortController();
  const loader = await createLoader(ds, { batchSize: 5, signal: controller.signal });
  const reason = new Error("stop now");
  let n = 0;
  await assert.rejects(
    (async () => {
      for await (const b of loader) {
        b.release();
        if (++n === 2) controller.abort(reason);
      }
    })(),
    (e) => e === reason,
  );
  assert.equal(n, 2);
  assert.equal(loader.state().batchesYielded, 2);
  assert.equal(loader.memory.tileBytes, 0);
});
