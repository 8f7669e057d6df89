/**
 * The lending contract of decoded tiles (RecycledTile): the pool and the dataset reader reuse a
 * tile's buffers only after the caller released it, a released tile refuses to be read, views
 * kept past release() are detached where the memory is not shared, and decoding on a pool
 * (`openDataset(..., { threads })`) returns exactly what decoding on this thread does.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  MemoryStore,
  withCoalescing,
  withConcurrencyLimit,
  withRetries,
  withStats,
} from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { createLocalDecoder } from "../src/codec/local-decoder.js";
import { BufferRecycler, LENT_OFFSET, type LentBytes, type RecycledTile } from "../src/codec/recycle.js";
import { tileKey } from "../src/dataset/manifest.js";
import { poolTileDecoder } from "../src/dataset/pool-decoder.js";
import type { TileDecoder } from "../src/dataset/tile-io.js";
import {
  createTilePool,
  type DatasetTile,
  decodeTile,
  encodeTile,
  isDeltacellsError,
  writeDataset,
} from "../src/index.js";
import { openDataset, zstdCompressor } from "../src/node.js";
import { assertDecodedEquals, prng, randomCsr } from "./codec-helpers.js";
import { memorySource, randomMatrix } from "./dataset-fixtures.js";
import { watchWorkerPosts } from "./worker-posts.js";

const level = 3;
const isReleased = (e: unknown) => isDeltacellsError(e, "InvalidState") && /was released/.test(String(e));

async function twoTiles() {
  const rows = [0, 1].map((s) =>
    randomCsr(prng(40 + s), { nCells: 120, nGenes: 3000, perCell: 30, bigValueRate: 0.01 }),
  );
  const tiles = await Promise.all(rows.map((r) => encodeTile(r, { level, nChunks: 4 })));
  return { rows, tiles };
}

test("a pool lends its output buffers: reused only after release(), unreadable once released", async () => {
  const pool = createTilePool({ threads: 2 });
  try {
    const { rows, tiles } = await twoTiles();
    const a = await pool.decode(tiles[0]!);
    assertDecodedEquals(a, rows[0]!);
    assert.ok(a.indices.buffer instanceof SharedArrayBuffer, "workers wrote in place");
    const lent = a.indices.buffer;
    // Still held by the caller: the next tile must get other memory, and `a` keeps its numbers.
    const b = await pool.decode(tiles[1]!);
    assert.notEqual(b.indices.buffer, lent);
    assertDecodedEquals(a, rows[0]!);
    assertDecodedEquals(b, rows[1]!);
    assert.equal(a.released, false);
    a.release();
    a.release(); // idempotent
    assert.equal(a.released, true);
    assert.throws(() => a.indices, isReleased);
    assert.throws(() => a.data, isReleased);
    assert.throws(() => a.indptr, isReleased);
    // Released: the next decode reuses that buffer.
    const c = await pool.decode(tiles[0]!);
    assert.equal(c.indices.buffer, lent);
    assertDecodedEquals(c, rows[0]!);
    assertDecodedEquals(b, rows[1]!);
    // Symbol.dispose releases, for `using`.
    c[Symbol.dispose]();
    assert.equal(c.released, true);
    b.release();
  } finally {
    await pool.close();
  }
});

test("a pool copies into plain `out` arrays once, leaves them to the caller and says once why it is slower", async (t) => {
  const warn = t.mock.method(console, "warn", () => {});
  const pool = createTilePool({ threads: 2 });
  try {
    const { rows, tiles } = await twoTiles();
    const out = {
      indptr: new Float64Array(200),
      indices: new Int32Array(10_000),
      data: new Int32Array(10_000),
    };
    for (const [i, t] of tiles.entries()) {
      const d = await pool.decode(t, { out, cells: [3, 100] });
      assert.equal(d.indices.buffer, out.indices.buffer);
      assert.equal(d.data.buffer, out.data.buffer);
      assert.equal(d.indptr.buffer, out.indptr.buffer);
      assertDecodedEquals(d, rows[i]!, 3, 100);
      d.release(); // the caller's arrays: nothing to give back, still readable
      assertDecodedEquals(d, rows[i]!, 3, 100);
    }
    // Whole tiles in float32, split over both workers, each part copied in as it is decoded.
    const fout = { ...out, data: new Float32Array(10_000) };
    for (const [i, t] of tiles.entries()) {
      const d = await pool.decode(t, { out: fout, values: "float32" });
      assert.equal(d.data.buffer, fout.data.buffer);
      assertDecodedEquals(d, rows[i]!);
    }
    assert.equal(warn.mock.callCount(), 1);
    assert.match(String(warn.mock.calls[0]!.arguments[0]), /plain \(unshared\) arrays.*SharedArrayBuffer/);
    // Lending still works after copies, in float32 too.
    const lent = await pool.decode(tiles[0]!, { values: "float32" });
    assert.ok(lent.data instanceof Float32Array);
    assertDecodedEquals(lent, rows[0]!);
    lent.release();
  } finally {
    await pool.close();
  }
});

async function dataset(nCells = 70, tileSize = 16) {
  const m = randomMatrix(nCells, 40, 11, 0.3);
  const store = new MemoryStore();
  const pool = createTilePool({ threads: 2 });
  try {
    await writeDataset(memorySource(m), store, {
      encoder: pool,
      compress: zstdCompressor(3),
      tileSize,
      nChunks: 3,
      level,
    });
  } finally {
    await pool.close();
  }
  return store;
}

/** A tile's contents as plain arrays (a copy). */
const contents = (t: DatasetTile) => ({
  nCells: t.nCells,
  nnz: t.nnz,
  indptr: Array.from(t.indptr),
  indices: Array.from(t.indices),
  data: Array.from(t.data),
});

