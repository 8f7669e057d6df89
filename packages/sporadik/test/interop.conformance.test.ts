/**
 * The format is specified only if two independent implementations agree: stores written here are
 * read by Python sporadik (and anndata), and stores written by Python sporadik are read here, value
 * for value and dtype for dtype.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import type { NumericArray } from "../src/dtypes.js";
import { describe, layoutFromCoords, openReader, writeStore } from "../src/index.js";
import { type CoordSpec, jsonFile, plain, python, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);

interface PyArray {
  dtype: string;
  values: number[];
}
interface PyLayout {
  path: string;
  encoding: string;
  encoding_version: string;
  indexed_axis: number;
  index_order: number[];
  nnz: number;
  dtype: string;
  chunks: { data: number; indices: number; indptr: number };
  range_readable: boolean;
  has_maxima: boolean;
  data: PyArray;
  indices: PyArray;
  indptr: PyArray;
  maxima: PyArray;
  slices: { bounds: number[]; positions: PyArray; values: PyArray; coords: number[][]; dense: number[] }[];
}
interface PyRead {
  spec: string;
  shape: number[];
  layouts: Record<string, PyLayout>;
}

const CONSTRUCTORS = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
} as const;

function valuesOf(spec: CoordSpec): NumericArray {
  if (spec.dtype === "int64") return BigInt64Array.from(spec.values.map(BigInt));
  const Ctor = CONSTRUCTORS[spec.dtype as "float32" | "float64" | "int32"];
  return new Ctor(spec.values);
}

/** Everything our reader says about a store equals what Python's readers say about it. */
async function assertAgrees(path: string, py: PyRead): Promise<void> {
  const store = new FolderStore(path);
  const info = await describe(store);
  assert.equal(info.spec, py.spec);
  assert.deepEqual(info.shape, py.shape);
  assert.deepEqual([...info.layouts.keys()].sort(), Object.keys(py.layouts).map(Number).sort());
  for (const [axis, theirs] of Object.entries(py.layouts)) {
    const reader = await openReader(store, { axis: Number(axis) });
    const ours = reader.info;
    assert.equal(ours.path, theirs.path);
    assert.equal(ours.encoding, theirs.encoding);
    assert.equal(ours.encodingVersion, theirs.encoding_version);
    assert.deepEqual(ours.indexOrder, theirs.index_order);
    assert.equal(ours.nnz, theirs.nnz);
    assert.equal(ours.dtype, theirs.dtype);
    assert.deepEqual(ours.chunks, theirs.chunks);
    assert.equal(ours.hasMaxima, theirs.has_maxima);
    // Python calls an empty array with a chunk of 1 not range-readable; there is nothing to read.
    if (ours.nnz > 0) assert.equal(ours.byteAddressable, theirs.range_readable);
    const layout = await reader.readLayout();
    for (const name of ["data", "indices", "indptr"] as const) {
      assert.equal(ours.arrays[name].dtype, theirs[name].dtype, `${axis}/${name} dtype`);
      assert.deepEqual(plain(layout[name]), theirs[name].values, `${axis}/${name} values`);
    }
    const maxima = await reader.maxima();
    assert.equal(ours.arrays.maxima?.dtype ?? ours.dtype, theirs.maxima.dtype);
    assert.deepEqual(plain(maxima), theirs.maxima.values);
    for (let position = 0; position < theirs.slices.length; position++) {
      const expected = theirs.slices[position] as PyLayout["slices"][number];
      assert.deepEqual(await reader.boundsAt(position), expected.bounds);
      const slice = await reader.sliceAt(position);
      assert.deepEqual(plain(slice.positions), expected.positions.values, `slice ${position} positions`);
      assert.deepEqual(plain(slice.values), expected.values.values, `slice ${position} values`);
      const { coords } = await reader.coordsAt(position);
      assert.deepEqual(
        coords.map((c) => Array.from(c)),
        expected.coords,
      );
      assert.deepEqual(plain((await reader.denseSlice(position)).values), expected.dense);
    }
  }
}

const CASES: {
  name: string;
  shape: number[];
  dtype: string;
  byteAddressable: boolean;
  maxima: boolean;
  chunk?: number;
}[] = [
  {
    name: "rank 2, chunked, with maxima",
    shape: [40, 25],
    dtype: "float32",
    byteAddressable: false,
    maxima: true,
  },
  {
    name: "rank 2, chunked in many chunks, int32 values",
    shape: [40, 25],
    dtype: "int32",
    byteAddressable: false,
    maxima: true,
    chunk: 16,
  },
  {
    name: "rank 2, byte-addressable, without maxima",
    shape: [40, 25],
    dtype: "float64",
    byteAddressable: true,
    maxima: false,
  },
  {
    name: "rank 3, chunked in many chunks, int64 values, without maxima",
    shape: [7, 6, 5],
    dtype: "int64",
    byteAddressable: false,
    maxima: false,
    chunk: 7,
  },
  {
    name: "rank 3, byte-addressable, with maxima",
    shape: [7, 6, 5],
    dtype: "float32",
    byteAddressable: true,
    maxima: true,
  },
];

