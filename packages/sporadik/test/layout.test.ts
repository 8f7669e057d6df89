import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import {
  layoutFromCompressed,
  layoutFromCoords,
  layoutFromDense,
  layoutOver,
  maximaOf,
  writeStore,
} from "../src/index.js";
import { needsInt64 } from "../src/layout.js";
import { counting, plain } from "./helpers.js";

// [[0, 1, 0],
//  [2, 0, 3]]
const SHAPE = [2, 3];
const ROWS = [1, 0, 1];
const COLS = [2, 1, 0];
const VALUES = new Float32Array([3, 1, 2]);

test("coordinates become CSR along axis 0 and CSC along axis 1, sorted within each run", () => {
  const csr = layoutFromCoords(SHAPE, [ROWS, COLS], VALUES, 0);
  assert.deepEqual(plain(csr.indptr), [0, 1, 3]);
  assert.deepEqual(plain(csr.indices), [1, 0, 2]);
  assert.deepEqual(plain(csr.data), [1, 2, 3]);
  assert.deepEqual(csr.indexOrder, [1]);
  const csc = layoutFromCoords(SHAPE, [ROWS, COLS], VALUES, 1);
  assert.deepEqual(plain(csc.indptr), [0, 1, 2, 3]);
  assert.deepEqual(plain(csc.indices), [1, 0, 1]);
  assert.deepEqual(plain(csc.data), [2, 1, 3]);
  assert.ok(csr.indices instanceof Int32Array && csr.indptr instanceof Int32Array);
  assert.ok(csr.data instanceof Float32Array);
});

test("above rank two the other axes are raveled row-major in ascending order", () => {
  // shape [2, 3, 4]: cell (1, 2, 3) along axis 1 ravels (a0, a2) = (1, 3) over [2, 4] to 7.
  const layout = layoutFromCoords(
    [2, 3, 4],
    [
      [1, 0],
      [2, 2],
      [3, 1],
    ],
    new Float64Array([5, 6]),
    1,
  );
  assert.deepEqual(layout.indexOrder, [0, 2]);
  assert.deepEqual(plain(layout.indptr), [0, 0, 0, 2]);
  assert.deepEqual(plain(layout.indices), [1, 7]);
  assert.deepEqual(plain(layout.data), [6, 5]);
});

test("repeated coordinates are summed by default, as scipy does", () => {
  const layout = layoutFromCoords(
    SHAPE,
    [
      [0, 0, 1],
      [1, 1, 2],
    ],
    new Float32Array([1.5, 2, 4]),
    0,
  );
  assert.deepEqual(plain(layout.data), [3.5, 4]);
  assert.deepEqual(plain(layout.indices), [1, 2]);
  assert.deepEqual(plain(layout.indptr), [0, 1, 2]);
});

test("repeated coordinates are refused when the caller asks", () => {
  assert.throws(
    () =>
      layoutFromCoords(
        SHAPE,
        [
          [0, 0],
          [1, 1],
        ],
        new Float32Array([1, 2]),
        0,
        { duplicates: "refuse" },
      ),
    {
      _tag: "LayoutError",
      message: /1 of 2 coordinates name a cell.*duplicates: "sum"/,
    },
  );
});

test("a coordinate outside the shape is refused, naming the axis", () => {
  assert.throws(() => layoutFromCoords(SHAPE, [[0], [3]], new Float32Array([1]), 0), {
    _tag: "LayoutError",
    message: /along axis 1 include 3/,
  });
});

test("a dense array keeps exactly its nonzero cells", () => {
  const layout = layoutFromDense(SHAPE, new Float32Array([0, 1, 0, 2, 0, 3]), 0);
  assert.deepEqual(plain(layout.indptr), [0, 1, 3]);
  assert.deepEqual(plain(layout.indices), [1, 0, 2]);
  assert.deepEqual(plain(layout.data), [1, 2, 3]);
});

test("64-bit values stay 64-bit and are summed exactly", () => {
  const big = 2n ** 60n;
  const layout = layoutFromCoords(
    SHAPE,
    [
      [0, 0],
      [1, 1],
    ],
    new BigInt64Array([big, 1n]),
    0,
  );
  assert.deepEqual(Array.from(layout.data as BigInt64Array), [big + 1n]);
});

test("indices widen to int64 exactly where scipy's do", () => {
  assert.equal(needsInt64([10, 20], [1], 100), false);
  assert.equal(needsInt64([10, 2 ** 31 - 1], [1], 0), false);
  assert.equal(needsInt64([10, 2 ** 31], [1], 0), true);
  // scipy widens on max(shape), the compressed axis included.
  assert.equal(needsInt64([2 ** 31, 3], [0], 0), true);
  // Above rank two the raveled extent is what indices range over.
  assert.equal(needsInt64([4, 2 ** 16, 2 ** 16], [1, 2], 0), true);
  const wide = layoutFromCoords([2, 2 ** 31], [[1], [2 ** 31 - 1]], new Float32Array([1]), 0);
  assert.ok(wide.indices instanceof BigInt64Array && wide.indptr instanceof BigInt64Array);
  assert.deepEqual(Array.from(wide.indices as BigInt64Array), [2n ** 31n - 1n]);
});

