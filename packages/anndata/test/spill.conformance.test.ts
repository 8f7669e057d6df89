/** The cell-bucket spill (CSC and unordered Matrix Market inputs) and the canonical builder. */

import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { BadCount, csrSliceToBlock } from "../src/canonical.js";
import { openInput } from "../src/node.js";
import { CellBucketSpill } from "../src/spill.js";
import { DATA, gather, pythonDump } from "./helpers.js";

/** A deterministic xorshift generator, so failures reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

test("entries in random order come out as canonical blocks equal to a sorted reference, through temporary files", async () => {
  const nCells = 503;
  const nGenes = 97;
  const rand = rng(7);
  const entries: [number, number, number][] = [];
  for (let i = 0; i < 20000; i++)
    entries.push([Math.floor(rand() * nCells), Math.floor(rand() * nGenes), 1 + Math.floor(rand() * 5)]);
  // the reference: sum duplicates per (cell, gene)
  const ref = new Map<number, number>();
  for (const [c, g, v] of entries) ref.set(c * nGenes + g, (ref.get(c * nGenes + g) ?? 0) + v);
  const dir = mkdtempSync(join(tmpdir(), "spill-test-"));
  try {
    const spill = new CellBucketSpill(nCells, nGenes, {
      blockCells: 50,
      nnzHint: entries.length,
      spillBytes: 16 * 1024,
      tmpDir: dir,
    });
    for (const [c, g, v] of entries) spill.add(c, g, v);
    assert.ok(spill.spilled, "the small spillBytes forces temporary files");
    const got = new Map<number, number>();
    let next = 0;
    for await (const b of spill.blocks()) {
      assert.equal(b.rowStart, next);
      next += b.nRows;
      for (let r = 0; r < b.nRows; r++) {
        for (let k = b.indptr[r] as number; k < (b.indptr[r + 1] as number); k++) {
          if (k > (b.indptr[r] as number)) assert.ok((b.indices[k] as number) > (b.indices[k - 1] as number));
          got.set((b.rowStart + r) * nGenes + (b.indices[k] as number), b.data[k] as number);
        }
      }
    }
    assert.equal(next, nCells);
    assert.deepEqual(
      [...got.entries()].sort((a, b) => a[0] - b[0]),
      [...ref.entries()].sort((a, b) => a[0] - b[0]),
    );
    assert.deepEqual(readdirSync(dir), [], "temporary files are removed");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the spill reports the first bad value in cell order, whatever the arrival order", async () => {
  const spill = new CellBucketSpill(10, 5, { blockCells: 4, nnzHint: 10 });
  spill.add(8, 1, 0.5);
  spill.add(3, 4, -1);
  spill.add(3, 2, 2.5);
  spill.add(1, 0, 3);
  await assert.rejects(
    async () => {
      for await (const _ of spill.blocks()) {
        // no block may be yielded before the error
        assert.fail("a block was yielded");
      }
    },
    (err: unknown) =>
      err instanceof BadCount && err.cell === 3 && err.gene === 2 && err.reason === "not-integer",
  );
});

test("an unordered Matrix Market file read through temporary files equals scipy's reading", async () => {
  const path = join(DATA, "anndata", "cells-by-genes-by-gene.mtx");
  const src = await openInput(path, { transpose: true });
  (src as unknown as { spillBytes: number }).spillBytes = 1024;
  const py = pythonDump("mtx", path, "transpose");
  const csr = await gather(src, 4);
  assert.deepEqual(csr, { indptr: py.indptr, indices: py.indices, data: py.data });
});

test("a CSR slice with unsorted genes, duplicates and zeros becomes canonical as scipy makes it", () => {
  const b = csrSliceToBlock(10, 2, 6, [5, 9, 11], [4, 1, 4, 0, 3, 3], [1, 2, 3, 0, 7, 0]);
  // row 0: genes 4,1,4,0 with 1,2,3,0 -> 1:2, 4:4 ; row 1: 3,3 with 7,0 -> 3:7
  assert.deepEqual([...b.indptr], [0, 2, 3]);
  assert.deepEqual([...b.indices], [1, 4, 3]);
  assert.deepEqual([...b.data], [2, 4, 7]);
  assert.equal(b.rowStart, 10);
});

test("duplicates that sum past int32 are refused", () => {
  assert.throws(
    () => csrSliceToBlock(0, 1, 3, [0, 2], [1, 1], [2147483000, 1000]),
    (err: unknown) => err instanceof BadCount && err.reason === "too-large" && err.gene === 1,
  );
});
