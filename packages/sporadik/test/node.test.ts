/**
 * The Node entry: chunks decoded by native zstd into buffers the cache lends and takes back. Same
 * answers as the WebAssembly path, the same requests, and damage refused the same way. Its own
 * file: it counts calls to zarrita's process-wide codec registry.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { registry } from "zarrita";
import { compress } from "zstd-napi";
import { ChunkCache } from "../src/chunks.js";
import * as browser from "../src/index.js";
import {
  closeDecodeWorkers,
  type Decompressor,
  describe,
  isSporadikError,
  LayoutError,
  layoutFromCoords,
  nativeDecompressors,
  nativeZstd,
  openArrayReader,
  openReader,
  pooledZstd,
  SparseReader,
  writeStore,
} from "../src/node.js";
import { counting, plain, random, randomCoords } from "./helpers.js";

// Count decodes through zarrita's registry: the Node entry must not make any.
const registryDecodes = { count: 0 };
{
  const load = registry.get("zstd");
  assert.ok(load);
  const Zstd = (await load()) as unknown as {
    fromConfig(
      config: unknown,
      meta: unknown,
    ): {
      encode(b: Uint8Array): Promise<Uint8Array>;
      decode(b: Uint8Array): Promise<Uint8Array>;
    };
  };
  registry.set("zstd", (async () => ({
    fromConfig(config: unknown, meta: unknown) {
      const inner = Zstd.fromConfig(config, meta);
      return {
        encode: (bytes: Uint8Array) => inner.encode(bytes),
        decode: (bytes: Uint8Array) => {
          registryDecodes.count++;
          return inner.decode(bytes);
        },
      };
    },
  })) as never);
}

const SHAPE = [3_000, 40];

/** A chunked store of both layouts, 250-element chunks so batches span and share many. */
async function chunkedStore() {
  const spec = randomCoords(SHAPE, 0.05, 211);
  const layouts = [0, 1].map((axis) =>
    layoutFromCoords(SHAPE, spec.coords, new Float32Array(spec.values), axis),
  );
  const backing = counting(new MemoryStore());
  await writeStore(backing, layouts, { chunk: 250 });
  return { backing, layouts };
}

function pick(count: number, seed: number, below: number): number[] {
  const next = random(seed);
  return Array.from({ length: count }, () => Math.floor(next() * below));
}

test("the Node entry reads every slice and batch as the WebAssembly path does, without zarrita's codecs", async () => {
  const { backing } = await chunkedStore();
  for (const axis of [0, 1]) {
    const wasm = await browser.openReader(backing, { axis });
    const positions = pick(200, 7 + axis, SHAPE[axis] as number);
    registryDecodes.count = 0;
    const expected = await wasm.slicesAt(positions);
    const single = await wasm.sliceAt(positions[0] as number);
    const whole = await wasm.readLayout();
    assert.ok(registryDecodes.count > 0, "the browser entry decodes through zarrita's registry");

    registryDecodes.count = 0;
    const native = await openReader(backing, { axis });
    const got = await native.slicesAt(positions);
    assert.deepEqual(plain(got.indptr), plain(expected.indptr));
    assert.deepEqual(plain(got.indices), plain(expected.indices));
    assert.deepEqual(plain(got.data), plain(expected.data));
    const one = await native.sliceAt(positions[0] as number);
    assert.deepEqual(plain(one.positions), plain(single.positions));
    assert.deepEqual(plain(one.values), plain(single.values));
    const layout = await native.readLayout();
    assert.deepEqual(plain(layout.data), plain(whole.data));
    assert.deepEqual(plain(layout.indices), plain(whole.indices));
    assert.deepEqual(plain(layout.indptr), plain(whole.indptr));
    assert.equal(registryDecodes.count, 0, "the Node entry never goes through zarrita's registry");
  }
  const array = await openArrayReader(backing);
  registryDecodes.count = 0;
  const batch = await array.slicesAt([5, 2_999, 5], { axis: 0 });
  assert.equal(batch.length, 3);
  assert.equal(registryDecodes.count, 0, "openArrayReader from the Node entry decodes natively too");
});

