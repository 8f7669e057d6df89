/**
 * The dataset's statistics from the command line: `convert --sporadik` writes them at its end,
 * `deltacells stats` writes them for a dataset converted without, and `validate` checks them. The
 * numbers are compared with the input's own matrix and obs, read by @deltacells/anndata (not the
 * tiles the statistics were computed from).
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openInput } from "@deltacells/anndata/node";
import { openDataset, openStats, TARGET_SUM } from "@deltacells/core/node";
import { cli, REPO, tempDir } from "./cli-helpers.js";

const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
let dir: string;
let withCompanion: string;
let plain: string;

before(async () => {
  dir = tempDir();
  withCompanion = join(dir, "pbmc");
  plain = join(dir, "pbmc-plain");
  const a = await cli("convert", PBMC, withCompanion, "--sporadik", "--quiet", "--threads", "1", "--json");
  const b = await cli("convert", PBMC, plain, "--quiet", "--threads", "1");
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal((JSON.parse(a.stdout) as { statistics: { path: string } }).statistics.path, "stats");
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

/** The input's sums of log1p(counts per 10,000) per gene (source order), overall and per bulk_labels category. */
async function fromInput() {
  const input = await openInput(PBMC);
  try {
    const obs = (await input.obs()).columns.find((c) => c.name === "bulk_labels")!;
    assert.equal(obs.kind, "category");
    const codes = obs.kind === "category" ? obs.codes : new Int32Array(0);
    const k = obs.kind === "category" ? obs.categories.length : 0;
    const g = input.nGenes;
    const sum = new Float64Array(g);
    const byCategory = new Float64Array(k * g);
    const nnz = new Float64Array(g);
    const totals: number[] = [];
    for await (const block of input.rowBlocks()) {
      for (let r = 0; r < block.nRows; r++) {
        const lo = Number(block.indptr[r]);
        const hi = Number(block.indptr[r + 1]);
        let total = 0;
        for (let i = lo; i < hi; i++) total += Number(block.data[i]);
        totals.push(total);
        const code = codes[block.rowStart + r]!;
        for (let i = lo; i < hi; i++) {
          const v = Number(block.data[i]);
          if (v === 0) continue;
          const x = Math.log1p((v / total) * TARGET_SUM);
          const j = block.indices[i]!;
          sum[j]! += x;
          nnz[j]!++;
          if (code >= 0) byCategory[code * g + j]! += x;
        }
      }
    }
    return { sum, nnz, byCategory, totals, k, g };
  } finally {
    await input.close();
  }
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

test("convert --sporadik writes the statistics, equal to the input's sums per gene, per cell and per cell type", async () => {
  const ds = await openDataset(withCompanion);
  assert.equal(ds.manifest.metadata.stats, "stats");
  const stats = (await openStats(ds))!;
  assert.deepEqual(stats.columns, ["bulk_labels", "phase", "louvain"]);
  const want = await fromInput();
  const genes = await stats.genes();
  for (let j = 0; j < want.g; j++) {
    assert.ok(close(genes.sum[j]!, want.sum[j]!), `gene ${j}: ${genes.sum[j]} vs ${want.sum[j]}`);
    assert.equal(genes.nnz[j], want.nnz[j]);
  }
  assert.deepEqual(Array.from(await stats.cellTotals()), want.totals);
  const col = (await stats.column("bulk_labels"))!;
  for (let c = 0; c < want.k; c++) {
    const m = col.moments(c);
    for (let j = 0; j < want.g; j++)
      assert.ok(close(m.sum[j]!, want.byCategory[c * want.g + j]!), `${c} ${j}`);
  }
});

test("deltacells stats writes the same statistics for a dataset converted without them; validate checks them", async () => {
  assert.equal((await openDataset(plain)).manifest.metadata.stats, undefined);
  const r = await cli("stats", plain, "--quiet", "--threads", "1", "--json");
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout) as { path: string; columns: { name: string; categories: number }[] };
  assert.equal(json.path, "stats");
  assert.deepEqual(
    json.columns.map((c) => [c.name, c.categories]),
    [
      ["bulk_labels", 10],
      ["phase", 3],
      ["louvain", 11],
    ],
  );
  const index = (p: string) => JSON.parse(readFileSync(join(p, "stats/stats.json"), "utf8"));
  assert.deepEqual(index(plain), index(withCompanion));
  const valid = await cli("validate", plain);
  assert.equal(valid.code, 0, valid.stdout + valid.stderr);

  // One byte of the column's object changed: validate names it.
  const key = index(plain).columns[0].key as string;
  const path = join(plain, "stats", key);
  const bytes = readFileSync(path);
  bytes[20]! ^= 0xff;
  writeFileSync(path, bytes);
  const bad = await cli("validate", plain);
  assert.equal(bad.code, 1);
  assert.match(bad.stdout, new RegExp(`stats/${key}: \\[FormatError\\] .*${key} has CRC-32`));
});

test("deltacells stats refuses a location without a dataset, and says what it is for in --help", async () => {
  const r = await cli("stats", join(dir, "nothing"), "--quiet");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /nothing is there/);
  const help = await cli("stats", "--help");
  assert.match(help.stdout, /usage: deltacells stats DATASET/);
  assert.match(help.stdout, /rank_genes_groups/);
});

test("append leaves the statistics of the earlier cells unnamed and says so; append --sporadik and an atlas's convert --sporadik write them", async () => {
  const grown = join(dir, "grown");
  const one = await cli("convert", "data/anndata/csr.h5ad", grown, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(one.code, 0, one.stderr);
  assert.equal((await openDataset(grown)).manifest.metadata.stats, "stats");
  const r = await cli("append", grown, "data/anndata/dense.h5ad", "--quiet", "--threads", "1");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /note: the statistics \(stats\/\) describe the old cells only .*deltacells stats/);
  assert.equal((await openDataset(grown)).manifest.metadata.stats, undefined);
  assert.equal((await cli("validate", grown)).code, 0);
  const again = await cli(
    "append",
    grown,
    "data/anndata/dense.h5ad",
    "--sporadik",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /statistics: stats\//);
  // Appended to again with every part named: the parts are written again, and no note says otherwise.
  const third = await cli(
    "append",
    grown,
    "data/anndata/dense.h5ad",
    "--source-names",
    "third",
    "--sporadik",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(third.code, 0, third.stderr);
  assert.match(third.stdout, /sporadik companion: .* written again/);
  assert.match(third.stdout, /statistics: stats\//);
  assert.doesNotMatch(third.stdout, /old cells only/);
  const ds = await openDataset(grown);
  assert.equal((await (await openStats(ds))!.genes()).n, ds.nCells);
  const atlas = join(dir, "atlas");
  const a = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    "data/anndata/dense.h5ad",
    atlas,
    "--sporadik",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(a.code, 0, a.stderr);
  const made = await openDataset(atlas);
  assert.equal((await (await openStats(made))!.genes()).n, made.nCells);
  assert.equal((await cli("validate", atlas)).code, 0);
});
