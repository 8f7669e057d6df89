/**
 * Round trips for every input kind: input -> `deltacells convert` -> `deltacells export` equals
 * the input exactly, as read by anndata/scipy/h5py; the dataset's files are read by numpy and
 * pandas and every tile by the spec-written Python decoder (conformance/dataset_roundtrip.py).
 * The commands run in-process here (their command functions); the Python checks run
 * in one batch so anndata is imported once.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { convert } from "../src/convert/command.js";
import { exportCommand } from "../src/export/command.js";
import { PYTHON, REPO, run, tempDir } from "./cli-helpers.js";

interface Case {
  kind: string;
  input: string;
  /** Options for both convert and the Python loader. */
  opts?: string[];
  tileSize?: number;
  label?: string;
}

const CASES: Case[] = [
  { kind: "h5ad", input: "data/anndata/csr.h5ad" },
  { kind: "h5ad", input: "data/anndata/csc.h5ad" },
  { kind: "h5ad", input: "data/anndata/dense.h5ad" },
  { kind: "anndata-zarr", input: "data/anndata/csr-v2.zarr" },
  { kind: "anndata-zarr", input: "data/anndata/csr-v3.zarr" },
  { kind: "anndata-zarr", input: "data/anndata/csc-v3.zarr" },
  { kind: "anndata-zarr", input: "data/anndata/dense-v2.zarr" },
  { kind: "10x-h5", input: "data/10x-v3-chr21/filtered_feature_bc_matrix.h5", tileSize: 100 },
  { kind: "10x-h5", input: "data/10x-v2/filtered_gene_bc_matrices_h5.h5" },
  { kind: "10x-h5", input: "data/10x-v2/multiple_genomes.h5", opts: ["--genome", "another_genome"] },
  { kind: "10x-h5", input: "data/visium/raw_probe_bc_matrix.h5", tileSize: 100 },
  { kind: "10x-mtx", input: "data/10x-v3-chr21/filtered_feature_bc_matrix", tileSize: 100 },
  { kind: "mtx", input: "data/seurat-pbmc-small/pbmc_small_counts.mtx" },
  { kind: "mtx", input: "data/10x-v2/hg19_chr21_matrix.mtx" },
  { kind: "mtx", input: "data/anndata/cells-by-genes.mtx", opts: ["--transpose"] },
  { kind: "anndata-zarr", input: "data/mouse-10k-subset/10x-10k-subset.zarr", tileSize: 1000 },
];

/** Generated per run: a gene table with every column kind (see conformance/dataset_fixture.py). */
const RICH_VAR = join(tempDir(), "rich-var.h5ad");
CASES.push({ kind: "h5ad", input: RICH_VAR, label: "a generated gene table with every column kind" });

const results = new Map<Case, { problems: string[]; nnz?: number } | Error>();

before(async () => {
  const made = await run(PYTHON, ["conformance/dataset_fixture.py", RICH_VAR]);
  assert.equal(made.code, 0, made.stderr);
  const dir = tempDir();
  const batch: string[][] = [];
  const ran: Case[] = [];
  for (const [i, c] of CASES.entries()) {
    const ds = join(dir, `ds${i}`);
    const h5ad = join(dir, `back${i}.h5ad`);
    const mtx = join(dir, `part${i}.mtx`);
    const opts = c.opts ?? [];
    try {
      await convert([
        c.input,
        ds,
        "--tile-size",
        "8",
        "--chunks",
        "3",
        "--level",
        "3",
        "--threads",
        "2",
        "--quiet",
        ...opts,
      ]);
      // The input's gene order is the default; the Matrix Market part keeps the dataset's.
      await exportCommand([ds, h5ad]);
      await exportCommand([ds, mtx, "--cells", "3:11", "--dataset-gene-order"]);
      batch.push([c.kind, c.input, ds, h5ad, "--mtx", mtx, "--cells", "3:11", ...opts]);
      ran.push(c);
    } catch (err) {
      results.set(c, err as Error);
    }
  }
  const file = join(dir, "cases.json");
  writeFileSync(file, JSON.stringify(batch));
  const check = await run(PYTHON, ["conformance/dataset_roundtrip.py", "--batch", file]);
  const lines = check.stdout.trim().split("\n");
  ran.forEach((c, i) => {
    results.set(
      c,
      lines[i] ? JSON.parse(lines[i]!) : new Error(`no result from dataset_roundtrip.py: ${check.stderr}`),
    );
  });
});

for (const c of CASES) {
  test(`${c.kind} ${c.label ?? c.input} converts and exports back to exactly the input`, () => {
    const r = results.get(c);
    if (r instanceof Error) throw r;
    assert.ok(r, "the case ran");
    assert.deepEqual(r.problems, []);
    assert.ok((r.nnz ?? 0) > 0);
  });
}

test("an empty export (--cells 5:5) is an .h5ad anndata reads back: 0 cells, every gene and its table", async () => {
  const dir = tempDir();
  const ds = join(dir, "ds");
  const h5ad = join(dir, "empty.h5ad");
  await convert([RICH_VAR, ds, "--quiet", "--threads", "1"]);
  await exportCommand([ds, h5ad, "--cells", "5:5"]);
  const read = await run(PYTHON, [
    "-c",
    "import sys, anndata as ad; a = ad.read_h5ad(sys.argv[1]); " +
      "print(a.n_obs, a.n_vars, a.X.nnz, a.obs_names.dtype, a.var.index.name, list(a.var['genome'].cat.categories))",
    h5ad,
  ]);
  assert.equal(read.code, 0, read.stderr);
  assert.equal(read.stdout.trim(), "0 14 0 object symbol ['mm10', 'GRCh38']");
});

test("file:// URLs are taken wherever a path is: the convert input and output, the export output", async () => {
  const dir = tempDir();
  const url = (p: string) => pathToFileURL(p).href;
  await convert([
    url(join(REPO, "data/anndata/csr.h5ad")),
    url(join(dir, "ds")),
    "--quiet",
    "--threads",
    "1",
  ]);
  await exportCommand([url(join(dir, "ds")), url(join(dir, "part.mtx")), "--cells", "0:5"]);
  assert.match(
    readFileSync(join(dir, "part.mtx"), "utf8"),
    /^%%MatrixMarket matrix coordinate integer general/,
  );
});
