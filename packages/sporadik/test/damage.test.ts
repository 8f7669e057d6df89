/**
 * What a reader detects in a damaged chunked store without being asked: a missing `data` chunk,
 * positions past the other axes and a decreasing `indptr` (each checked once per decoded chunk),
 * and, in a store written with checksums, any chunk whose bytes changed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { crc32c } from "../src/crc32c.js";
import {
  describe,
  layoutFromCoords,
  openArrayReader,
  openReader,
  StreamWriter,
  writeStore,
} from "../src/index.js";
import { nativeDecompressors } from "../src/node.js";
import { CHECKSUMMED_COMPRESSOR, DEFAULT_COMPRESSOR, decodeChunk, encodeChunk } from "../src/zarr.js";
import { plain, randomCoords } from "./helpers.js";

const SHAPE = [60, 40];

/** Both layouts of a random 60 x 40 matrix, in chunks of 32 elements, in memory. */
async function store(options: { byteAddressable?: boolean; checksums?: boolean } = {}) {
  const spec = randomCoords(SHAPE, 0.25, 3, "int32");
  const layouts = [0, 1].map((axis) =>
    layoutFromCoords(SHAPE, spec.coords, new Int32Array(spec.values), axis),
  );
  const backing = new MemoryStore();
  await writeStore(backing, layouts, options.byteAddressable ? options : { chunk: 32, ...options });
  return { backing, layouts };
}

/** Rewrite chunk `key` (int32, default zstd) with `edit` applied to its decoded elements. */
async function editChunk(backing: MemoryStore, key: string, edit: (values: Int32Array) => void) {
  const bytes = (await backing.get(key)) as Uint8Array;
  const decoded = new Int32Array(await zstdDecode(bytes, 32));
  edit(decoded);
  await backing.set(key, await encodeChunk(decoded, [DEFAULT_COMPRESSOR]));
}

async function zstdDecode(bytes: Uint8Array, length: number): Promise<Int32Array> {
  const info = {
    path: "x",
    dtype: "int32" as const,
    length,
    chunk: length,
    fillValue: 0,
    compressors: [DEFAULT_COMPRESSOR],
    chunkKey: (i: number) => `c/${i}`,
  };
  return (await decodeChunk(bytes, info, 0)) as Int32Array;
}

async function everyRead(reader: Awaited<ReturnType<typeof openReader>>) {
  const n = reader.info.slices;
  await reader.slicesOver(0, n);
}

test("a missing data chunk of a complete store is refused naming it, not read as zeros; fillMissingData reads zarr's fill value", async () => {
  for (const byteAddressable of [false, true]) {
    const { backing, layouts } = await store({ byteAddressable });
    const key = byteAddressable ? "/layouts/axis1/data/c/0" : "/layouts/axis1/data/c/2";
    await backing.delete(key);
    const reader = await openReader(backing, { axis: 1 });
    const refused = {
      _tag: "IncompleteError",
      object: key,
      message: /is missing from the store.*fillMissingData/,
    };
    await assert.rejects(everyRead(reader), refused);
    await assert.rejects(reader.readLayout(), refused);
    const array = await openArrayReader(backing);
    await assert.rejects(
      array.slicesAt([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], { axis: 1 }),
      refused,
    );
    // The explicit option: zarr's reading, zeros where the chunk was.
    const filling = await openReader(backing, { axis: 1, fillMissingData: true });
    const values = plain((await filling.readLayout()).data);
    const start = byteAddressable ? 0 : 64;
    const end = byteAddressable ? values.length : 96;
    assert.deepEqual(values.slice(start, end), new Array(end - start).fill(0));
    assert.deepEqual(values.slice(0, start), plain(layouts[1]?.data).slice(0, start));
  }
});

