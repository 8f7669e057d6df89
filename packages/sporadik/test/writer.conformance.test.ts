import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { after, test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import * as zarr from "zarrita";
import { chunkFor, layoutFromCoords, writeStore } from "../src/index.js";
import { decodeChunk, parseArrayMetadata } from "../src/zarr.js";
import { counting, jsonFile, python, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);

function files(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(root, p));
    }
  };
  walk(root);
  return out.sort();
}

const CASES = [
  { name: "rank 2, default chunks", shape: [60, 40], density: 0.2, dtype: "float32", byteAddressable: false },
  {
    name: "rank 2, float64 values in many chunks",
    shape: [60, 40],
    density: 0.2,
    dtype: "float64",
    byteAddressable: false,
    chunk: 50,
  },
  {
    name: "rank 3, explicit chunk larger than some arrays",
    shape: [6, 5, 4],
    density: 0.3,
    dtype: "float32",
    byteAddressable: false,
    chunk: 40,
  },
  {
    name: "rank 2, byte-addressable",
    shape: [60, 40],
    density: 0.2,
    dtype: "float32",
    byteAddressable: true,
  },
  {
    name: "rank 3, byte-addressable, int64 values",
    shape: [6, 5, 4],
    density: 0.3,
    dtype: "int64",
    byteAddressable: true,
  },
  { name: "an empty matrix", shape: [3, 4], density: 0, dtype: "float64", byteAddressable: false },
  // All-zero arrays: indices of the one-cell layout along genes, indptr and maxima of no nonzeros.
  { name: "one cell, byte-addressable", shape: [1, 9], density: 0.5, dtype: "int32", byteAddressable: true },
  {
    name: "an empty matrix, byte-addressable",
    shape: [3, 4],
    density: 0,
    dtype: "int32",
    byteAddressable: true,
  },
];

for (const [k, c] of CASES.entries()) {
  test(`the files written for ${c.name} are Python's: same keys, same zarr.json text, same decoded chunks`, async () => {
    const spec = randomCoords(c.shape, c.density, 500 + k, c.dtype);
    const values =
      c.dtype === "int64"
        ? BigInt64Array.from(spec.values.map(BigInt))
        : c.dtype === "float64"
          ? new Float64Array(spec.values)
          : c.dtype === "int32"
            ? new Int32Array(spec.values)
            : new Float32Array(spec.values);
    const ours = join(dir, `ours-${k}.zarr`);
    const theirs = join(dir, `theirs-${k}.zarr`);
    await writeStore(
      new FolderStore(ours),
      c.shape.map((_, axis) => layoutFromCoords(c.shape, spec.coords, values, axis)),
      { byteAddressable: c.byteAddressable, ...(c.chunk ? { chunk: c.chunk } : {}) },
    );
    python(
      "write",
      theirs,
      jsonFile(dir, `spec-${k}.json`, {
        ...spec,
        byte_addressable: c.byteAddressable,
        chunk: c.chunk ?? null,
      }),
    );
    const keys = files(theirs);
    // zarr-python leaves out an all-zero chunk, and so does Python sporadik 1.1.1 even when the
    // chunk is a byte-addressable array's one object (it then fails reading its own store); we
    // write those objects, and only those are extra.
    const extra = files(ours).filter((key) => !keys.includes(key));
    assert.deepEqual(
      keys.filter((key) => !files(ours).includes(key)),
      [],
    );
    if (!c.byteAddressable) assert.deepEqual(extra, []);
    // Byte-addressable: every array with elements has its one object, whatever its values.
    for (const meta of files(ours).filter((key) => /\/(data|indices|indptr|maxima)\/zarr\.json$/.test(key))) {
      const array = meta.slice(0, -"/zarr.json".length);
      const length = JSON.parse(readFileSync(join(ours, meta), "utf8")).shape[0];
      if (c.byteAddressable && length > 0) assert.ok(files(ours).includes(`${array}/c/0`), `${array}/c/0`);
    }
    for (const key of extra) {
      assert.match(key, /\/c\/0$/);
      assert.ok(
        readFileSync(join(ours, key)).every((b) => b === 0),
        `${key} is all zeros`,
      );
    }
    for (const key of keys.filter((name) => name.endsWith("zarr.json"))) {
      assert.equal(readFileSync(join(ours, key), "utf8"), readFileSync(join(theirs, key), "utf8"), key);
    }
    for (const key of keys.filter((name) => !name.endsWith("zarr.json"))) {
      const arrayPath = key.replace(/\/c\/\d+$/, "");
      const index = Number(key.slice(key.lastIndexOf("/") + 1));
      const info = parseArrayMetadata(
        JSON.parse(readFileSync(join(ours, arrayPath, "zarr.json"), "utf8")),
        arrayPath,
      );
      const a = await decodeChunk(new Uint8Array(readFileSync(join(ours, key))), info, index);
      const b = await decodeChunk(new Uint8Array(readFileSync(join(theirs, key))), info, index);
      assert.deepEqual(a, b, key);
      if (c.byteAddressable)
        assert.deepEqual(readFileSync(join(ours, key)), readFileSync(join(theirs, key)), key);
    }
  });
}

