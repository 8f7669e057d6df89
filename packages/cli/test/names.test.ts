/**
 * Names through the commands: a plain .mtx named with --genes and --barcodes, what convert did not
 * store, exports in the input's gene order (and 10x folders), and slice by name on a dataset's
 * companion. Checked against the input readers of @deltacells/anndata, independent of the writer.
 */
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openInput } from "@deltacells/anndata/node";
import { assertShortError, cli, cliPlain, tempDir } from "./cli-helpers.js";

const MTX = "data/seurat-pbmc-small/pbmc_small_counts.mtx";
const GENES = Array.from({ length: 230 }, (_, i) => `GENE${i}`);
const BARCODES = Array.from({ length: 80 }, (_, i) => `CELL${i}-1`);

/** The rows of an input as dense arrays, cells x genes. */
async function dense(path: string): Promise<number[][]> {
  const src = await openInput(path);
  const rows = Array.from({ length: src.nCells }, () => new Array<number>(src.nGenes).fill(0));
  for await (const b of src.rowBlocks()) {
    for (let r = 0; r < b.nRows; r++)
      for (let k = b.indptr[r]!; k < b.indptr[r + 1]!; k++) rows[b.rowStart + r]![b.indices[k]!] = b.data[k]!;
  }
  await src.close();
  return rows;
}

function namesFiles(dir: string) {
  const genes = join(dir, "genes.txt");
  writeFileSync(genes, `${GENES.join("\n")}\n`);
  const barcodes = join(dir, "barcodes.tsv");
  writeFileSync(barcodes, `${BARCODES.join("\n")}\n`);
  return { genes, barcodes };
}

test("a plain .mtx converted without names says its genes and cells are unnamed, and names the flags", async () => {
  const r = await cli("convert", MTX, join(tempDir(), "ds"), "--quiet");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /genes unnamed: .*0 \.\. 229.*--genes FILE/);
  assert.match(r.stdout, /cells unnamed: .*--barcodes FILE/);
  const json = await cli("convert", MTX, join(tempDir(), "ds"), "--quiet", "--json");
  assert.deepEqual(JSON.parse(json.stdout).unnamed, ["genes", "cells"]);
});

test("a plain .mtx converted with --genes and --barcodes keeps the names: an .h5ad export gives them back in the file's order", async () => {
  const dir = tempDir();
  const files = namesFiles(dir);
  const ds = join(dir, "ds");
  const r = await cli(
    "convert",
    MTX,
    ds,
    "--genes",
    files.genes,
    "--barcodes",
    files.barcodes,
    "--json",
    "--quiet",
  );
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  assert.deepEqual(summary.unnamed, []);
  assert.equal(summary.n_genes, 230, "--genes named the genes; it declared no atlas gene space");
  assert.equal(summary.has_obs, true);
  const h5ad = join(dir, "back.h5ad");
  assert.equal((await cli("export", ds, h5ad, "--quiet")).code, 0);
  const back = await openInput(h5ad);
  assert.deepEqual((await back.var()).index, GENES);
  assert.deepEqual((await back.obs()).index, BARCODES);
  await back.close();
  assert.deepEqual(await dense(h5ad), await dense(MTX), "the counts, genes in the input's order");
});

test("--barcodes with an input that names its cells is refused with the flag to leave out", async () => {
  const files = namesFiles(tempDir());
  const r = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    join(tempDir(), "ds"),
    "--barcodes",
    files.barcodes,
  );
  assert.equal(r.code, 1);
  assert.match(r.stderr, /names files .* plain Matrix Market/);
  assert.match(r.stderr, /hint: leave out --barcodes/);
});

test("convert lists what it did not store, with the flag that keeps it, and that flag keeps it", async () => {
  const dir = tempDir();
  const r = await cli("convert", "data/anndata/obsm.h5ad", join(dir, "a"), "--quiet", "--json");
  assert.equal(r.code, 0, r.stderr);
  const notStored = JSON.parse(r.stdout).not_stored as { part: string; reason: string; flag?: string }[];
  const pca = notStored.find((p) => p.part === "obsm/X_pca")!;
  assert.match(pca.reason, /4 columns/);
  assert.ok(pca.flag?.startsWith("--obsm ") && pca.flag.endsWith(",X_pca"), pca.flag);
  const table = notStored.find((p) => p.part === "obsm/table")!;
  assert.equal(table.flag, undefined, "a data frame entry cannot become obs columns");
  const text = await cli("convert", "data/anndata/obsm.h5ad", join(dir, "b"), "--quiet");
  assert.match(
    text.stdout,
    /not stored \(5 parts of the input\):\n {4}obsm\/X_pca: 4 columns.*--obsm .*X_pca keeps it/,
  );

  const kept = await cli(
    "convert",
    "data/anndata/obsm.h5ad",
    join(dir, "c"),
    "--quiet",
    "--json",
    ...pca.flag!.split(" "),
  );
  assert.equal(kept.code, 0, kept.stderr);
  assert.ok(!JSON.parse(kept.stdout).not_stored.some((p: { part: string }) => p.part === "obsm/X_pca"));
  const h5ad = join(dir, "c.h5ad");
  assert.equal((await cli("export", join(dir, "c"), h5ad, "--quiet")).code, 0);
  const back = await openInput(h5ad);
  assert.deepEqual((await back.obsm(["X_pca"])).X_pca!.shape, [12, 4]);
  await back.close();

  const layer = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    join(dir, "d"),
    "--quiet",
    "--json",
    "--layer",
    "counts",
  );
  assert.deepEqual(
    JSON.parse(layer.stdout).not_stored.map((p: { part: string; flag?: string }) => [p.part, p.flag ?? null]),
    [
      ["X", null],
      ["raw/X", "--raw"],
    ],
  );
});

