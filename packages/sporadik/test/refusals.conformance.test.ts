/**
 * One test per refusal the format implies. Each breaks a freshly written store the way an
 * interrupted upload or a careless edit would (deleted chunks, a removed block, a renamed layout,
 * edited attributes), and checks that this reader refuses it with the right tag and that Python
 * sporadik refuses the same bytes with the same class.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { FolderStore } from "@deltacells/storage/node";
import {
  describe,
  isSporadikError,
  layoutFromCoords,
  openReader,
  type SporadikErrorTag,
  writeStore,
} from "../src/index.js";
import { plain, python, randomCoords, tempDir } from "./helpers.js";

const { dir, cleanup } = tempDir();
after(cleanup);
let counter = 0;

/** A fresh complete store of `shape` (one layout per axis), broken by `breakIt`. */
async function broken(
  shape: number[],
  breakIt: (path: string) => void,
  options: { byteAddressable?: boolean; chunk?: number } = {},
) {
  const spec = randomCoords(shape, 0.3, 7);
  const values = new Float32Array(spec.values);
  const path = join(dir, `broken-${counter++}.zarr`);
  await writeStore(
    new FolderStore(path),
    shape.map((_, axis) => layoutFromCoords(shape, spec.coords, values, axis)),
    options,
  );
  breakIt(path);
  return path;
}

// biome-ignore lint/suspicious/noExplicitAny: fabricating broken stores means editing arbitrary JSON.
type Json = Record<string, any>;

function editJson(file: string, edit: (json: Json) => void): void {
  const json = JSON.parse(readFileSync(file, "utf8"));
  edit(json);
  writeFileSync(file, JSON.stringify(json, null, 2));
}

const editBlock = (path: string, edit: (block: Json) => void) =>
  editJson(join(path, "zarr.json"), (json) => edit(json.attributes.sporadik));

/** Ours refuses with `tag` and a message matching `says`; Python refuses with the same class. */
async function assertRefused(path: string, tag: SporadikErrorTag, says: RegExp): Promise<void> {
  await assert.rejects(describe(new FolderStore(path)), (error: Error & { _tag?: string }) => {
    assert.equal(error._tag, tag, error.message);
    assert.match(error.message, says);
    return true;
  });
  const theirs = python<{ raised: string; message: string }>("refusal", path);
  assert.equal(theirs.raised, tag, `Python: ${theirs.message}`);
}

test("a store whose block was removed is refused as incomplete", async () => {
  const path = await broken([8, 6], (p) => editJson(join(p, "zarr.json"), (json) => (json.attributes = {})));
  await assertRefused(path, "IncompleteError", /did not finish.*zeros/);
});

test("a store with deleted chunks and its block marked incomplete is refused", async () => {
  const path = await broken([8, 6], (p) => {
    rmSync(join(p, "layouts/axis0/data/c"), { recursive: true });
    editBlock(p, (block) => (block.complete = false));
  });
  await assertRefused(path, "IncompleteError", /complete=false.*zeros/);
});

test("a prefix with no zarr.json at all is refused as incomplete", async () => {
  const path = await broken([8, 6], (p) => rmSync(join(p, "zarr.json")));
  await assert.rejects(describe(new FolderStore(path)), { _tag: "IncompleteError" });
});

test("a store declaring an unknown spec is refused", async () => {
  const path = await broken([8, 6], (p) => editBlock(p, (block) => (block.spec = "2")));
  await assertRefused(path, "SpecError", /spec "2".*refused rather than guessed/);
});

test("a store naming no layouts is refused", async () => {
  const path = await broken([8, 6], (p) => editBlock(p, (block) => (block.layouts = [])));
  await assertRefused(path, "SporadikError", /names no layouts/);
});

test("a store naming more layouts than its rank is refused", async () => {
  const path = await broken([8, 6], (p) =>
    editBlock(p, (block) => block.layouts.push({ path: "layouts/axis2", indexed_axis: 2, index_order: [0] })),
  );
  await assertRefused(path, "SporadikError", /3 layouts over a rank-2 array/);
});