test("ds.tiles() on this thread reuses a released tile's buffers and detaches the views kept past release()", async () => {
  const ds = await openDataset(await dataset());
  const seen: ReturnType<typeof contents>[] = [];
  for await (const { index, tile } of ds.tiles({ prefetch: 0 })) {
    seen.push(contents(tile));
    const kept = tile.indices;
    tile.release();
    assert.throws(() => tile.data, isReleased);
    // A view kept by mistake does not show the next tile's numbers: it is detached.
    assert.equal(kept.length, 0, `tile ${index}`);
    assert.throws(() => Array.from(kept.slice()), TypeError);
  }
  assert.equal(seen.length, 5);
  // Compared against tiles never released: each decoded into its own buffer.
  const kept: DatasetTile[] = [];
  for await (const { tile } of ds.tiles()) kept.push(tile);
  assert.deepEqual(kept.map(contents), seen);
  assert.equal(new Set(kept.map((t) => t.indices.buffer)).size, 5, "unreleased tiles never share memory");
});

test("openDataset(..., { threads }) reads exactly what the calling thread reads, by every path", async () => {
  const store = await dataset(83, 16);
  const one = await openDataset(store);
  const two = await openDataset(store, { threads: 2 });
  try {
    // One tile at a time, each released before the next is decoded: one buffer for all.
    const lent = new Set<ArrayBufferLike>();
    for await (const { tile } of two.tiles({ prefetch: 0 })) {
      lent.add(tile.indices.buffer);
      tile.release();
    }
    assert.equal(lent.size, 1);
    for (const values of ["int32", "float32"] as const) {
      const a: ReturnType<typeof contents>[] = [];
      for await (const { tile } of one.tiles({ values })) {
        a.push(contents(tile));
        tile.release();
      }
      const b: ReturnType<typeof contents>[] = [];
      for await (const { index, cellStart, tile } of two.tiles({ values })) {
        assert.equal(cellStart, two.tileStart(index));
        assert.equal(tile.data instanceof Float32Array, values === "float32");
        b.push(contents(tile));
        tile.release();
      }
      assert.equal(b.length, 6);
      assert.deepEqual(b, a);
      for (const [lo, hi] of [
        [0, 83],
        [5, 6],
        [15, 49],
        [31, 32],
        [80, 83],
      ] as const) {
        const x = await one.cells(lo, hi, { values });
        const y = await two.cells(lo, hi, { values });
        assert.deepEqual(y, x, `cells ${lo}:${hi}`);
        // The answer of cells() is the caller's: plain memory, not a lent buffer.
        assert.ok(!(y.indices.buffer instanceof SharedArrayBuffer));
      }
      const t3 = await two.tile(3, { values });
      assert.deepEqual(contents(t3), a[3]);
      t3.release();
    }
    // Leaving a loop early hands back the tiles read ahead, and the pool keeps working.
    for await (const { index } of two.tiles({ prefetch: 3 })) if (index === 1) break;
    const again = await two.tile(0);
    assert.deepEqual(contents(again), contents(await one.tile(0)));
  } finally {
    await two.close();
  }
  await assert.rejects(two.tile(0), (e) => isDeltacellsError(e, "InvalidState") && /closed/.test(String(e)));
});

