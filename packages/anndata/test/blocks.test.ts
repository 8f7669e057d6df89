/** The bounded-memory paths for CSC and dense matrices, forced into their small-buffer modes. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { cscBlocks, denseBlocks, type SparseLayout } from "../src/blocks.js";
import { BlockBuffers } from "../src/canonical.js";
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

/** The blocks as one CSR matrix (cells in order, each with its genes and counts): what no cut changes. */
async function joined(
  blocks: AsyncIterable<CanonicalRowBlock>,
): Promise<{ cells: number[][]; nnz: number[] }> {
  const cells: number[][] = [];
  const nnz: number[] = [];
  for await (const b of blocks) {
    assert.equal(b.rowStart, cells.length, "blocks follow one another");
    nnz.push(b.indptr[b.nRows]! - b.indptr[0]!);
    for (let r = 0; r < b.nRows; r++) {
      const lo = b.indptr[r]!;
      const hi = b.indptr[r + 1]!;
      cells.push([...b.indices.subarray(lo, hi), ...b.data.subarray(lo, hi)]);
    }
  }
  return { cells, nnz };
}

async function reference(blockCells: number, blockNnz?: number): Promise<number[][]> {
  // the same counts, stored as CSR int32 in csr.h5ad's counts layer
  const src = await openInput(join(DATA, "anndata", "csr.h5ad"), { layer: "counts" });
  try {
    return await all(src.rowBlocks({ blockCells, blockNnz }));
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
    assert.deepEqual(
      await all(denseBlocks(m, x, { cells: 9, nnz: Number.MAX_SAFE_INTEGER }, undefined, 82)),
      await reference(9),
    );
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

test("CSR and dense readers never hand over a block past blockNnz nonzeros, and the cells are the same", async () => {
  const src = await openInput(join(DATA, "anndata", "csr.h5ad"), { layer: "counts" });
  const whole = await (async () => {
    try {
      return await joined(src.rowBlocks({ blockCells: 4096, blockNnz: Number.MAX_SAFE_INTEGER }));
    } finally {
      await src.close();
    }
  })();
  assert.equal(whole.nnz.length, 1, "one block of every cell");
  const perCell = whole.cells.map((c) => c.length / 2);
  const most = Math.max(...perCell);
  assert.ok(most > 1, "some cell has several nonzeros");
  for (const [file, opts] of [
    ["csr.h5ad", { layer: "counts" }],
    ["dense.h5ad", {}],
    ["csr-v3.zarr", {}],
  ] as const) {
    for (const blockNnz of [1, most, 3 * most]) {
      const input = await openInput(join(DATA, "anndata", file), opts);
      try {
        const got = await joined(input.rowBlocks({ blockCells: 20, blockNnz }));
        assert.deepEqual(got.cells, whole.cells, `${file}, blockNnz ${blockNnz}`);
        // CSR knows a block's nonzeros before it reads them; dense rows close the block once past it
        const bound = file === "dense.h5ad" ? blockNnz + most - 1 : Math.max(blockNnz, most);
        for (const n of got.nnz) assert.ok(n <= bound, `${file}: a block of ${n} nonzeros, over ${bound}`);
        assert.ok(
          got.nnz.length > Math.ceil(57 / 20),
          `${file}, blockNnz ${blockNnz}: blocks cut by nonzeros`,
        );
      } finally {
        await input.close();
      }
    }
  }
});

test("blocks built in reused memory hold the same cells, each intact until the next is asked for, then detached", async () => {
  for (const [file, opts] of [
    ["csr.h5ad", { layer: "counts" }],
    ["csr-v3.zarr", {}],
  ] as const) {
    const own = await openInput(join(DATA, "anndata", file), opts);
    const reusing = await openInput(join(DATA, "anndata", file), opts);
    try {
      const fresh: CanonicalRowBlock[] = [];
      for await (const b of own.rowBlocks({ blockCells: 7, blockNnz: 40 })) fresh.push(b);
      assert.ok(fresh.length > 3, `${file}: several blocks`);
      let i = 0;
      let before: CanonicalRowBlock | undefined;
      for await (const b of reusing.rowBlocks({ blockCells: 7, blockNnz: 40, reuse: true })) {
        const want = fresh[i++]!;
        assert.deepEqual(
          [b.rowStart, b.nRows, [...b.indptr], [...b.indices], [...b.data]],
          [want.rowStart, want.nRows, [...want.indptr], [...want.indices], [...want.data]],
          `${file}: block ${i - 1}`,
        );
        if (before) {
          // kept past the next block: empty, and copying it throws, instead of this block's numbers
          assert.equal(before.indices.length, 0, `${file}: a kept block's indices are detached`);
          assert.equal(before.data.length, 0, `${file}: a kept block's data are detached`);
          assert.throws(() => before!.data.slice(), TypeError);
        }
        before = b;
      }
      assert.equal(i, fresh.length, `${file}: as many blocks`);
      // without reuse every block stays its own: the first still holds what it held
      const first = fresh[0]!;
      assert.ok(first.indices.length > 0 && first.data.length === first.indices.length);
    } finally {
      await own.close();
      await reusing.close();
    }
  }
});

test("block buffers lend a buffer again only after recycle(), and drop one the consumer moved away", () => {
  const buffers = new BlockBuffers();
  const a = buffers.int32(1000);
  a.fill(7);
  const b = buffers.int32(1000);
  assert.notEqual(a.buffer, b.buffer, "two arrays lent at once never share memory");
  b.fill(9);
  assert.ok(
    a.every((v) => v === 7),
    "lent arrays untouched by later loans",
  );
  // the consumer moves b's buffer to another thread (or anywhere): it cannot come back
  structuredClone(b.buffer, { transfer: [b.buffer as ArrayBuffer] });
  buffers.recycle();
  assert.equal(a.length, 0, "a recycled array is detached");
  const c = buffers.int32(500);
  assert.equal(c.buffer.byteLength, 1 << 16, "the smallest free buffer that fits, a's");
  c.fill(3);
  const d = buffers.int32(1000);
  assert.notEqual(d.buffer, c.buffer);
  assert.ok(
    c.every((v) => v === 3),
    "c untouched by d",
  );
});
