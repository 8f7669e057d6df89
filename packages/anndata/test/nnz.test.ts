/** `MatrixSource.nnz`: the stored entries, known before a row is read, for every sparse input. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openInput } from "../src/node.js";
import { DATA } from "./helpers.js";

/** Nonzeros the source's canonical row blocks hold. */
async function streamed(path: string, options = {}): Promise<number> {
  const source = await openInput(path, options);
  try {
    let nnz = 0;
    for await (const block of source.rowBlocks({ blockCells: 16 })) nnz += block.indices.length;
    return nnz;
  } finally {
    await source.close();
  }
}

// csr.h5ad's X (and its zarr copy) stores 817 entries, 17 of them explicit zeros that canonical
// blocks drop: nnz counts them, as scipy's does, so it bounds the nonzeros from above.
for (const [name, path, options, stored] of [
  ["h5ad csr", join(DATA, "anndata", "csr.h5ad"), {}, 817],
  ["h5ad csc", join(DATA, "anndata", "csc.h5ad"), {}, undefined],
  ["AnnData zarr v3 csr", join(DATA, "anndata", "csr-v3.zarr"), {}, 817],
  ["AnnData zarr v3 csc", join(DATA, "anndata", "csc-v3.zarr"), {}, undefined],
  ["Matrix Market", join(DATA, "anndata", "cells-by-genes.mtx"), { transpose: true }, undefined],
  ["10x HDF5 v3", join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix.h5"), {}, undefined],
  ["10x mtx v3", join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix"), {}, undefined],
] as const) {
  test(`nnz of a ${name} input is known at open: its stored entries, at least what its row blocks hold`, async () => {
    const source = await openInput(path, options);
    const nnz = source.nnz;
    await source.close();
    const rows = await streamed(path, options);
    assert.equal(nnz, stored ?? rows);
    assert.ok(rows > 0 && (nnz as number) >= rows);
  });
}

test("nnz of a dense input is undefined (its zeros are not stored entries)", async () => {
  for (const file of ["dense.h5ad", "dense-v2.zarr"]) {
    const source = await openInput(join(DATA, "anndata", file));
    try {
      assert.equal(source.nnz, undefined, file);
    } finally {
      await source.close();
    }
  }
});