test("a batch large enough for the decode workers reads the same as one decoded on the main thread alone", async () => {
  const { backing } = await chunkedStore();
  let offloaded = 0;
  let waves = 0;
  const counted: Decompressor = (stored, into, configuration, wave) => {
    const written = pooledZstd(stored, into, configuration, wave);
    waves = Math.max(waves, wave ?? 1);
    if (typeof written !== "number") offloaded++;
    return written;
  };
  for (const axis of [0, 1]) {
    const single = await openReader(backing, { axis, decompressors: { zstd: nativeZstd } });
    const pooled = await openReader(backing, { axis, decompressors: { zstd: counted } });
    const positions = pick(300, 31 + axis, SHAPE[axis] as number);
    const expected = await single.slicesAt(positions);
    offloaded = 0;
    const got = await pooled.slicesAt(positions);
    assert.ok(waves >= 16, `the batch decodes ${waves} chunks in one wave, enough for the workers`);
    assert.ok(offloaded > 0, "some chunks were decoded on a worker");
    assert.deepEqual(plain(got.indptr), plain(expected.indptr));
    assert.deepEqual(plain(got.indices), plain(expected.indices));
    assert.deepEqual(plain(got.data), plain(expected.data));
  }
  // A single slice's few chunks never go to a worker.
  const fresh = await openReader(backing, { axis: 0, decompressors: { zstd: counted } });
  offloaded = 0;
  await fresh.sliceAt(7);
  assert.equal(offloaded, 0, "a single slice decodes on the main thread");
  await closeDecodeWorkers();
});

test("with the native decoder a batch of 1, 10 or 10,000 is still two waves, each chunk fetched once", async () => {
  const { backing, layouts } = await chunkedStore();
  const indptr = layouts[0]?.indptr as Int32Array;
  const data = layouts[0]?.data as Float32Array;
  for (const count of [1, 10, 10_000]) {
    const reader = await openReader(backing, { axis: 0, concurrency: Number.POSITIVE_INFINITY });
    backing.reset();
    const positions = pick(count, count + 3, 3_000);
    const selection = await reader.slicesAt(positions);
    assert.equal(backing.waves(), 2, `${count} positions`);
    const keys = backing.requests.map((r) => r.key);
    assert.equal(new Set(keys).size, keys.length, "each chunk is fetched once per batch");
    for (const row of [0, count - 1]) {
      const p = positions[row] as number;
      assert.deepEqual(plain(selection.sliceAt(row).values), plain(data.subarray(indptr[p], indptr[p + 1])));
    }
  }
});

test("chunk buffers reused past a tiny cache budget never change an answer, even across concurrent batches", async () => {
  const { backing, layouts } = await chunkedStore();
  // Eight chunks' worth (and two spare buffers): most chunks are dropped soon after use and their
  // buffers decoded into again.
  const array = await openArrayReader(backing, { cacheBytes: 8 * 250 * 4 });
  const readers = [array.along(0), array.along(1)];
  const batches = [0, 1, 0, 1, 0, 0].map((axis, k) => ({
    axis,
    positions: pick(300, 50 + k, SHAPE[axis] as number),
  }));
  const answers = await Promise.all(
    batches.map(({ axis, positions }) => (readers[axis] as (typeof readers)[0]).slicesAt(positions)),
  );
  batches.forEach(({ axis, positions }, k) => {
    const layout = layouts[axis] as (typeof layouts)[0];
    const indptr = layout.indptr as Int32Array;
    const answer = answers[k] as (typeof answers)[0];
    positions.forEach((p, row) => {
      const { positions: got, values } = answer.sliceAt(row);
      assert.deepEqual(plain(values), plain(layout.data.subarray(indptr[p], indptr[p + 1])));
      assert.deepEqual(plain(got), plain(layout.indices.subarray(indptr[p], indptr[p + 1])));
    });
  });
});