test("a store naming two layouts of one axis is refused", async () => {
  const path = await broken([8, 6], (p) => editBlock(p, (block) => (block.layouts[1] = block.layouts[0])));
  await assertRefused(path, "LayoutError", /two layouts compressing axis 0/);
});

test("a layout renamed after the block was written is refused as absent", async () => {
  const path = await broken([8, 6], (p) => renameSync(join(p, "layouts/axis1"), join(p, "layouts/csc")));
  await assertRefused(path, "IncompleteError", /layouts\/axis1', which is not in the prefix/);
});

test("a layout filed under a path that is not layouts/axis{k} is refused", async () => {
  const path = await broken([8, 6], (p) => {
    renameSync(join(p, "layouts/axis0"), join(p, "layouts/csr"));
    editBlock(p, (block) => (block.layouts[0].path = "layouts/csr"));
  });
  await assertRefused(path, "LayoutError", /wrong name.*wrong axis/);
});

test("a layout whose indexed_axis is not an axis of the shape is refused", async () => {
  const path = await broken([8, 6], (p) => editBlock(p, (block) => (block.layouts[0].indexed_axis = 5)));
  await assertRefused(path, "LayoutError", /indexed_axis 5, which is not an axis/);
});

test("an index_order that is not a permutation of the other axes is refused", async () => {
  const path = await broken([5, 4, 3], (p) =>
    editBlock(p, (block) => (block.layouts[0].index_order = [1, 1])),
  );
  await assertRefused(path, "LayoutError", /index_order \[1,1\].*different cell/);
});

test("an encoding-type contradicting the rank rules is refused", async () => {
  const path = await broken([8, 6], (p) =>
    editJson(join(p, "layouts/axis0/zarr.json"), (json) => (json.attributes["encoding-type"] = "csc_matrix")),
  );
  await assertRefused(path, "LayoutError", /encoding-type "csc_matrix".*"csr_matrix"/);
});

test("a declared shape contradicting the rank rules is refused", async () => {
  // Above rank two a layout declares the raveled pair, not the array's own shape.
  const path = await broken([5, 4, 3], (p) =>
    editJson(join(p, "layouts/axis1/zarr.json"), (json) => (json.attributes.shape = [5, 4, 3])),
  );
  await assertRefused(path, "LayoutError", /declares shape \[5,4,3\].*gives \[4, 15\]/);
});

test("a layout missing one of its arrays is refused", async () => {
  const path = await broken([8, 6], (p) => rmSync(join(p, "layouts/axis0/indices"), { recursive: true }));
  await assertRefused(path, "LayoutError", /missing indices/);
});

test("an indptr of the wrong length is refused", async () => {
  const path = await broken([8, 6], (p) =>
    editJson(join(p, "layouts/axis1/indptr/zarr.json"), (json) => (json.shape = [6])),
  );
  await assertRefused(path, "LayoutError", /indptr should have 7 entries.*but it has 6/);
});

test("data and indices of different lengths are refused", async () => {
  const path = await broken([8, 6], (p) =>
    editJson(join(p, "layouts/axis0/data/zarr.json"), (json) => (json.shape = [json.shape[0] - 1])),
  );
  await assertRefused(path, "LayoutError", /values and \d+ indices; they are parallel/);
});

test("opening a store with several layouts without naming the axis is refused", async () => {
  const path = await broken([8, 6], () => {});
  await assert.rejects(openReader(new FolderStore(path)), {
    _tag: "LayoutError",
    message: /Pass \{ axis \}/,
  });
});

test("opening along an axis no layout compresses is refused, not scanned", async () => {
  const spec = randomCoords([8, 6], 0.3, 9);
  const path = join(dir, "one-layout.zarr");
  await writeStore(
    new FolderStore(path),
    layoutFromCoords([8, 6], spec.coords, new Float32Array(spec.values), 0),
  );
  await assert.rejects(openReader(new FolderStore(path), { axis: 1 }), {
    _tag: "LayoutError",
    message: /not axis 1.*scan of every byte/,
  });
  // One layout: the axis may be left out, there is nothing to decide.
  assert.equal((await openReader(new FolderStore(path))).axis, 0);
});

test("a position outside the compressed axis raises a PositionError naming the axis length", async () => {
  const path = await broken([8, 6], () => {});
  const reader = await openReader(new FolderStore(path), { axis: 1 });
  for (const position of [6, -1, 2.5]) {
    await assert.rejects(reader.sliceAt(position), (error: Error & { _tag?: string }) => {
      assert.ok(isSporadikError(error, "PositionError"));
      assert.equal(error.found, position);
      assert.match(error.message, /axis 1 of shape \[8, 6\]: that axis has 6 positions/);
      return true;
    });
  }
});

/** A 40 x 30 store in chunks of 16 elements (several per array), chunk files editable, opened along axis 0. */
async function chunked(breakIt: (path: string) => void, byteAddressable = false, checkIndices = false) {
  const path = await broken([40, 30], breakIt, byteAddressable ? { byteAddressable } : { chunk: 16 });
  return openReader(new FolderStore(path), { axis: 0, checkIndices });
}

/** Every slice, one at a time and as one batch, and the whole layout: each refused as `expected`. */
async function assertEveryReadRefused(
  reader: Awaited<ReturnType<typeof openReader>>,
  expected: { _tag: string; message: RegExp },
) {
  await assert.rejects(
    (async () => {
      for (let p = 0; p < 40; p++) await reader.sliceAt(p);
    })(),
    expected,
  );
  await assert.rejects(reader.slicesAt(Array.from({ length: 40 }, (_, p) => p)), expected);
  await assert.rejects(reader.readLayout(), expected);
}

test("a missing indices chunk of a complete store is refused, naming it, not read as positions 0, 0, 0 (even without checkIndices)", async () => {
  const reader = await chunked((p) => rmSync(join(p, "layouts/axis0/indices/c/2")));
  await assertEveryReadRefused(reader, {
    _tag: "IncompleteError",
    message: /layouts\/axis0\/indices\/c\/2 is missing from the store and was read as zeros/,
  });
});

test("a byte-addressable indices object deleted after the block was written is refused, not read as zeros", async () => {
  const reader = await chunked((p) => rmSync(join(p, "layouts/axis0/indices/c/0")), true);
  await assertEveryReadRefused(reader, {
    _tag: "IncompleteError",
    message: /indices\/c\/0 is missing from the store and was read as zeros/,
  });
});

test("with checkIndices, indices out of order within a slice are refused as a damaged chunk", async () => {
  const reader = await chunked(
    (p) => {
      const key = join(p, "layouts/axis0/indices/c/0");
      const raw = readFileSync(key);
      const indices = new Int32Array(raw.buffer, raw.byteOffset, raw.length / 4);
      indices.subarray(0, 40).reverse(); // slice 0's positions now decrease
      writeFileSync(key, raw);
    },
    true,
    true,
  );
  await assertEveryReadRefused(reader, {
    _tag: "LayoutError",
    message:
      /slice 0 lists position \d+ \(indices\[1\]\) after \d+, but within a slice positions are strictly increasing and below 30\. .*indices\/c\/0 is damaged/,
  });
});

test("with checkIndices, indices past the other axis are refused as a damaged chunk", async () => {
  const reader = await chunked(
    (p) => {
      const key = join(p, "layouts/axis0/indices/c/0");
      const raw = readFileSync(key);
      new Int32Array(raw.buffer, raw.byteOffset, raw.length / 4)[0] = 30;
      writeFileSync(key, raw);
    },
    true,
    true,
  );
  await assertEveryReadRefused(reader, {
    _tag: "LayoutError",
    // readLayout's own check (layoutOver) words it differently
    message: /position 30 .*below 30|indices\[0\] is 30/,
  });
});

test("a missing indptr chunk holding the last entry is refused, naming it", async () => {
  // indptr has 41 entries in chunks of 16: c/2 holds the last, which must be nnz, not 0.
  const reader = await chunked((p) => rmSync(join(p, "layouts/axis0/indptr/c/2")));
  await assert.rejects(reader.sliceAt(39), {
    _tag: "IncompleteError",
    message:
      /layouts\/axis0\/indptr\/c\/2 is missing .* it holds the last one, which is the number of values/,
  });
  await assert.rejects(reader.readLayout(), { _tag: "IncompleteError" });
});

test("a missing indptr chunk after a nonzero entry is refused, naming it (indptr never decreases)", async () => {
  const reader = await chunked((p) => rmSync(join(p, "layouts/axis0/indptr/c/1")));
  await assert.rejects(reader.sliceAt(20), {
    _tag: "IncompleteError",
    message:
      /layouts\/axis0\/indptr\/c\/1 is missing .* the entry before them is \d+ and indptr never decreases/,
  });
  await assert.rejects(reader.slicesAt([3, 20]), { _tag: "IncompleteError" });
});

test("missing indptr chunks where zeros are what was written still read: leading empty slices", async () => {
  // Rows 0-35 empty: indptr chunks c/0 and c/1 (entries 0-31) are all zero, so neither is stored.
  const shape = [40, 30];
  const coords = [
    [36, 36, 39],
    [2, 7, 29],
  ];
  const path = join(dir, `leading-empty-${counter++}.zarr`);
  await writeStore(new FolderStore(path), layoutFromCoords(shape, coords, Float32Array.of(1, 2, 3), 0), {
    chunk: 16,
  });
  assert.ok(
    !existsSync(join(path, "layouts/axis0/indptr/c/0")) &&
      !existsSync(join(path, "layouts/axis0/indptr/c/1")),
  );
  const reader = await openReader(new FolderStore(path), { axis: 0 });
  assert.deepEqual(plain((await reader.sliceAt(20)).positions), []);
  assert.deepEqual(plain((await reader.sliceAt(36)).positions), [2, 7]);
  assert.deepEqual(plain((await reader.slicesAt([0, 36, 39])).indices), [2, 7, 29]);
});

test("a missing data chunk is refused naming it (fillMissingData reads zeros); Python sporadik reads zeros when chunked and fails byte-addressable", async () => {
  for (const byteAddressable of [false, true]) {
    const path = await broken(
      [40, 30],
      (p) => rmSync(join(p, "layouts/axis0/data/c/0")),
      byteAddressable ? { byteAddressable } : { chunk: 16 },
    );
    const reader = await openReader(new FolderStore(path), { axis: 0 });
    await assert.rejects(reader.readLayout(), {
      _tag: "IncompleteError",
      object: "/layouts/axis0/data/c/0",
      message: /is missing from the store.*every element of data is a stored value/,
    });
    const filling = await openReader(new FolderStore(path), { axis: 0, fillMissingData: true });
    const ours = plain((await filling.slicesOver(0, 40)).data);
    if (byteAddressable) {
      // Python reads byte ranges of the object, and fails on it (the file system's error, untagged).
      assert.equal(python<{ raised: string }>("refusal", path).raised, "FileNotFoundError");
    } else {
      // Python reads through zarr, which fills the chunk: what fillMissingData reads.
      const theirs = python<{ data: { values: number[] } }>("slices", path, "0", JSON.stringify(range(40)));
      assert.deepEqual(theirs.data.values, ours);
      assert.deepEqual(ours.slice(0, 16), new Array(16).fill(0));
    }
  }
});

function range(n: number): number[] {
  return Array.from({ length: n }, (_, k) => k);
}

test("a layout path leading out of the prefix is refused without being followed", async () => {
  const path = await broken([8, 6], (p) => editBlock(p, (block) => (block.layouts[0].path = "../elsewhere")));
  await assert.rejects(describe(new FolderStore(path)), {
    _tag: "LayoutError",
    message: /'\.\.\/elsewhere', which is not a path inside the prefix/,
  });
});
