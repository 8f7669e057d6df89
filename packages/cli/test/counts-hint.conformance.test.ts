/**
 * A refusal of a matrix that is not counts suggests only the other matrices whose values are
 * counts, on an AnnData written by anndata as scanpy leaves one: X scaled, raw log-normalised,
 * the counts in a layer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { assertShortError, cliPlain, PYTHON, run, tempDir } from "./cli-helpers.js";

const WRITE = `
import sys, numpy as np, scipy.sparse as sp, anndata as ad
rng = np.random.default_rng(0)
counts = sp.random(40, 25, density=0.3, format="csr", random_state=0, dtype=np.float32)
counts.data = rng.integers(1, 20, counts.nnz).astype(np.float32)
norm = sp.csr_matrix(counts.multiply(1e4 / np.maximum(counts.sum(axis=1), 1)))
norm.data = np.log1p(norm.data).astype(np.float32)
a = ad.AnnData(X=norm)
a.layers["counts"] = counts
a.raw = a
a.X = (norm.toarray() - norm.toarray().mean(axis=0)).astype(np.float32)
a.write_h5ad(sys.argv[1])
`;

test("a scaled X with a log-normalised raw and a counts layer: the hint is --layer counts, and the message says raw/X holds fractions", async () => {
  const h5ad = join(tempDir(), "scanpy.h5ad");
  const w = await run(PYTHON, ["-c", WRITE, h5ad]);
  assert.equal(w.code, 0, w.stderr);
  const r = await cliPlain("convert", h5ad, join(tempDir(), "out"));
  assertShortError(
    r,
    /\[NotCounts\].*other matrices that may hold raw counts: layers\/counts \(raw\/X holds a value that is not an integer \([\d.]+\): not counts either\)\.\n {2}hint: try --layer counts\n$/,
  );
  const raw = await cliPlain("convert", h5ad, join(tempDir(), "out"), "--raw");
  assertShortError(
    raw,
    /\[NotCounts\]: .*raw\/X is not a matrix of raw counts.*\n {2}hint: try --layer counts\n$/,
  );
});