test("a chunk handed out by ChunkCache.get keeps its values after the cache drops it", async () => {
  const { backing } = await chunkedStore();
  const cache = new ChunkCache(8 * 250 * 4);
  const info = await describe(backing);
  const reader = new SparseReader(backing, "", info, info.layouts.get(0)!, {
    cache,
    decompressors: nativeDecompressors,
  });
  await reader.sliceAt(0);
  const held = await cache.get("/layouts/axis0/data/c/0", 250 * 4, () => {
    throw new Error("the chunk was just read, so it is in the cache");
  });
  const before = plain(held);
  await reader.slicesAt(pick(500, 9, 3_000));
  assert.deepEqual(plain(held), before);
});

test("a dropped chunk's buffer is not decoded into while a reader is still waiting to copy from it", async () => {
  const size = 64;
  const cache = new ChunkCache(size);
  const buffers: ArrayBuffer[] = [];
  const fill = (into: (bytes: number) => Uint8Array, value: number) => {
    const bytes = into(size);
    buffers.push(bytes.buffer as ArrayBuffer);
    return Promise.resolve(new Float32Array(bytes.buffer).fill(value));
  };
  await cache.use(
    "a",
    size,
    (into) => fill(into, 1),
    () => {},
  );
  // The read of "a" waits a microtask; meanwhile "b" pushes "a" out of the one-chunk budget, and
  // "c"'s loader asks for a buffer straight away.
  const seen: number[] = [];
  const readA = cache.use(
    "a",
    size,
    () => Promise.reject(new Error("a is cached")),
    (chunk) => seen.push(...plain(chunk)),
  );
  const loadB = cache.use(
    "b",
    size,
    (into) => fill(into, 2),
    () => {},
  );
  const loadC = cache.use(
    "c",
    size,
    (into) => fill(into, 3),
    () => {},
  );
  await Promise.all([readA, loadB, loadC]);
  assert.deepEqual(seen, new Array(size / 4).fill(1));
  assert.equal(new Set(buffers).size, 3, "a, b and c each decoded into a buffer of its own");
  // Once nobody reads them, dropped chunks' buffers are lent again rather than allocated.
  await cache.use(
    "d",
    size,
    (into) => fill(into, 4),
    () => {},
  );
  assert.equal(new Set(buffers).size, 3, "d decoded into a buffer a dropped chunk had");
});

test("the native decoder refuses bytes that are not zstd, and a chunk of the wrong length, as damage", async () => {
  const { backing } = await chunkedStore();
  const key = "/layouts/axis0/data/c/0";
  const good = (await backing.get(key)) as Uint8Array;
  await backing.set(
    key,
    good.map((byte, i) => (i < 8 ? byte ^ 0x5a : byte)),
  );
  let reader = await openReader(backing, { axis: 0 });
  await assert.rejects(reader.sliceAt(0), (error: unknown) => {
    assert.ok(error instanceof LayoutError);
    assert.match(error.message, /cannot be decoded with zstd/);
    return true;
  });
  // Valid zstd of a short chunk, and of a long one: both a whole chunk's worth of bytes or nothing.
  for (const elements of [100, 400]) {
    await backing.set(key, compress(new Uint8Array(elements * 4)));
    reader = await openReader(backing, { axis: 0 });
    await assert.rejects(reader.sliceAt(0), (error: unknown) => isSporadikError(error));
  }
  await backing.set(key, compress(new Uint8Array(100 * 4)));
  reader = await openReader(backing, { axis: 0 });
  await assert.rejects(reader.sliceAt(0), /decodes to 400 bytes, but a chunk of 250 float32 is 1000/);
});

test("a caller's own decompressor replaces the native one for the codec it names", async () => {
  const { backing } = await chunkedStore();
  let calls = 0;
  const mine: Decompressor = (stored, into, configuration) => {
    calls++;
    return nativeZstd(stored, into, configuration);
  };
  const reader = await openReader(backing, { axis: 1, decompressors: { zstd: mine } });
  const { values } = await reader.sliceAt(0);
  assert.ok(values.length > 0);
  assert.equal(calls, 3, "the indptr, indices and data chunks of one slice");
});
