/**
 * Every failure the public API can be driven into raises a tagged core error: the guard says so,
 * `_tag` names it, `object` says which tile or manifest where there is one, and the family guard
 * of @deltacells/storage recognises it. Includes the faults of this process, not of the data: a
 * closed pool, zstd not loaded, a crashed worker, a native kernel handed inconsistent arguments.
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import { Worker } from "node:worker_threads";
import { isDeltacellsFamilyError, MemoryStore } from "@deltacells/storage";
import { thrownBy } from "../../../test-utils/thrown.js";
import { loadNativeKernel, type NativeKernel } from "../src/codec/native.js";
import { MANIFEST_KEY } from "../src/dataset/manifest.js";
import {
  createTilePool,
  type DeltacellsErrorTag,
  decodeTile,
  decodeTileSync,
  encodeTile,
  encodeTileSync,
  isDeltacellsError,
  openDataset,
  type TileRows,
  writeDataset,
} from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";

// The addon as loadNativeKernel will find it: a writable copy of the built one, so that a test
// can stand in for a stale or broken build (its exports are read-only). Before anything loads it.
const requireHere = createRequire(import.meta.url);
const ADDON = requireHere.resolve("../build/Release/deltacells_kernel.node");
const addon = (() => {
  try {
    const real = requireHere(ADDON) as Record<string, unknown>;
    const copy = Object.fromEntries(Object.getOwnPropertyNames(real).map((k) => [k, real[k]]));
    requireHere.cache[ADDON]!.exports = copy;
    return copy as unknown as NativeKernel;
  } catch {
    return undefined; // not built here: the TypeScript loops have no such check
  }
})();

const rows: TileRows = {
  nGenes: 100,
  indptr: [0, 3, 3, 5],
  indices: Int32Array.from([1, 5, 99, 0, 2]),
  data: Int32Array.from([1, 2, 3, 4, 5]),
};

function assertTagged(err: unknown, tag: DeltacellsErrorTag, object?: RegExp): void {
  assert.ok(isDeltacellsError(err), `not a DeltacellsError: ${String(err)}`);
  assert.ok(isDeltacellsFamilyError(err));
  assert.equal(err._tag, tag, err.message);
  if (object !== undefined) assert.match(err.object ?? "", object);
}

// First, while nothing has loaded zstd in this process.
test("tagged: a synchronous call before zstd is loaded -> InvalidState", async () => {
  assertTagged(await thrownBy(() => encodeTileSync(rows)), "InvalidState");
});

async function dataset() {
  const store = new MemoryStore("memory://ds");
  const src = memorySource(randomMatrix(20, 12, 3), { blockCells: 5 });
  await writeDataset(src, store, {
    encoder: { encode: encodeTile },
    compress: zstdCompressor(3),
    tileSize: 8,
    nChunks: 2,
    level: 3,
  });
  return store;
}

interface Case {
  name: string;
  run: () => Promise<unknown>;
  tag: DeltacellsErrorTag;
  object?: RegExp;
}

const CASES: Case[] = [
  {
    name: "encoding unsorted indices",
    run: () => encodeTile({ ...rows, indices: Int32Array.from([5, 1, 99, 0, 2]) }),
    tag: "InvalidInput",
  },
  {
    name: "decoding a tile with a flipped byte",
    run: async () => {
      const tile = await encodeTile(rows);
      tile[tile.length - 1]! ^= 0xff;
      return decodeTile(tile, { object: "tiles/0.bin" });
    },
    tag: "CorruptTile",
    object: /^tiles\/0\.bin$/,
  },
  {
    name: "decoding a tile of an unknown version",
    run: async () => {
      const tile = await encodeTile(rows);
      new DataView(tile.buffer, tile.byteOffset).setUint32(8, 99, true);
      return decodeTile(tile);
    },
    tag: "UnsupportedVersion",
  },
  {
    name: "a cell range outside the tile",
    run: async () => decodeTile(await encodeTile(rows), { cells: [2, 9] }),
    tag: "InvalidInput",
  },
  {
    name: "opening a prefix with no manifest",
    run: () => openDataset(new MemoryStore("memory://empty")),
    tag: "IncompleteDataset",
    object: /^memory:\/\/empty/,
  },
  {
    name: "opening a manifest of another format",
    run: async () => {
      const store = await dataset();
      await store.set(MANIFEST_KEY, new TextEncoder().encode(JSON.stringify({ format: "something-else" })));
      return openDataset(store);
    },
    tag: "FormatError",
    object: /manifest\.json$/,
  },
  {
    name: "reading cells past the end of a dataset",
    run: async () => (await openDataset(await dataset())).cells(10, 54),
    tag: "InvalidInput",
  },
  {
    name: "decoding on a closed pool",
    run: async () => {
      const pool = createTilePool({ threads: 1 });
      await pool.close();
      return pool.decode(await encodeTile(rows));
    },
    tag: "InvalidState",
  },
];

for (const c of CASES) {
  test(`tagged: ${c.name} -> ${c.tag}`, async () => {
    assertTagged(await thrownBy(c.run), c.tag, c.object);
  });
}

test("tagged: a tile worker that dies mid-job -> WorkerFailed, and the pool goes on", async () => {
  const tile = await encodeTile(rows);
  const pool = createTilePool({ threads: 1 });
  const post = Worker.prototype.postMessage;
  // The next decode job kills its worker instead of reaching it (exit code 1, like a crash).
  // Other messages (tsx's loader thread uses postMessage too) pass.
  Worker.prototype.postMessage = function (this: Worker, message: unknown, transfer?: never) {
    if ((message as { op?: unknown } | null)?.op !== "decode") return post.call(this, message, transfer);
    Worker.prototype.postMessage = post;
    void this.terminate();
  };
  try {
    assertTagged(await thrownBy(() => pool.decode(tile)), "WorkerFailed");
    assert.equal((await pool.decode(tile)).nnz, 5);
  } finally {
    Worker.prototype.postMessage = post;
    await pool.close();
  }
});

test("tagged: a native kernel answering 'inconsistent arguments' -> InternalError", async (t) => {
  const kernel = await loadNativeKernel();
  if (addon === undefined || kernel !== addon) return t.skip("the native kernel is not in use here");
  const tile = await encodeTile(rows);
  const saved = { gaps: addon.gaps, chunks: addon.chunks };
  // A broken build: it leaves every chunk to the caller, then refuses its arguments.
  if (addon.chunks) addon.chunks = (_b, _p, k0) => k0;
  addon.gaps = () => -2;
  try {
    const err = await thrownBy(() => decodeTileSync(tile));
    assertTagged(err, "InternalError");
    assert.match((err as Error).message, /inconsistent arguments to the native kernel/);
  } finally {
    Object.assign(addon, saved);
  }
});
