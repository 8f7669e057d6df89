/**
 * A user's AnnData through convert and export, checked with anndata and scanpy
 * (conformance/names_check.py): convert says what it did not store and which flag keeps it; the
 * flag keeps it; an .h5ad export gives back the input's var order and names; a 10x folder export
 * reads back in scanpy.read_10x_mtx with the input's counts, gene symbols, ids and barcodes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, test } from "node:test";
import { cli, PYTHON, run, tempDir } from "./cli-helpers.js";

const dir = tempDir();
const INPUT = join(dir, "user.h5ad");

async function python(...args: string[]): Promise<string[]> {
  const r = await run(PYTHON, ["conformance/names_check.py", ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).problems;
}

before(async () => {
  assert.deepEqual(await python("make", INPUT), []);
});

test("convert lists obsm over the column limit, layers, raw, uns, obsp and varm as not stored, with the flags that keep them", async () => {
  const r = await cli("convert", INPUT, join(dir, "plain"), "--quiet", "--json");
  assert.equal(r.code, 0, r.stderr);
  const notStored = JSON.parse(r.stdout).not_stored as { part: string; reason: string; flag?: string }[];
  assert.deepEqual(
    notStored.map((p) => [p.part, p.flag ?? null]),
    [
      ["obsm/X_pca", "--obsm X_umap,X_pca"],
      ["layers/counts", "--layer counts"],
      ["raw/X", "--raw"],
      ["uns", null],
      ["obsp", null],
      ["varm", null],
    ],
  );
  assert.match(notStored[0]!.reason, /50 columns/);
  assert.match(notStored[3]!.reason, /neighbors, note/);
});

test("with the flag it names, X_pca is stored, and the .h5ad export gives back X, names and X_pca in the input's order (anndata)", async () => {
  const ds = join(dir, "kept");
  const r = await cli("convert", INPUT, ds, "--quiet", "--json", "--obsm", "X_umap,X_pca");
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!JSON.parse(r.stdout).not_stored.some((p: { part: string }) => p.part.startsWith("obsm/")));
  const h5ad = join(dir, "back.h5ad");
  assert.equal((await cli("export", ds, h5ad, "--quiet")).code, 0);
  assert.deepEqual(await python("h5ad", INPUT, h5ad), []);
});

test("a 10x folder export reads back in scanpy.read_10x_mtx with the input's counts, symbols, ids, feature types and barcodes", async () => {
  const ds = join(dir, "tenx-ds");
  assert.equal((await cli("convert", INPUT, ds, "--quiet")).code, 0);
  const folder = join(dir, "filtered_feature_bc_matrix/");
  const r = await cli("export", ds, folder, "--quiet");
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await python("10x", INPUT, folder), []);
});
