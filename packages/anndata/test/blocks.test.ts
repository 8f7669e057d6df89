/** The bounded-memory paths for CSC and dense matrices, forced into their small-buffer modes. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { cscBlocks, denseBlocks, type SparseLayout } from "../src/blocks.js";
import { openHdf5 } from "../src/hdf5-thread.js";
import { openInput } from "../src/node.js";
import type { TreeArray } from "../src/tree.js";
import type { CanonicalRowBlock } from "../src/types.js";
import { DATA } from "./helpers.js";

async function all(blocks: AsyncIterable<CanonicalRowBlock>): Promise<number[][]> {
  const out: number[][] = [];
  for await (const b of blocks) out.push([b.rowStart, b.nRows], [...b.indptr], [...b.indices], [...b.data]);
  return out;
}

async function reference(blockCells: number): Promise<number[][]> {
  // the same counts, stored as CSR int32 in csr.h5ad's counts layer
  const src = await openInput(join(DATA, "anndata", "csr.h5ad"), { layer: "counts" });
  try {
    return await all(src.rowBlocks({ blockCells }));
  } finally {
    await src.close();
  }
}

test("a CSC matrix spilled through temporary files gives the same blocks as its CSR copy", async () => {
  const tree = await openHdf5(join(DATA, "anndata", "csc.h5ad"));
  try {
    const arr = async (p: string) => (await tree.get(p)) as TreeArray;
    const layout: SparseLayout = {
      kind: "csc",
      group: "X",
      indptr: await arr("X/indptr"),
      indices: await arr("X/indices"),
      data: await arr("X/data"),
    };
    const m = { location: tree.location, nCells: 57, nGenes: 41 };
    assert.deepEqual(await all(cscBlocks(m, layout, 6, undefined, 512)), await reference(6));
  } finally {
    await tree.close();
  }
});

test("a dense matrix read two rows per hyperslab gives the same blocks as its CSR copy", async () => {
  const tree = await openHdf5(join(DATA, "anndata", "dense.h5ad"));
  try {
    const x = (await tree.get("X")) as TreeArray;
    const m = { location: tree.location, nCells: 57, nGenes: 41 };
    assert.deepEqual(await all(denseBlocks(m, x, 9, undefined, 82)), await reference(9));
  } finally {
    await tree.close();
  }
});

test("CSR and dense inputs start at rowStart and stop at rowEnd, each block where the whole pass has it", async () => {
  const whole = await reference(6); // blocks of 6 cells from 0
  for (const [file, opts] of [
    ["csr.h5ad", { layer: "counts" }],
    ["dense.h5ad", {}],
    ["csr-v3.zarr", {}],
  ] as const) {
    const src = await openInput(join(DATA, "anndata", file), opts);
    try {
      const part = await all(src.rowBlocks({ blockCells: 6, rowStart: 12, rowEnd: 30 }));
      assert.deepEqual(part, whole.slice(2 * 4, 5 * 4), file);
      assert.deepEqual(
        await all(src.rowBlocks({ blockCells: 6, rowStart: 54, rowEnd: 100 })),
        whole.slice(9 * 4),
        file,
      );
    } finally {
      await src.close();
    }
  }
});
