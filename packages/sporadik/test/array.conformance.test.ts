/** The convenience layer: SparseArray builds the same layouts; openArrayReader keeps a reader per axis. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { type Layout, layoutFromCoords, openArrayReader, SparseArray } from "../src/index.js";
import { counting, plain, python, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);

function sameLayout(a: Layout, b: Layout): void {
  assert.deepEqual(a.shape, b.shape);
  assert.equal(a.indexedAxis, b.indexedAxis);
  assert.deepEqual(a.indexOrder, b.indexOrder);
  for (const name of ["data", "indices", "indptr"] as const) {
    assert.equal(a[name].constructor, b[name].constructor, name);
    assert.deepEqual(plain(a[name]), plain(b[name]), name);
  }
}

const SPEC = randomCoords([12, 9, 5], 0.2, 51);
const VALUES = new Float32Array(SPEC.values);

test("fromCoords builds one layout per axis by default, each the layout of that axis", () => {
  const array = SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES);
  assert.deepEqual(array.indexedAxes, [0, 1, 2]);
  for (const axis of [0, 1, 2])
    sameLayout(array.layout(axis), layoutFromCoords(SPEC.shape, SPEC.coords, VALUES, axis));
  assert.equal(array.nnz, VALUES.length);
});

test("withAxis re-compresses through the coordinates to the same layout", () => {
  const one = SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES, { axes: [1] });
  assert.deepEqual(one.indexedAxes, [1]);
  const both = one.withAxis(2);
  assert.deepEqual(both.indexedAxes, [1, 2]);
  sameLayout(both.layout(2), layoutFromCoords(SPEC.shape, SPEC.coords, VALUES, 2));
  assert.equal(both.withAxis(2), both, "an axis already held is not rebuilt");
});

test("fromMatrix takes a CSR matrix and adds its CSC layout", () => {
  const spec = randomCoords([20, 15], 0.2, 53);
  const values = new Float64Array(spec.values);
  const csr = layoutFromCoords(spec.shape, spec.coords, values, 0);
  const array = SparseArray.fromMatrix({
    format: "csr",
    shape: csr.shape,
    data: csr.data,
    indices: csr.indices,
    indptr: csr.indptr,
  });
  assert.deepEqual(array.indexedAxes, [0, 1]);
  sameLayout(array.layout(1), layoutFromCoords(spec.shape, spec.coords, values, 1));
  const cscOnly = SparseArray.fromMatrix(
    { format: "csr", shape: csr.shape, data: csr.data, indices: csr.indices, indptr: csr.indptr },
    { axes: [1] },
  );
  assert.deepEqual(cscOnly.indexedAxes, [1]);
});

test("fromDense keeps the nonzero cells", () => {
  const dense = new Int32Array([0, 4, 0, 0, 0, 7]);
  const array = SparseArray.fromDense([2, 3], dense);
  assert.deepEqual(plain(array.layout(1).data), [4, 7]);
  assert.deepEqual(plain(array.layout(0).indices), [1, 2]);
});

test("the convenience layer refuses what the Python one refuses", () => {
  assert.throws(() => SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES, { axes: [] }), {
    _tag: "LayoutError",
    message: /holds none/,
  });
  assert.throws(() => SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES, { axes: [3] }), {
    _tag: "LayoutError",
    message: /axis 3 is not an axis/,
  });
  const one = SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES, { axes: [0] });
  assert.throws(() => one.layout(1), { _tag: "LayoutError", message: /withAxis\(1\)/ });
  assert.throws(() => SparseArray.fromLayouts([one.layout(0)], { axes: [2] }), {
    _tag: "LayoutError",
    message: /not axis 2.*withAxis\(2\)/,
  });
  assert.throws(() => one.withAxis(5), { _tag: "LayoutError" });
});

test("openArrayReader keeps one description and a reader per axis, and the axis is named", async () => {
  const backing = counting(new MemoryStore());
  const array = SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES, { axes: [0, 2] });
  await array.write(backing);
  backing.reset();
  const store = await openArrayReader(backing);
  const described = backing.requests.length;
  assert.deepEqual(store.indexedAxes, [0, 2]);
  assert.equal(store.nnz, VALUES.length);
  await assert.rejects(async () => store.sliceAt(0), { _tag: "LayoutError", message: /Pass \{ axis \}/ });
  await assert.rejects(async () => store.sliceAt(0, { axis: 1 }), {
    _tag: "LayoutError",
    message: /scan of every byte/,
  });
  const a = await store.sliceAt(3, { axis: 2 });
  const b = await store.sliceAt(3, { axis: 2 });
  assert.deepEqual(a, b);
  assert.equal(store.along(2), store.along(2));
  assert.equal(
    backing.requests.filter((r) => r.key.endsWith("zarr.json")).length,
    described,
    "described once",
  );
  const back = await store.toArray();
  for (const axis of [0, 2]) sameLayout(back.layout(axis), array.layout(axis));
});

test("an array written through the convenience layer reads the same in Python", async () => {
  const path = join(dir, "array.zarr");
  const array = SparseArray.fromCoords(SPEC.shape, SPEC.coords, VALUES);
  await array.write(new FolderStore(path), { byteAddressable: true });
  const py = python<{
    layouts: Record<string, { indices: { values: number[] }; data: { values: number[] } }>;
  }>("read", path);
  for (const axis of [0, 1, 2]) {
    assert.deepEqual(plain(array.layout(axis).indices), py.layouts[String(axis)]?.indices.values);
    assert.deepEqual(plain(array.layout(axis).data), py.layouts[String(axis)]?.data.values);
  }
});