test("openDataset refuses `threads` together with a `decoder`", async () => {
  const store = await dataset(20, 8);
  await assert.rejects(
    openDataset(store, { threads: 2, decoder: { decode: decodeTile } }),
    (e) => isDeltacellsError(e, "InvalidInput") && (e as { field?: string }).field === "threads",
  );
});

test("from a local folder, tiles are read into the reader's own memory and still checked against the manifest", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-recycle-"));
  try {
    const folder = new FolderStore(dir);
    const memory = await dataset(50, 16);
    for (const key of await memory.list()) await folder.set(key, (await memory.get(key))!);
    /** Counts the reads that went into the reader's own memory. */
    class Counting extends FolderStore {
      into = 0;
      override getInto(...args: Parameters<FolderStore["getInto"]>) {
        this.into++;
        return super.getInto(...args);
      }
    }
    const stores = [new Counting(dir), new Counting(dir)];
    const one = await openDataset(stores[0]!);
    const two = await openDataset(stores[1]!, { threads: 2 });
    try {
      const a: ReturnType<typeof contents>[] = [];
      for await (const { tile } of one.tiles()) {
        a.push(contents(tile));
        tile.release();
      }
      const b: ReturnType<typeof contents>[] = [];
      for await (const { tile } of two.tiles()) {
        b.push(contents(tile));
        tile.release();
      }
      assert.equal(a.length, 4);
      assert.deepEqual(b, a);
      assert.deepEqual(
        stores.map((x) => x.into),
        [4, 4],
      );
      assert.deepEqual(await two.cells(3, 41), await one.cells(3, 41));
      // A tile replaced by a shorter one, then removed: the open handles see the dataset changed;
      // handles opened after it refuse the tile by size, then as missing.
      const path = join(dir, tileKey(2));
      const full = await readFile(path);
      await new Promise((r) => setTimeout(r, 20));
      await writeFile(path, full.subarray(0, full.length - 8));
      for (const ds of [one, two])
        await assert.rejects(ds.tile(2), (e) => isDeltacellsError(e, "DatasetChanged"));
      const three = await openDataset(stores[0]!);
      const four = await openDataset(stores[1]!, { threads: 2 });
      try {
        for (const ds of [three, four]) {
          await assert.rejects(
            ds.tile(2),
            (e) => isDeltacellsError(e, "CorruptTile") && (e as { field?: string }).field === "tile_bytes",
          );
        }
        await rm(path);
        for (const ds of [three, four])
          await assert.rejects(ds.tile(2), (e) => isDeltacellsError(e, "NotFound"));
        assert.deepEqual(contents(await four.tile(3)), a[3]);
      } finally {
        await four.close();
      }
    } finally {
      await two.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a folder's tiles are read into lent memory LENT_OFFSET bytes into its buffer, not at a large allocation's first byte (where the kernel's copy is slow on AMD EPYC)", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-recycle-"));
  try {
    const memory = await dataset(50, 16);
    const folder = new FolderStore(dir);
    for (const key of await memory.list()) await folder.set(key, (await memory.get(key))!);
    /** Where each read into the caller's memory landed: offset in its buffer, bytes, buffer size. */
    class Landing extends FolderStore {
      landed: [number, number, number][] = [];
      override getInto(
        key: string,
        allocate: (size: number) => Uint8Array,
        opts?: Parameters<FolderStore["getInto"]>[2],
      ) {
        return super.getInto(
          key,
          (size) => {
            const out = allocate(size);
            this.landed.push([out.byteOffset, out.length, out.buffer.byteLength]);
            return out;
          },
          opts,
        );
      }
    }
    for (const threads of [undefined, 2]) {
      const store = new Landing(dir, { blockingReads: threads === undefined });
      const ds = await openDataset(store, threads === undefined ? {} : { threads });
      try {
        for await (const { tile } of ds.tiles()) tile.release();
      } finally {
        await ds.close();
      }
      assert.equal(store.landed.length, 4);
      for (const [offset, length, bufferBytes] of store.landed) {
        assert.equal(offset, LENT_OFFSET, `threads ${threads}`);
        assert.ok(bufferBytes >= LENT_OFFSET + length);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("through the storage wrappers (stats, retries, a concurrency limit, coalescing), a folder's tiles still land in the pool's shared memory", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-recycle-"));
  try {
    const memory = await dataset(50, 16);
    const folder = new FolderStore(dir);
    for (const key of await memory.list()) await folder.set(key, (await memory.get(key))!);
    /** Records each read into the reader's memory: whether that memory was shared, and whether the answer is a view of it. */
    class Counting extends FolderStore {
      reads: { shared: boolean; inPlace: boolean }[] = [];
      tileGets = 0;
      override async getInto(...[key, allocate, opts]: Parameters<FolderStore["getInto"]>) {
        let space: Uint8Array | undefined;
        const got = await super.getInto(key, (n) => (space = allocate(n)), opts);
        this.reads.push({
          shared: space?.buffer instanceof SharedArrayBuffer,
          inPlace: got !== undefined && got.buffer === space?.buffer,
        });
        return got;
      }
      override get(...args: Parameters<FolderStore["get"]>) {
        if (args[0].startsWith("tiles/")) this.tileGets++;
        return super.get(...args);
      }
    }
    const inner = new Counting(dir);
    const stats = withStats(withRetries(withConcurrencyLimit(withCoalescing(inner), 2), { baseDelayMs: 0 }));
    const plain = await openDataset(memory);
    const ds = await openDataset(stats, { threads: 1 });
    try {
      const want: ReturnType<typeof contents>[] = [];
      for await (const { tile } of plain.tiles()) want.push(contents(tile));
      const got: ReturnType<typeof contents>[] = [];
      for await (const { tile } of ds.tiles()) {
        got.push(contents(tile));
        tile.release();
      }
      assert.deepEqual(got, want);
      assert.equal(inner.tileGets, 0, "no tile read by get (into memory of its own, then copied)");
      assert.deepEqual(inner.reads, Array(4).fill({ shared: true, inPlace: true }));
    } finally {
      await ds.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/** A memory store that reads into the reader's memory (as a folder does) and records which tiles it was asked for, in order. */
class IntoStore extends MemoryStore {
  tileReads: number[] = [];
  async getInto(key: string, allocate: (size: number) => Uint8Array, opts?: { signal?: AbortSignal }) {
    if (key.startsWith("tiles/")) this.tileReads.push(Number(/(\d+)\.dct$/.exec(key)![1]));
    const bytes = await this.get(key, opts);
    if (bytes === undefined) return undefined;
    const space = allocate(bytes.length).subarray(0, bytes.length);
    space.set(bytes);
    return space;
  }
}

/**
 * `inner` counting what it lends (tile bytes) and the tiles it decodes until they are given back;
 * `idle()` resolves once nothing is out any more.
 */
function countingDecoder(inner: TileDecoder & { lend(size: number): LentBytes }) {
  let out = 0;
  let waiting: (() => void) | undefined;
  const back = () => {
    out--;
    if (out === 0) waiting?.();
  };
  const counts = { reads: 0, decodes: 0 };
  const decoder: TileDecoder & { lend(size: number): LentBytes } = {
    threads: inner.threads,
    renumbers: inner.renumbers,
    lend(size) {
      const lent = inner.lend(size);
      counts.reads++;
      out++;
      let given = false;
      return {
        bytes: lent.bytes,
        release() {
          assert.equal(given, false, "tile bytes given back twice");
          given = true;
          lent.release();
          back();
        },
      };
    },
    async decode(bytes, opts) {
      counts.decodes++;
      out++;
      let tile: RecycledTile;
      try {
        tile = (await inner.decode(bytes, opts)) as RecycledTile;
      } catch (err) {
        back();
        throw err;
      }
      const release = tile.release;
      tile.release = () => {
        if (!tile.released) back();
        release();
      };
      return tile;
    },
  };
  const idle = () => (out === 0 ? Promise.resolve() : new Promise<void>((r) => (waiting = r)));
  return { decoder, counts, idle };
}

test("ds.tiles() reads further ahead than it decodes, and leaving early (break, abort) gives back every read and decoded tile", async () => {
  const store = new IntoStore();
  const written = await dataset(250, 16); // 16 tiles
  for (const key of await written.list()) await store.set(key, (await written.get(key))!);
  for (const threads of [0, 2]) {
    const pool = threads ? poolTileDecoder(threads) : undefined;
    try {
      const plain = await openDataset(store);
      const want: ReturnType<typeof contents>[] = [];
      for await (const { tile } of plain.tiles()) want.push(contents(tile));
      // Whole loops, a break and an abort, each on a fresh count.
      for (const stop of ["none", "break", "abort"] as const) {
        const { decoder, counts, idle } = countingDecoder(pool?.decoder ?? createLocalDecoder());
        const ds = await openDataset(store, { decoder });
        store.tileReads = [];
        const abort = new AbortController();
        const got: ReturnType<typeof contents>[] = [];
        const loop = async () => {
          for await (const { index, tile } of ds.tiles({ prefetch: 1, signal: abort.signal })) {
            if (index === 0) {
              // The first tile in hand: one tile decoded ahead, six more read ahead of that.
              assert.deepEqual(store.tileReads, [0, 1, 2, 3, 4, 5, 6, 7], `threads ${threads}`);
              assert.ok(counts.decodes <= 2, `${counts.decodes} decodes started`);
            }
            got.push(contents(tile));
            tile.release();
            if (index === 2 && stop === "break") break;
            if (index === 2 && stop === "abort") abort.abort(new Error("stop"));
          }
        };
        if (stop === "abort") await assert.rejects(loop(), /stop/);
        else await loop();
        await idle();
        assert.deepEqual(got, stop === "none" ? want : want.slice(0, 3), `${stop}, threads ${threads}`);
        // Each tile read once, in order; after a stop at tile 2, nothing past tile 2 + 1 + 6.
        const last = stop === "none" ? 15 : 9;
        assert.deepEqual(
          store.tileReads,
          Array.from({ length: last + 1 }, (_, i) => i),
        );
        assert.equal(counts.reads, last + 1);
      }
    } finally {
      await pool?.close();
    }
  }
});

test("a BufferRecycler hands out the buffer released last (still in cache), the smallest that fits first", () => {
  const recycler = new BufferRecycler((n) => new ArrayBuffer(n));
  const [a, b, c] = [recycler.acquire(1 << 20), recycler.acquire(1 << 20), recycler.acquire(1 << 20)];
  recycler.release(a);
  recycler.release(b);
  recycler.release(c);
  assert.equal(recycler.acquire(1 << 20), c);
  assert.equal(recycler.acquire(1 << 20), b);
  recycler.release(c);
  assert.equal(recycler.acquire(1 << 20), c);
  // A smaller buffer that fits still wins over a larger one released later.
  const small = recycler.acquire(1 << 16);
  const large = recycler.acquire(1 << 22);
  recycler.release(small);
  recycler.release(large);
  assert.equal(recycler.acquire(1000), small);
});

test("a pool takes an output buffer when a worker starts on the tile: tiles queued behind one worker reuse the one just released", async () => {
  const { tiles } = await twoTiles();
  const pool = createTilePool({ threads: 1 });
  try {
    // Eight decodes queued at once, each released as soon as it is in hand: the buffers in use are
    // the one the worker writes and the one of its next job, not one per tile in the queue; the
    // job sent when a tile is answered waits for that tile's release and reuses its buffer.
    const pending = Array.from({ length: 8 }, (_, i) => pool.decode(tiles[i % 2]!));
    const buffers = new Set<ArrayBufferLike>();
    for (const p of pending) {
      const tile = await p;
      buffers.add(tile.indices.buffer);
      tile.release();
    }
    assert.equal(buffers.size, 2);
  } finally {
    await pool.close();
  }
});

test("ds.tiles() on this thread decodes a tile only once the one before is in hand (by default): one output in use", async () => {
  const store = new IntoStore();
  const written = await dataset(150, 16); // 10 tiles
  for (const key of await written.list()) await store.set(key, (await written.get(key))!);
  let decoding = 0;
  let most = 0;
  const inner = createLocalDecoder();
  const decoder: TileDecoder & { lend(size: number): LentBytes } = {
    renumbers: true,
    lend: (size) => inner.lend(size),
    async decode(bytes, opts) {
      const tile = await inner.decode(bytes, opts);
      most = Math.max(most, ++decoding);
      const release = tile.release;
      tile.release = () => {
        if (!tile.released) decoding--;
        release();
      };
      return tile;
    },
  };
  const ds = await openDataset(store, { decoder });
  let n = 0;
  for await (const { tile } of ds.tiles()) {
    n++;
    tile.release();
  }
  assert.equal(n, 10);
  assert.equal(most, 1, "tiles decoded and not yet released at once");
  // Each tile read once, in order.
  assert.deepEqual(
    store.tileReads,
    Array.from({ length: 10 }, (_, i) => i),
  );
});

test("ds.tiles() on this thread takes no event-loop turn per tile when the reads complete at once", async () => {
  // The turn per tile advances reads that wait for I/O callbacks (a folder read through the
  // thread pool). Reads that complete without them (memory, a folder's blocking reads) have
  // settled before the next tile; a turn for the reads just started then cost ~20 us per tile.
  const store = new IntoStore();
  const written = await dataset(150, 16); // 10 tiles
  for (const key of await written.list()) await store.set(key, (await written.get(key))!);
  const want: ReturnType<typeof contents>[] = [];
  for await (const { tile } of (await openDataset(store, { decoder: createLocalDecoder() })).tiles())
    want.push(contents(tile));
  const ds = await openDataset(store);
  const immediate = globalThis.setImmediate;
  let turns = 0;
  globalThis.setImmediate = ((f: (...a: unknown[]) => void, ...a: unknown[]) => {
    turns++;
    return immediate(f, ...a);
  }) as typeof setImmediate;
  const got: ReturnType<typeof contents>[] = [];
  try {
    for await (const { tile } of ds.tiles()) {
      got.push(contents(tile));
      tile.release();
    }
  } finally {
    globalThis.setImmediate = immediate;
  }
  assert.deepEqual(got, want);
  assert.equal(turns, 0, "event-loop turns taken by ds.tiles()");
});

test("ds.tiles() on a pool sends each of the first tiles to a worker before it reads the next", async () => {
  // The first fill read every tile ahead (11 here, by blocking calls from a folder: ~2.5 ms)
  // before any decode reached a worker, so both workers idled at the start of every loop.
  const store = new IntoStore();
  const written = await dataset(250, 16); // 16 tiles
  for (const key of await written.list()) await store.set(key, (await written.get(key))!);
  const ds = await openDataset(store, { threads: 2 });
  const log: string[] = [];
  const getInto = store.getInto;
  store.getInto = function (this: IntoStore, key, allocate, opts) {
    if (key.startsWith("tiles/")) log.push(`read ${Number(/(\d+)\.dct$/.exec(key)![1])}`);
    return getInto.call(this, key, allocate, opts);
  };
  const unwatch = watchWorkerPosts((message) => {
    if ((message as { op?: unknown } | null)?.op === "decode") log.push("post");
  });
  try {
    for (let pass = 0; pass < 2; pass++) {
      // Pass 0 starts the workers (its first decodes wait for them); pass 1 finds them up.
      log.length = 0;
      let n = 0;
      for await (const { tile } of ds.tiles()) {
        n++;
        tile.release();
      }
      assert.equal(n, 16);
    }
    const posted = (k: number) => log.slice(0, log.indexOf(`read ${k}`)).filter((e) => e === "post").length;
    for (let k = 1; k <= 3; k++)
      assert.ok(
        posted(k) >= k,
        `${posted(k)} decodes sent before tile ${k} is read: ${log.slice(0, 14).join(", ")}`,
      );
  } finally {
    unwatch();
    await ds.close();
  }
});

test("openDataset(path) in Node reads a local folder's tiles by blocking reads by default; with { folder: { blockingReads: false } } through the thread pool", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dc-recycle-"));
  try {
    const folder = new FolderStore(dir);
    const memory = await dataset(50, 16);
    for (const key of await memory.list()) await folder.set(key, (await memory.get(key))!);
    for (const blocking of [true, false]) {
      let lent = 0;
      const inner = createLocalDecoder();
      const lend = (size: number) => {
        lent++;
        return inner.lend(size);
      };
      const decoder = { ...inner, lend };
      const ds = await openDataset(dir, { decoder, ...(!blocking && { folder: { blockingReads: false } }) });
      // A blocking read has its memory before fetchTile returns; one through the thread pool only later.
      const fetching = ds.fetchTile(1);
      assert.equal(lent, blocking ? 1 : 0, `blocking ${blocking}`);
      const { bytes, done } = await fetching;
      assert.deepEqual(bytes, await memory.get(tileKey(1)));
      done();
      assert.equal(lent, 1);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
