/**
 * Storage faults mid-epoch: transient errors are retried by the store (`withRetries`) and the
 * epoch is unchanged; a tile that stays unreadable, or is corrupt, stops the epoch with an
 * `UnreadableTile` error naming it after the batches before it; with `onUnreadableTile: "skip"`
 * its cells are left out and reported, never silently dropped.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type RangeQuery, type ReadableStore, StorageError, withRetries } from "@deltacells/storage";
import { tileKey } from "../src/dataset/manifest.js";
import {
  createLoader,
  type Dataset,
  type DeltacellsError,
  isDeltacellsError,
  type LoaderOptions,
  openDataset,
} from "../src/index.js";
import { checkBatchValues, loaderDataset, N_CELLS, TILE_SIZE } from "./loader-fixtures.js";

type Fault = "none" | "transient" | "down" | "corrupt";

/** A store whose reads of `key` fail: twice (transient), always (down), or return flipped bytes. */
function faulty(inner: ReadableStore, key: string, fault: Fault) {
  const state = { attempts: 0 };
  const store = {
    url: "memory://faulty",
    async get(k: string, o?: object) {
      if (k !== key || fault === "none") return inner.get(k, o);
      state.attempts++;
      if (fault === "corrupt") {
        const bytes = (await inner.get(k, o))!.slice();
        bytes[bytes.length - 3]! ^= 0x40;
        return bytes;
      }
      if (fault === "down" || state.attempts <= 2)
        throw new StorageError(`connection reset reading ${k}`, { tag: "Network", object: k });
      return inner.get(k, o);
    },
    getRange: (k: string, r: RangeQuery, o?: object) => inner.getRange(k, r, o),
  };
  return { store: withRetries(store, { attempts: 3, baseDelayMs: 0, random: () => 0 }), state };
}

// Dataset order, one tile per window: tile 4 (cells 32..39) comes after four tiles of batches.
const opts: LoaderOptions = { batchSize: 6, shuffle: false, bufferTiles: 1 };
const BAD = 4;

async function run(ds: Dataset, o: LoaderOptions, m: Awaited<ReturnType<typeof loaderDataset>>["m"]) {
  const loader = await createLoader(ds, o);
  const cells: number[] = [];
  let skipped = 0;
  let batches = 0;
  let error: unknown;
  try {
    for await (const b of loader) {
      checkBatchValues(m, b);
      cells.push(...b.cells);
      skipped += b.skipped;
      batches++;
      b.release();
    }
  } catch (err) {
    error = err;
  }
  return { loader, cells, skipped, batches, error };
}

test("transient errors on a tile are retried by the store and the epoch is unchanged", async () => {
  const { store, m } = await loaderDataset();
  const clean = await run(await openDataset(store), { ...opts, shuffle: true, seed: 2 }, m);
  const f = faulty(store, tileKey(BAD), "transient");
  const r = await run(await openDataset(f.store), { ...opts, shuffle: true, seed: 2 }, m);
  assert.equal(r.error, undefined);
  assert.equal(f.state.attempts, 3, "two failures, then the tile");
  assert.deepEqual(r.cells, clean.cells);
});

for (const [fault, threads] of [
  ["down", undefined],
  ["corrupt", undefined],
  ["corrupt", 2], // found by a worker writing the tile into its batches (the slot path)
] as const) {
  test(`a tile that is ${fault === "down" ? "unreadable after the retries" : "corrupt"} stops the epoch with an UnreadableTile error naming it${threads ? ` (${threads} workers)` : ""}`, async () => {
    const { store, m } = await loaderDataset();
    const f = faulty(store, tileKey(BAD), fault);
    await using ds = await openDataset(f.store, { threads });
    const r = await run(ds, opts, m);
    const err = r.error as DeltacellsError;
    assert.ok(isDeltacellsError(err, "UnreadableTile"), String(err));
    assert.equal(err.object, `memory://faulty/${tileKey(BAD)}`);
    assert.match(err.message, /tiles\/tile_000004\.dct could not be read or decoded/);
    assert.match(err.message, /onUnreadableTile: "skip"/);
    if (fault === "down") assert.equal((err.cause as StorageError)._tag, "RetriesExhausted");
    else assert.ok(isDeltacellsError(err.cause, "CorruptTile"));
    // The batches before the tile were yielded, and the state points at the first one not yielded.
    assert.deepEqual(
      r.cells,
      Array.from({ length: 30 }, (_, i) => i),
    );
    assert.equal(r.loader.state().batchesYielded, 5);
    // Once the tile is back, a loader resumed from the state yields the rest of the epoch.
    const healed = await run(await openDataset(store), { resume: r.loader.state() }, m);
    assert.deepEqual(
      [...r.cells, ...healed.cells],
      Array.from({ length: N_CELLS }, (_, i) => i),
    );
  });
}

test('with onUnreadableTile: "skip" the tile\'s cells are left out, counted on the batches and listed', async () => {
  const { store, m } = await loaderDataset();
  const f = faulty(store, tileKey(BAD), "down");
  for (const shuffle of [false, true]) {
    const ds = await openDataset(f.store);
    const r = await run(ds, { ...opts, shuffle, seed: 6, bufferTiles: 3, onUnreadableTile: "skip" }, m);
    assert.equal(r.error, undefined);
    const lost = Array.from({ length: TILE_SIZE }, (_, i) => BAD * TILE_SIZE + i);
    assert.equal(r.loader.skipped.length, 1);
    const s = r.loader.skipped[0]!;
    assert.equal(s.tile, BAD);
    assert.equal(s.key, tileKey(BAD));
    assert.deepEqual([...s.cells], lost);
    assert.equal((s.error as StorageError)._tag, "RetriesExhausted");
    assert.equal(r.skipped, TILE_SIZE, "every left-out cell counted on its batch");
    assert.equal(r.batches, Math.ceil(N_CELLS / 6), "the batch count does not change");
    assert.deepEqual(
      [...r.cells].sort((a, b) => a - b),
      Array.from({ length: N_CELLS }, (_, i) => i).filter((c) => !lost.includes(c)),
    );
  }
});
