/**
 * A plain Matrix Market file given names (a genes file, one a line or a 10x features.tsv, and a
 * barcodes file, gzipped or not), and what an input holds besides the matrix read (inventory).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { tempDir } from "../../../test-utils/temp.js";
import { isAnndataError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { DATA } from "./helpers.js";

/** Seurat's pbmc_small counts: genes x cells, 230 x 80, no names. */
const MTX = join(DATA, "seurat-pbmc-small/pbmc_small_counts.mtx");

function namesFiles() {
  const dir = tempDir("mtx-names-");
  const genes = Array.from({ length: 230 }, (_, i) => `GENE${i}`);
  const barcodes = Array.from({ length: 80 }, (_, i) => `CELL${i}-1`);
  const lines = join(dir, "genes.txt");
  writeFileSync(lines, `${genes.join("\n")}\n`);
  const features = join(dir, "features.tsv.gz");
  writeFileSync(
    features,
    gzipSync(genes.map((g, i) => `ENSG${String(i).padStart(5, "0")}\t${g}\tGene Expression\n`).join("")),
  );
  const cells = join(dir, "barcodes.tsv.gz");
  writeFileSync(cells, gzipSync(`${barcodes.join("\r\n")}\r\n`));
  return { dir, genes, barcodes, lines, features, cells };
}

test("a plain Matrix Market file without names is named by positions, and says both axes are unnamed", async () => {
  const src = await openInput(MTX);
  assert.deepEqual(src.unnamed, { cells: true, genes: true });
  assert.equal((await src.var()).index[106], "106");
  await src.close();
});

test("a genes file of one name a line and a gzipped barcodes file name a plain Matrix Market file's genes and cells", async () => {
  const f = namesFiles();
  const src = await openInput(MTX, { geneNames: f.lines, cellNames: f.cells });
  assert.deepEqual(src.unnamed, { cells: false, genes: false });
  const v = await src.var();
  assert.deepEqual(v.index, f.genes);
  assert.deepEqual(v.columns, []);
  assert.deepEqual((await src.obs()).index, f.barcodes);
  await src.close();
});

test("a 10x features.tsv.gz names the genes as a 10x folder's: symbols as the index, gene_ids and feature_types", async () => {
  const f = namesFiles();
  const src = await openInput(MTX, { geneNames: f.features });
  assert.deepEqual(src.unnamed, { cells: true, genes: false });
  const v = await src.var();
  assert.deepEqual(v.index, f.genes);
  assert.deepEqual(
    v.columns.map((c) => c.name),
    ["gene_ids", "feature_types"],
  );
  const ids = v.columns[0]!;
  assert.equal(ids.kind === "string" && ids.values[7], "ENSG00007");
  await src.close();
});

test("a names file of the wrong length is refused naming the file, both counts and the transpose option", async () => {
  const f = namesFiles();
  const src = await openInput(MTX, { cellNames: f.lines });
  await assert.rejects(src.obs(), (err: Error) => {
    assert.ok(isAnndataError(err, "MalformedInput"));
    assert.match(
      err.message,
      /genes\.txt: names 230 cells, but .*pbmc_small_counts\.mtx has 80 cells .*transpose/,
    );
    return true;
  });
  await src.close();
});

test("names files for anything but a plain Matrix Market file are refused, with the option to leave out", async () => {
  const f = namesFiles();
  await assert.rejects(openInput(join(DATA, "anndata/csr.h5ad"), { cellNames: f.cells }), (err: Error) => {
    assert.ok(isAnndataError(err, "Unsupported"));
    assert.deepEqual((err as { hint?: unknown }).hint, { kind: "drop-option", option: "cellNames" });
    return true;
  });
});

test("an AnnData input's inventory lists the other matrices, the groups nothing reads and every obsm entry's shape", async () => {
  const legacy = await openInput(join(DATA, "legacy-anndata/pbmc68k_reduced.h5ad"), { raw: true });
  const inv = await legacy.inventory();
  await legacy.close();
  assert.deepEqual(inv.matrices, ["X"]);
  const uns = inv.groups.find((g) => g.name === "uns")!;
  // A pre-0.7 file's categories live in uns and are read with obs: not listed as left out.
  assert.ok(uns.keys.includes("neighbors") && uns.keys.includes("pca"), JSON.stringify(uns));
  assert.ok(!uns.keys.some((k) => k.endsWith("_categories")), JSON.stringify(uns));
  assert.deepEqual(
    inv.obsm.map((e) => `${e.key} ${e.kind} ${e.shape.join("x")}`),
    ["X_pca dense 700x50", "X_umap dense 700x2"],
  );

  const csr = await openInput(join(DATA, "anndata/csr.h5ad"));
  assert.deepEqual((await csr.inventory()).matrices, ["layers/counts", "raw/X"]);
  await csr.close();
  const obsm = await openInput(join(DATA, "anndata/obsm.h5ad"));
  const kinds = Object.fromEntries(
    (await obsm.inventory()).obsm.map((e) => [e.key, `${e.kind} ${e.shape.join("x")}`]),
  );
  await obsm.close();
  assert.equal(kinds.cube, "dense 12x2x3");
  assert.equal(kinds.sparse_csr, "sparse 12x6");
  assert.equal(kinds.table, "table 12x3");
});
