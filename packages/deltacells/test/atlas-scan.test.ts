/**
 * The atlas scan's check of what a reader hands over: canonical CSR of raw counts, every entry
 * indptr promises present. A block whose arrays are shorter than its indptr (a reader bug, or a
 * block read after its reader reused the memory) is refused, not counted as if it had no entries.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { scanInput } from "../src/atlas/scan.js";
import type { CanonicalRowBlock, DatasetSource } from "../src/dataset/source.js";

function sourceOf(block: CanonicalRowBlock): DatasetSource {
  return {
    format: "test",
    location: "reader.h5ad",
    matrixPath: "X",
    nCells: block.nRows,
    nGenes: 4,
    var: async () => ({ indexName: null, index: ["a", "b", "c", "d"], columns: [] }),
    async *rowBlocks() {
      yield block;
    },
  };
}

const good: CanonicalRowBlock = {
  rowStart: 0,
  nRows: 2,
  indptr: [0, 2, 3],
  indices: Int32Array.from([0, 3, 1]),
  data: Int32Array.from([5, 1, 2]),
};

test("the scan counts a canonical block's genes", async () => {
  const scan = await scanInput(sourceOf(good));
  assert.equal(scan.nCells, 2);
  assert.equal(scan.entries, 3);
  assert.deepEqual([...scan.totals], [5, 2, 0, 1]);
  assert.deepEqual([...scan.geneNnz], [1, 1, 0, 1]);
});

for (const [what, block, message] of [
  [
    "arrays shorter than indptr says",
    { ...good, indices: good.indices.subarray(0, 2), data: good.data.subarray(0, 2) },
    /cell 1, gene undefined: the row runs past its block's indices or counts/,
  ],
  [
    "arrays detached (memory reused by the reader)",
    {
      ...good,
      indices: (() => {
        const a = Int32Array.from(good.indices);
        structuredClone(a.buffer, { transfer: [a.buffer] });
        return a;
      })(),
    },
    /cell 0, gene undefined: the row runs past/,
  ],
  ["genes out of order", { ...good, indices: Int32Array.from([3, 0, 1]) }, /not strictly increasing/],
  [
    "a gene past the last",
    { ...good, indices: Int32Array.from([0, 4, 1]) },
    /gene index 4 is outside 0 \.\. 3/,
  ],
  ["a negative count", { ...good, data: Int32Array.from([5, -1, 2]) }, /count -1 is negative/],
] as const) {
  test(`the scan refuses a block with ${what}`, async () => {
    await assert.rejects(scanInput(sourceOf(block as CanonicalRowBlock)), (err: Error) => {
      assert.match(err.message, /reader\.h5ad/);
      assert.match(err.message, message);
      return true;
    });
  });
}
