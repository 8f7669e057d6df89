/** What reads cost, counted at the store: requests, waves and bytes. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { describe, layoutFromCoords, openReader, writeStore } from "../src/index.js";
import { counting, plain, randomCoords } from "./helpers.js";

const SHAPE = [200, 50];

async function store(options: Parameters<typeof writeStore>[2]) {
  const spec = randomCoords(SHAPE, 0.2, 21);
  const layouts = [0, 1].map((axis) =>
    layoutFromCoords(SHAPE, spec.coords, new Float32Array(spec.values), axis),
  );
  const backing = counting(new MemoryStore());
  await writeStore(backing, layouts, options);
  backing.reset();
  return { backing, layouts };
}

test("describe reads the root, then every layout's metadata in one wave", async () => {
  const { backing } = await store({});
  await describe(backing);
  assert.equal(backing.waves(), 2);
  // root + (group + data, indices, indptr, maxima) per layout
  assert.equal(backing.requests.length, 1 + 2 * 5);
});

test("a byte-addressable slice costs its indptr bracket and its own bytes, in two waves", async () => {
  const { backing, layouts } = await store({ byteAddressable: true });
  const reader = await openReader(backing, { axis: 0 });
  const indptr = layouts[0]?.indptr as Int32Array;
  for (const position of [0, 17, 199]) {
    backing.reset();
    const nnz = (indptr[position + 1] as number) - (indptr[position] as number);
    assert.ok(nnz > 0);
    const slice = await reader.sliceAt(position);
    assert.equal(slice.values.length, nnz);
    assert.equal(backing.waves(), 2);
    assert.deepEqual(
      backing.requests.map((r) => [r.kind, r.key.split("/").at(-3), r.bytes]),
      [
        ["getRange", "indptr", 8],
        ["getRange", "indices", 4 * nnz],
        ["getRange", "data", 4 * nnz],
      ],
    );
  }
});

test("an empty byte-addressable slice costs only its bracket", async () => {
  const spec = { coords: [[0], [0]], values: [1] };
  const backing = counting(new MemoryStore());
  await writeStore(backing, layoutFromCoords([3, 3], spec.coords, new Float32Array(spec.values), 0), {
    byteAddressable: true,
  });
  const reader = await openReader(backing);
  backing.reset();
  const slice = await reader.sliceAt(2);
  assert.equal(slice.values.length, 0);
  assert.deepEqual(
    backing.requests.map((r) => [r.kind, r.bytes]),
    [["getRange", 8]],
  );
});

test("a chunked slice reads whole chunks once and reuses them for neighbouring slices", async () => {
  const { backing } = await store({ chunk: 256 });
  const reader = await openReader(backing, { axis: 0 });
  backing.reset();
  await reader.sliceAt(10);
  assert.equal(backing.waves(), 2);
  assert.deepEqual(
    backing.requests.map((r) => [r.kind, r.key.split("/").slice(-3).join("/")]),
    [
      ["get", "indptr/c/0"],
      ["get", "indices/c/0"],
      ["get", "data/c/0"],
    ],
  );
  backing.reset();
  await reader.sliceAt(11);
  await reader.boundsAt(12);
  assert.equal(backing.requests.length, 0, "the chunks already held serve the next slices");
});

test("a slice spanning two chunks fetches both in the same wave", async () => {
  const { backing, layouts } = await store({ chunk: 8 });
  const reader = await openReader(backing, { axis: 1 });
  const indptr = layouts[1]?.indptr as Int32Array;
  backing.reset();
  const slice = await reader.sliceAt(3);
  const [lo, hi] = [indptr[3] as number, indptr[4] as number];
  const chunks = Math.floor((hi - 1) / 8) - Math.floor(lo / 8) + 1;
  assert.ok(chunks >= 2);
  assert.equal(slice.values.length, hi - lo);
  assert.equal(backing.waves(), 2);
  assert.equal(backing.requests.filter((r) => r.key.includes("/data/")).length, chunks);
});

test("a reader keeps decoded chunks for reuse, within cacheBytes", async () => {
  const { backing } = await store({});
  const kept = await openReader(backing, { axis: 0 });
  await kept.sliceAt(5);
  backing.reset();
  await kept.sliceAt(6);
  assert.equal(backing.requests.length, 0);
  const none = await openReader(backing, { axis: 0, cacheBytes: 0 });
  await none.sliceAt(5);
  backing.reset();
  await none.sliceAt(6);
  assert.ok(backing.requests.length > 0, "a cache of 0 bytes keeps nothing");
});

test("stored maxima are one read of the maxima array; without them every value is reduced", async () => {
  const { backing, layouts } = await store({});
  const reader = await openReader(backing, { axis: 1 });
  backing.reset();
  const stored = await reader.maxima();
  assert.deepEqual(
    backing.requests.map((r) => r.key.split("/").slice(-3).join("/")),
    ["maxima/c/0"],
  );
  const { backing: bare } = await store({ maxima: false });
  const computed = await (await openReader(bare, { axis: 1 })).maxima();
  assert.deepEqual(computed, stored);
  assert.equal(computed.length, layouts[1]?.shape[1]);
});

test("coordinates come back in index_order and dense slices are row-major over it", async () => {
  const backing = new MemoryStore();
  // shape [2, 3, 4], indexing axis 1 with index_order [2, 0]: cell (1, 2, 3) ravels to 3 * 2 + 1 = 7.
  const base = layoutFromCoords([2, 3, 4], [[1], [2], [3]], new Float32Array([9]), 1);
  const reordered = { ...base, indexOrder: [2, 0], indices: new Int32Array([7]) };
  await writeStore(backing, reordered);
  const reader = await openReader(backing);
  const { axes, coords, values } = await reader.coordsAt(2);
  assert.deepEqual(axes, [2, 0]);
  assert.deepEqual(
    coords.map((c) => Array.from(c)),
    [[3], [1]],
  );
  assert.deepEqual(plain(values), [9]);
  const dense = await reader.denseSlice(2);
  assert.deepEqual(dense.shape, [4, 2]);
  assert.equal(dense.values[7], 9);
  assert.equal(
    plain(dense.values).reduce((a, b) => a + b, 0),
    9,
  );
});

test("a store may live under a prefix of a larger store", async () => {
  const spec = randomCoords([10, 8], 0.3, 23);
  const backing = new MemoryStore();
  await writeStore(backing, layoutFromCoords([10, 8], spec.coords, new Float32Array(spec.values), 0), {
    prefix: "/projects/p1/matrix.zarr/",
  });
  assert.ok((await backing.list("projects/p1/matrix.zarr/layouts/axis0")).length > 0);
  await assert.rejects(describe(backing), { _tag: "IncompleteError" });
  const reader = await openReader(backing, { prefix: "projects/p1/matrix.zarr" });
  const whole = await reader.readLayout();
  assert.deepEqual(
    plain(whole.indptr),
    plain(layoutFromCoords([10, 8], spec.coords, new Float32Array(spec.values), 0).indptr),
  );
});