for (const [k, c] of CASES.entries()) {
  test(`a store written here (${c.name}) passes Python's describe and reads back the same everywhere`, async () => {
    const spec = randomCoords(c.shape, 0.2, 100 + k, c.dtype);
    const values = valuesOf(spec);
    const layouts = c.shape.map((_, axis) => layoutFromCoords(spec.shape, spec.coords, values, axis));
    const path = join(dir, `ours-${k}.zarr`);
    await writeStore(new FolderStore(path), layouts, {
      byteAddressable: c.byteAddressable,
      maxima: c.maxima,
      ...(c.chunk ? { chunk: c.chunk } : {}),
    });
    const py = python<PyRead>("read", path);
    assert.equal(Object.keys(py.layouts).length, c.shape.length);
    await assertAgrees(path, py);
  });
}

const PY_CASES: {
  name: string;
  shape: number[];
  dtype: string;
  byteAddressable: boolean;
  chunk?: number;
  axes?: number[];
  density?: number;
}[] = [
  { name: "rank 2, chunked", shape: [30, 20], dtype: "float32", byteAddressable: false, chunk: 16 },
  { name: "rank 2, one layout", shape: [30, 20], dtype: "float64", byteAddressable: false, axes: [1] },
  { name: "rank 3, byte-addressable", shape: [6, 5, 4], dtype: "float64", byteAddressable: true },
  {
    name: "rank 3, chunked, int64 values",
    shape: [6, 5, 4],
    dtype: "int64",
    byteAddressable: false,
    chunk: 5,
  },
  {
    name: "an empty array, whose all-zero chunks zarr never stored",
    shape: [5, 4],
    dtype: "float32",
    byteAddressable: false,
    density: 0,
  },
];

for (const [k, c] of PY_CASES.entries()) {
  test(`a store written by Python sporadik (${c.name}) reads here with identical results`, async () => {
    const spec = randomCoords(c.shape, c.density ?? 0.25, 200 + k, c.dtype);
    const path = join(dir, `python-${k}.zarr`);
    python(
      "write",
      path,
      jsonFile(dir, `python-${k}.json`, {
        ...spec,
        byte_addressable: c.byteAddressable,
        chunk: c.chunk ?? null,
        axes: c.axes ?? null,
      }),
    );
    await assertAgrees(path, python<PyRead>("read", path));
  });
}

test("at rank two anndata reads each layout as the matrix, and its arrays equal anndata's own dtype for dtype", async () => {
  for (const [k, dtype] of ["float32", "float64", "int64"].entries()) {
    const spec = randomCoords([50, 30], 0.15, 300 + k, dtype);
    const values = valuesOf(spec);
    const path = join(dir, `anndata-${k}.zarr`);
    await writeStore(
      new FolderStore(path),
      [0, 1].map((axis) => layoutFromCoords(spec.shape, spec.coords, values, axis)),
    );
    const report = python<{
      layouts: Record<
        string,
        {
          arrays: Record<string, { anndata: string; ours: string; equal: boolean }>;
          attrs: { anndata: Record<string, unknown>; ours: Record<string, unknown> };
          read_elem_format: string;
          read_elem_shape: number[];
          read_elem_equal: boolean;
        }
      >;
    }>("anndata", path, jsonFile(dir, `anndata-${k}.json`, spec));
    assert.deepEqual(Object.keys(report.layouts).sort(), ["axis0", "axis1"]);
    for (const [name, layout] of Object.entries(report.layouts)) {
      for (const [part, check] of Object.entries(layout.arrays)) {
        assert.equal(check.ours, check.anndata, `${dtype} ${name}/${part}: dtype`);
        assert.ok(check.equal, `${dtype} ${name}/${part}: values`);
      }
      assert.deepEqual(layout.attrs.ours, layout.attrs.anndata);
      assert.equal(layout.read_elem_format, name === "axis0" ? "csr" : "csc");
      assert.deepEqual(layout.read_elem_shape, [50, 30], "not the transpose");
      assert.ok(layout.read_elem_equal);
    }
  }
});

test("byte-addressable stores with all-zero arrays (one cell; no nonzeros): ours read in Python, Python's (those objects left out) read here", async () => {
  for (const [k, shape, density] of [
    [0, [1, 9], 0.5],
    [1, [9, 1], 0.5],
    [2, [3, 4], 0],
  ] as const) {
    const spec = randomCoords([...shape], density, 300 + k, "int32");
    const values = new Int32Array(spec.values);
    const ours = join(dir, `zeros-ours-${k}.zarr`);
    const theirs = join(dir, `zeros-theirs-${k}.zarr`);
    await writeStore(
      new FolderStore(ours),
      shape.map((_, axis) => layoutFromCoords([...shape], spec.coords, values, axis)),
      { byteAddressable: true },
    );
    python("write", theirs, jsonFile(dir, `zeros-${k}.json`, { ...spec, byte_addressable: true }));
    // Python reads ours (every object there); ours reads both and agrees with what Python read.
    const py = python<PyRead>("read", ours);
    await assertAgrees(ours, py);
    await assertAgrees(theirs, py);
  }
});
