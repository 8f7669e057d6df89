/**
 * obsm beyond the conformance comparison: refusals, reading by key, reading without the matrix,
 * and inputs that have no obsm. (Values are compared with anndata in readers.conformance.test.ts.)
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { isAnndataError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { DATA } from "./helpers.js";

const A = (f: string) => join(DATA, "anndata", f);

test("an obsm entry anndata wrote as a 2-d string-array is refused, naming the key and the encoding", async () => {
  const src = await openInput(A("obsm-strings.h5ad"));
  try {
    assert.deepEqual(await src.obsmKeys(), ["X_pca", "labels"]);
    await assert.rejects(src.obsm(), (err: unknown) => {
      assert.ok(isAnndataError(err, "Unsupported"));
      assert.match(err.object ?? "", /obsm-strings\.h5ad\/obsm\/labels$/);
      assert.match(err.message, /obsm entry "labels"/);
      assert.match(err.message, /"string-array"/);
      return true;
    });
    // the other entries stay readable by name
    const some = await src.obsm(["X_pca"]);
    assert.deepEqual(Object.keys(some), ["X_pca"]);
    assert.deepEqual(some.X_pca?.shape, [12, 4]);
  } finally {
    await src.close();
  }
});

test("asking for an obsm key that does not exist is an error listing the keys there are", async () => {
  const src = await openInput(A("obsm-v3.zarr"));
  try {
    await assert.rejects(src.obsm(["X_tsne"]), (err: unknown) => {
      assert.ok(isAnndataError(err, "MissingMatrix"));
      assert.match(err.message, /no obsm entry "X_tsne"/);
      assert.match(err.message, /Available: .*X_pca.*X_umap/);
      return true;
    });
  } finally {
    await src.close();
  }
});

test("obsm entries are read by key, only those asked for", async () => {
  const src = await openInput(A("obsm.h5ad"));
  try {
    const e = await src.obsm(["sparse_csc", "X_umap"]);
    assert.deepEqual(Object.keys(e), ["sparse_csc", "X_umap"]);
    const csc = e.sparse_csc;
    assert.equal(csc?.kind, "sparse");
    assert.deepEqual(csc.shape, [12, 5]);
    // the stored column 0 holds rows 10, 9, 1, 0, 0 (a duplicate): rows 0 and 1 start with column 0
    assert.deepEqual(Array.from(csc.indices.subarray(csc.indptr[0], csc.indptr[1])).slice(0, 2), [0, 0]);
  } finally {
    await src.close();
  }
});

test("obsm is read without reading the count matrix", async () => {
  // X/data of this file is compressed with a filter no reader has: any read of X is refused
  const src = await openInput(A("unknown-filter.h5ad"));
  try {
    const e = await src.obsm();
    assert.deepEqual(e.X_pca?.shape, [57, 3]);
    await assert.rejects(async () => {
      for await (const _ of src.rowBlocks()) {
        // drain
      }
    }, /filter 32999/);
  } finally {
    await src.close();
  }
});

test("inputs without obsm (10x HDF5, 10x Matrix Market, Matrix Market, bare zarr) have no obsm entries", async () => {
  for (const path of [
    join(DATA, "10x-v2", "filtered_gene_bc_matrices_h5.h5"),
    join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix"),
    join(DATA, "seurat-pbmc-small", "pbmc_small_counts.mtx"),
    A("bare-v3.zarr"),
  ]) {
    const src = await openInput(path);
    try {
      assert.deepEqual(await src.obsmKeys(), [], path);
      assert.deepEqual(await src.obsm(), {}, path);
      await assert.rejects(src.obsm(["X_pca"]), (err: unknown) => isAnndataError(err, "MissingMatrix"));
    } finally {
      await src.close();
    }
  }
});