test("a data chunk of explicit zeros is stored by both writers, so the store reads back whole", async () => {
  // 40 explicit zeros first along axis 0: data chunk 0 (32 elements) is all zeros.
  const rows = Array.from({ length: 40 }, (_, k) => Math.floor(k / 4));
  const cols = Array.from({ length: 40 }, (_, k) => k % 4);
  const values = Int32Array.from({ length: 40 }, (_, k) => (k < 32 ? 0 : k));
  const layout = layoutFromCoords([10, 4], [rows, cols], values, 0);
  const inMemory = new MemoryStore();
  await writeStore(inMemory, layout, { chunk: 32 });
  const streamed = new MemoryStore();
  const writer = await StreamWriter.open(streamed, { shape: [10, 4], axes: [0], chunk: 32 });
  await writer.writeRows({
    nRows: 10,
    indptr: layout.indptr as Int32Array,
    indices: layout.indices as Int32Array,
    data: layout.data,
  });
  await writer.finish();
  for (const backing of [inMemory, streamed]) {
    assert.ok((await backing.get("/layouts/axis0/data/c/0")) !== undefined);
    const reader = await openReader(backing, { axis: 0 });
    assert.deepEqual(plain((await reader.readLayout()).data), plain(values));
  }
});

test("an indices chunk holding a position past the other axes is refused when decoded, naming it, without checkIndices", async () => {
  const { backing } = await store();
  await editChunk(backing, "/layouts/axis0/indices/c/1", (v) => {
    v[5] = 40; // the other axis has 40 positions: 0..39
  });
  const reader = await openReader(backing, { axis: 0 });
  await assert.rejects(everyRead(reader), {
    _tag: "LayoutError",
    object: "/layouts/axis0/indices/c/1",
    message: /indices\[37\] is 40, but positions along the other axes are below 40/,
  });
});

test("an indptr chunk that decreases is refused when decoded, naming it, whichever slice is read", async () => {
  const { backing } = await store();
  // indptr of axis 0 has 61 entries: chunk 1 holds entries 32..63. Entry 40 made smaller than 39.
  await editChunk(backing, "/layouts/axis0/indptr/c/1", (v) => {
    v[8] = (v[7] as number) - 1;
  });
  const reader = await openReader(backing, { axis: 0 });
  // Slice 33's own bracket (entries 33, 34) is intact: the chunk is refused all the same.
  await assert.rejects(reader.sliceAt(33), {
    _tag: "LayoutError",
    object: "/layouts/axis0/indptr/c/1",
    message: /indptr\[40\] is \d+ after \d+, but indptr never decreases/,
  });
});

test("an indptr entry past the values is refused when decoded", async () => {
  const { backing, layouts } = await store();
  const nnz = layouts[0]?.data.length as number;
  await editChunk(backing, "/layouts/axis0/indptr/c/0", (v) => {
    for (let k = 20; k < 32; k++) v[k] = nnz + 1;
  });
  const reader = await openReader(backing, { axis: 0 });
  await assert.rejects(reader.sliceAt(0), {
    _tag: "LayoutError",
    object: "/layouts/axis0/indptr/c/0",
    message: new RegExp(`indptr\\[20\\] is ${nnz + 1}.*within the ${nnz} values`),
  });
});

test("with checksums a chunk whose bytes changed but still decode is refused, through WebAssembly and native zstd", async () => {
  const { backing } = await store({ checksums: true });
  const key = "/layouts/axis0/data/c/1";
  const info = (await describe(backing)).layouts.get(0)?.arrays.data;
  const bytes = (await backing.get(key)) as Uint8Array;
  // Other values in a well-formed frame that keeps the old checksum: what a changed byte that
  // zstd still decodes amounts to.
  const values = Int32Array.from((await decodeChunk(bytes, info!, 1)) as Int32Array);
  values[3] = (values[3] as number) + 1;
  const frame = await encodeChunk(values, [DEFAULT_COMPRESSOR]);
  const damaged = new Uint8Array(frame.length + 4);
  damaged.set(frame);
  damaged[4] = (damaged[4] as number) | 0x04;
  damaged.set(bytes.subarray(bytes.length - 4), frame.length);
  await backing.set(key, damaged);
  for (const decompressors of [{}, nativeDecompressors]) {
    const reader = await openReader(backing, { axis: 0, decompressors });
    await assert.rejects(reader.readLayout(), {
      _tag: "LayoutError",
      object: key,
      message: /fails its zstd content checksum/,
    });
  }
});