test("a CSR or CSC matrix takes its axis from its format", () => {
  const m = {
    shape: SHAPE,
    data: new Float32Array([1, 2, 3]),
    indices: new Int32Array([1, 0, 2]),
    indptr: new Int32Array([0, 1, 3]),
  };
  assert.equal(layoutFromCompressed({ format: "csr", ...m }).indexedAxis, 0);
  assert.throws(() => layoutFromCompressed({ format: "csc", ...m }), {
    _tag: "LayoutError",
    message: /indptr of 4 entries/,
  });
});

test("maxima are the largest absolute value per slice, zero for an empty one", () => {
  const maxima = maximaOf(new Float32Array([-5, 2, 1, -0.5]), new Int32Array([0, 2, 2, 4]));
  assert.deepEqual(plain(maxima), [5, 0, 1]);
  assert.ok(maxima instanceof Float32Array);
});

const DATA = new Float32Array([1, 2, 3]);
const INDICES = new Int32Array([1, 0, 2]);
const INDPTR = new Int32Array([0, 1, 3]);

/** The refusal happens before a single byte reaches the store. */
async function refusedBeforeWriting(
  layouts: Parameters<typeof writeStore>[1],
  message: RegExp,
): Promise<void> {
  const store = counting(new MemoryStore());
  await assert.rejects(writeStore(store, layouts), { _tag: "LayoutError", message });
  assert.equal(store.requests.length, 0, "nothing was written");
}

test("two layouts of the same axis are refused before anything is written", async () => {
  const layout = layoutOver(SHAPE, 0, { data: DATA, indices: INDICES, indptr: INDPTR });
  await refusedBeforeWriting([layout, layout], /Two layouts compress axis 0.*one layout per axis/);
});

test("layouts of different shapes are refused before anything is written", async () => {
  const a = layoutOver(SHAPE, 0, { data: DATA, indices: INDICES, indptr: INDPTR });
  const b = layoutFromCoords([3, 3], [[0], [0]], new Float32Array([1]), 1);
  await refusedBeforeWriting([a, b], /different shapes.*transposed/);
});

test("an axis outside the shape is refused", async () => {
  await refusedBeforeWriting(
    [{ shape: SHAPE, indexedAxis: 2, indexOrder: [0, 1], data: DATA, indices: INDICES, indptr: INDPTR }],
    /axis 2 is not an axis of shape \[2, 3\].*from 0 to 1/,
  );
});

test("a rank below two is refused", async () => {
  await refusedBeforeWriting(
    [{ shape: [3], indexedAxis: 0, indexOrder: [], data: DATA, indices: INDICES, indptr: new Int32Array(4) }],
    /at least 2 axes.*add an axis of length 1/,
  );
});

test("an indptr of the wrong length is refused", async () => {
  await refusedBeforeWriting(
    [{ shape: SHAPE, indexedAxis: 1, indexOrder: [0], data: DATA, indices: INDICES, indptr: INDPTR }],
    /indptr of 4 entries.*but it has 3.*transposed/,
  );
});

test("data and indices of different lengths are refused", async () => {
  await refusedBeforeWriting(
    [
      {
        shape: SHAPE,
        indexedAxis: 0,
        indexOrder: [1],
        data: DATA,
        indices: new Int32Array([1, 0]),
        indptr: INDPTR,
      },
    ],
    /data has 3 entries and indices 2; they are parallel/,
  );
});

test("an index order that is not a permutation of the other axes is refused", async () => {
  await refusedBeforeWriting(
    [{ shape: [2, 3, 1], indexedAxis: 0, indexOrder: [1, 1], data: DATA, indices: INDICES, indptr: INDPTR }],
    /permutation of \[1, 2\].*different cell/,
  );
});

test("no layouts at all are refused", async () => {
  await refusedBeforeWriting([], /none were given/);
});

test("an indptr that decreases is refused", () => {
  assert.throws(
    () => layoutOver([3, 3], 0, { data: DATA, indices: INDICES, indptr: new Int32Array([0, 2, 1, 3]) }),
    {
      _tag: "LayoutError",
      message: /indptr decreases at slice 1/,
    },
  );
});

test("an index outside the other axes is refused", () => {
  assert.throws(
    () => layoutOver(SHAPE, 0, { data: DATA, indices: new Int32Array([1, 0, 3]), indptr: INDPTR }),
    {
      _tag: "LayoutError",
      message: /indices\[2\] is 3, but the other axes of \[2, 3\] ravel to 3 positions/,
    },
  );
});
