/** The tile cutter's arrays: lent to the encoder with each tile, filled again only once given back. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { TileCutter } from "../src/atlas/cutter.js";
import type { CanonicalRowBlock } from "../src/dataset/source.js";

// 4 cells x 5 genes; the identity gene map
const block: CanonicalRowBlock = {
  rowStart: 0,
  nRows: 4,
  indptr: [0, 2, 3, 5, 6],
  indices: Int32Array.from([0, 3, 1, 2, 4, 3]),
  data: Int32Array.from([5, 1, 2, 7, 3, 9]),
};
const map = Int32Array.from([0, 1, 2, 3, 4]);

test("a tile's rows stay intact until given back, then read as empty, and their memory fills a later tile", () => {
  const cutter = new TileCutter(2, 5);
  cutter.addRow(block, 0, map, "test");
  cutter.addRow(block, 1, map, "test");
  const first = cutter.take();
  // the next tile is filled while the first is being encoded: in other memory
  cutter.addRow(block, 2, map, "test");
  cutter.addRow(block, 3, map, "test");
  const second = cutter.take();
  assert.deepEqual(Array.from(first.rows.indptr), [0, 2, 3]);
  assert.deepEqual([...first.rows.indices], [0, 3, 1]);
  assert.deepEqual([...first.rows.data], [5, 1, 2]);
  assert.deepEqual([...second.rows.indices], [2, 4, 3]);
  assert.deepEqual([...second.rows.data], [7, 3, 9]);
  first.giveBack();
  // kept past giveBack: detached (empty, copying throws), never a later tile's counts
  assert.equal(first.rows.indices.length, 0);
  assert.equal(first.rows.data.length, 0);
  assert.throws(() => first.rows.data.slice(), TypeError);
  first.giveBack(); // idempotent
  // the third tile was being filled meanwhile (in new memory); the fourth fills what the first
  // gave back; the second is untouched all along
  cutter.addRow(block, 0, map, "test");
  const third = cutter.take();
  cutter.addRow(block, 3, map, "test");
  const fourth = cutter.take();
  assert.deepEqual([...third.rows.indices], [0, 3]);
  assert.deepEqual([...third.rows.data], [5, 1]);
  assert.deepEqual([...fourth.rows.indices], [3]);
  assert.deepEqual([...fourth.rows.data], [9]);
  // past its one nonzero, the memory still holds the first tile's third column: reused, not new
  assert.equal(new Int32Array(fourth.rows.indices.buffer)[2], 1, "the first tile's memory, reused");
  assert.deepEqual([...second.rows.indices], [2, 4, 3]);
  assert.deepEqual([...second.rows.data], [7, 3, 9]);
});