test("a chunk of a checksummed array whose frame announces no checksum is refused, not decoded unchecked", async () => {
  const { backing } = await store({ checksums: true });
  const key = "/layouts/axis1/indices/c/0";
  const info = (await describe(backing)).layouts.get(1)?.arrays.indices;
  assert.deepEqual(info?.compressors, [CHECKSUMMED_COMPRESSOR]);
  const decoded = await decodeChunk((await backing.get(key)) as Uint8Array, info!, 0);
  // The same elements, compressed without a checksum (what flipping the header's flag leaves).
  await backing.set(key, await encodeChunk(decoded, [DEFAULT_COMPRESSOR]));
  for (const decompressors of [{}, nativeDecompressors]) {
    const reader = await openReader(backing, { axis: 1, decompressors });
    await assert.rejects(reader.sliceAt(0), {
      _tag: "LayoutError",
      object: key,
      message: /not a zstd frame with a content checksum, which its array declares/,
    });
  }
});

test("checksums and byteAddressable together are refused before anything is written", async () => {
  const backing = new MemoryStore();
  const layout = layoutFromCoords([2, 2], [[0], [1]], Int32Array.of(3), 0);
  await assert.rejects(writeStore(backing, layout, { checksums: true, byteAddressable: true }), {
    _tag: "InvalidArgument",
    message: /a byte-range read of part of it cannot verify it/,
  });
  await assert.rejects(
    StreamWriter.open(backing, { shape: [2, 2], checksums: true, byteAddressable: true }),
    { _tag: "InvalidArgument" },
  );
  assert.deepEqual(await backing.list(""), []);
});

test("a crc32c after zstd is checked before the plugged (native) zstd decodes the chunk, and a mismatch is refused naming it", async () => {
  const { backing, layouts } = await store();
  // zarr-python's zstd + crc32c spelling for axis 0's data: every chunk gets its checksum appended.
  const meta = "/layouts/axis0/data/zarr.json";
  const json = JSON.parse(new TextDecoder().decode((await backing.get(meta)) as Uint8Array));
  json.codecs.push({ name: "crc32c" });
  await backing.set(meta, new TextEncoder().encode(JSON.stringify(json)));
  const keys = (await backing.list("layouts/axis0/data/c/")).sort();
  for (const key of keys) {
    const bytes = (await backing.get(key)) as Uint8Array;
    const out = new Uint8Array(bytes.length + 4);
    out.set(bytes);
    new DataView(out.buffer).setUint32(bytes.length, crc32c(bytes), true);
    await backing.set(key, out);
  }
  let native = 0;
  const counted = {
    zstd: (stored: Uint8Array, into: Uint8Array, configuration: Readonly<Record<string, unknown>>) => {
      native++;
      return (nativeDecompressors.zstd as NonNullable<typeof nativeDecompressors.zstd>)(
        stored,
        into,
        configuration,
      );
    },
  };
  const reader = await openReader(backing, { axis: 0, decompressors: counted });
  assert.deepEqual(plain((await reader.readLayout()).data), plain(layouts[0]?.data));
  const others = await Promise.all(["indices", "indptr"].map((a) => backing.list(`layouts/axis0/${a}/c/`)));
  assert.equal(native, keys.length + others.flat().length, "every chunk went through the plugged zstd");
  const damaged = (await backing.get(keys[1] as string)) as Uint8Array;
  damaged[10] = (damaged[10] as number) ^ 0x20;
  await backing.set(keys[1] as string, damaged);
  const again = await openReader(backing, { axis: 0, decompressors: counted });
  await assert.rejects(again.readLayout(), {
    _tag: "LayoutError",
    object: `/${keys[1]}`,
    message: /fails its crc32c checksum/,
  });
});