test("the block is written last, after every chunk, and the root is blockless until then", async () => {
  const spec = randomCoords([50, 30], 0.3, 9);
  const store = counting(new MemoryStore());
  await writeStore(
    store,
    [0, 1].map((axis) => layoutFromCoords([50, 30], spec.coords, new Float32Array(spec.values), axis)),
    { chunk: 64 },
  );
  const sets = store.requests.filter((r) => r.kind === "set");
  assert.equal(sets[0]?.key, "/zarr.json");
  assert.equal(sets.at(-1)?.key, "/zarr.json");
  assert.ok(sets.filter((r) => r.key.includes("/c/")).length > 10, "many chunks were written before it");
  const root = JSON.parse(new TextDecoder().decode(await store.get("/zarr.json")));
  assert.equal(root.attributes.sporadik.complete, true);
  // Between the first and the last write, a reader sees a root without a block.
  assert.equal(
    sets[0]?.bytes,
    new TextEncoder().encode(JSON.stringify({ attributes: {}, zarr_format: 3, node_type: "group" }, null, 2))
      .byteLength,
  );
});

test("maxima are written only when asked for", async () => {
  const spec = randomCoords([20, 10], 0.3, 11);
  const layouts = [layoutFromCoords([20, 10], spec.coords, new Float32Array(spec.values), 0)];
  const without = new MemoryStore();
  await writeStore(without, layouts, { maxima: false });
  assert.deepEqual((await without.list("layouts/axis0/maxima")).length, 0);
  const withMaxima = new MemoryStore();
  await writeStore(withMaxima, layouts);
  assert.ok((await withMaxima.list("layouts/axis0/maxima")).length > 0);
});

test("chunks hold 128 KiB worth of elements, never more than the array", () => {
  assert.equal(chunkFor("float32", 10 ** 6), 32_768);
  assert.equal(chunkFor("int64", 10 ** 6), 16_384);
  assert.equal(chunkFor("int32", 100), 100);
  assert.equal(chunkFor("float64", 0), 16_384);
  assert.equal(chunkFor("uint8", 10 ** 6), 131_072);
});

test("zarrita opens what was written and reads the same arrays", async () => {
  const spec = randomCoords([40, 30], 0.2, 13);
  const layout = layoutFromCoords([40, 30], spec.coords, new Float32Array(spec.values), 1);
  const store = new MemoryStore();
  await writeStore(store, layout, { chunk: 32 });
  const root = await zarr.open(store as unknown as zarr.Readable, { kind: "group" });
  assert.equal((root.attrs.sporadik as { complete: boolean }).complete, true);
  for (const name of ["data", "indices", "indptr"] as const) {
    const array = await zarr.open(root.resolve(`layouts/axis1/${name}`), { kind: "array" });
    const read = await zarr.get(array);
    assert.deepEqual(
      Array.from(read.data as ArrayLike<number>),
      Array.from(layout[name] as ArrayLike<number>),
      name,
    );
  }
});

test("a refused chunk size writes nothing", async () => {
  const spec = randomCoords([5, 5], 0.5, 15);
  const store = counting(new MemoryStore());
  await assert.rejects(
    writeStore(store, layoutFromCoords([5, 5], spec.coords, new Float32Array(spec.values), 0), { chunk: 0 }),
    { _tag: "InvalidArgument", found: 0 },
  );
  assert.equal(store.requests.length, 0);
});