test("export writes the input's gene order by default, and the dataset's with --dataset-gene-order", async () => {
  const dir = tempDir();
  const ds = join(dir, "ds");
  assert.equal((await cli("convert", "data/anndata/csr.h5ad", ds, "--quiet")).code, 0);
  const input = await openInput("data/anndata/csr.h5ad");
  const inputGenes = (await input.var()).index;
  await input.close();
  const h5ad = join(dir, "x.h5ad");
  const r = await cli("export", ds, h5ad, "--json", "--quiet");
  assert.equal(JSON.parse(r.stdout).gene_order, "source");
  const back = await openInput(h5ad);
  assert.deepEqual((await back.var()).index, inputGenes);
  await back.close();
  const byTotal = join(dir, "y.h5ad");
  const d = await cli("export", ds, byTotal, "--dataset-gene-order", "--quiet");
  assert.match(d.stdout, /genes in the dataset's order/);
  const other = await openInput(byTotal);
  const datasetGenes = (await other.var()).index;
  await other.close();
  assert.notDeepEqual(datasetGenes, inputGenes);
  assert.deepEqual([...datasetGenes].sort(), [...inputGenes].sort());
});

test("export to a folder writes a 10x folder that reads back as the input: counts, gene names and ids, barcodes", async () => {
  const dir = tempDir();
  const ds = join(dir, "ds");
  const input = "data/10x-v3-chr21/filtered_feature_bc_matrix";
  assert.equal((await cli("convert", input, ds, "--quiet")).code, 0);
  const out = join(dir, "tenx/");
  const r = await cli("export", ds, out, "--json", "--quiet");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).format, "10x");
  assert.deepEqual(readdirSync(out).sort(), ["barcodes.tsv.gz", "features.tsv.gz", "matrix.mtx.gz"]);
  const [a, b] = [await openInput(input), await openInput(out)];
  assert.equal(b.format, "10x-mtx");
  assert.deepEqual(await b.var(), await a.var());
  assert.deepEqual((await b.obs()).index, (await a.obs()).index);
  await Promise.all([a.close(), b.close()]);
  assert.deepEqual(await dense(out), await dense(input));
  // --10x names a folder whatever its name.
  const named = join(dir, "export.mtx");
  assert.equal((await cli("export", ds, named, "--10x", "--cells", "0:5", "--quiet")).code, 0);
  assert.equal((await dense(named)).length, 5);
});

test("a 10x folder whose parent does not exist is refused in one line, under /proc too (where a recursive mkdir never returns)", async () => {
  const ds = join(tempDir(), "ds");
  assert.equal((await cli("convert", "data/anndata/csr.h5ad", ds, "--quiet")).code, 0);
  for (const parent of [join(tempDir(), "no-such-folder"), "/proc/no-such-folder"]) {
    assertShortError(
      await cliPlain("export", ds, join(parent, "tenx/")),
      /\[OutputNotWritable\]: cannot create the folder .* does not exist; create it first/,
    );
  }
});

test("slice DATASET reads its companion, takes gene and cell names for positions and prints names beside positions", async () => {
  const dir = tempDir();
  const ds = join(dir, "ds");
  assert.equal((await cli("convert", "data/anndata/csr.h5ad", ds, "--sporadik", "--quiet")).code, 0);
  const input = await openInput("data/anndata/csr.h5ad");
  const genes = (await input.var()).index;
  const cells = (await input.obs()).index;
  await input.close();
  const rows = await dense("data/anndata/csr.h5ad");

  const byName = await cli("slice", ds, "--axis", "1", genes[3]!, "--json");
  assert.equal(byName.code, 0, byName.stderr);
  const gene = JSON.parse(byName.stdout).slices[0];
  assert.equal(gene.position, 3);
  assert.equal(gene.name, genes[3]);
  const expected = rows.flatMap((row, c) => (row[3] ? [[cells[c], row[3]]] : []));
  assert.deepEqual(
    gene.names.map((n: string, k: number) => [n, gene.values[k]]),
    expected,
  );
  const text = await cli("slice", ds, "--axis", "0", cells[2]!);
  assert.equal(text.code, 0, text.stderr);
  const first = rows[2]!.findIndex((v) => v > 0);
  assert.match(
    text.stdout,
    new RegExp(
      `^  2 \\(${cells[2]}\\): \\d+ nonzeros: ${first} \\(${genes[first]}\\)=${rows[2]![first]}`,
      "m",
    ),
  );

  const unknown = await cli("slice", ds, "--axis", "1", "NO_SUCH_GENE");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no gene is named "NO_SUCH_GENE" on axis 1/);

  // A store of its own takes the names of the dataset it was converted from.
  const store = join(dir, "store.zarr");
  assert.equal((await cli("convert", ds, store, "--format", "sporadik", "--quiet")).code, 0);
  const bare = await cli("slice", store, "--axis", "1", genes[3]!);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /--names-from DATASET/);
  const named = await cli("slice", store, "--axis", "1", genes[3]!, "--names-from", ds, "--json");
  assert.equal(named.code, 0, named.stderr);
  assert.deepEqual(JSON.parse(named.stdout).slices[0].names, gene.names);
});

test("slice of a dataset without a companion says how to make one", async () => {
  const ds = join(tempDir(), "ds");
  assert.equal((await cli("convert", "data/anndata/csr.h5ad", ds, "--quiet")).code, 0);
  const r = await cli("slice", ds, "--axis", "1", "0");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /\[NotASporadikStore\].* without a sporadik companion.*--sporadik/);
});
