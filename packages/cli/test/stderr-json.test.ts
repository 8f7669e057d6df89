/**
 * `DELTACELLS_STDERR=json`: stderr for a program that runs the command (the Python package): the
 * error as one `{"error": ...}` line with its tag, hint and object, progress as `{"progress": ...}`
 * lines even when stderr is not a terminal (convert, append, stats, plan); and `obs --localize`, which lists the cache's files.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { tableFromIPC } from "apache-arrow";
import { cli, cliWithEnv, tempDir } from "./cli-helpers.js";

const forPrograms = cliWithEnv({ DELTACELLS_STDERR: "json" });
const dir = tempDir();
const ds = join(dir, "ds");

before(async () => {
  const r = await cli("convert", "data/anndata/csr.h5ad", ds, "--tile-size", "16", "--level", "3", "--quiet");
  assert.equal(r.code, 0, r.stderr);
});

/** The JSON objects of a run's stderr, one per line (every line must be one). */
function records(stderr: string): Record<string, Record<string, unknown>>[] {
  return stderr
    .trimEnd()
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
}

test("a refusal is one error line with its tag, message, hint and object", async () => {
  const target = join(dir, "full");
  mkdirSync(target);
  writeFileSync(join(target, "notes.txt"), "mine");
  const r = await forPrograms("convert", "data/anndata/csr.h5ad", target, "--quiet");
  assert.equal(r.code, 1);
  const [line, ...rest] = records(r.stderr);
  assert.deepEqual(rest, []);
  const error = line!.error!;
  assert.equal(error.tag, "TargetNotEmpty");
  assert.match(String(error.message), /notes\.txt|not empty/);
  assert.equal(typeof error.object, "string");
});

test("an error with a hint carries it, as the text's hint line does", async () => {
  const r = await forPrograms("convert", "data/anndata/csr.h5ad", join(dir, "out-layer"), "--layer", "nope");
  assert.equal(r.code, 1);
  const { error } = records(r.stderr)[0]!;
  assert.equal(error!.tag, "MissingMatrix");
  assert.match(String(error!.hint), /--layer counts|--raw/);
});

test("a usage mistake is an error line tagged Usage pointing to --help, exit code 2", async () => {
  const r = await forPrograms("convert", "data/anndata/csr.h5ad", join(dir, "x"), "--tile-size", "zero");
  assert.equal(r.code, 2);
  const { error } = records(r.stderr)[0]!;
  assert.equal(error!.tag, "Usage");
  assert.match(String(error!.message), /--tile-size must be an integer/);
  assert.equal(error!.hint, "run `deltacells convert --help` for usage");
});

test("progress comes as lines reaching every cell though stderr is no terminal, and not with --quiet", async () => {
  const r = await forPrograms("convert", "data/anndata/csr.h5ad", join(dir, "progress"), "--tile-size", "16");
  assert.equal(r.code, 0, r.stderr);
  const progress = records(r.stderr).map((x) => x.progress!);
  assert.ok(progress.length >= 2, r.stderr);
  assert.deepEqual(progress.at(-1), { phase: "pass 2", done: 57, total: 57, unit: "cells" });
  assert.ok(progress.some((p) => p.phase === "pass 1"));
  const quiet = await forPrograms("convert", "data/anndata/csr.h5ad", join(dir, "quiet"), "--quiet");
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(quiet.stderr, "");
  const person = await cli("convert", "data/anndata/csr.h5ad", join(dir, "person"));
  assert.doesNotMatch(person.stderr, /progress/);
});

test("append reports its progress as lines too, up to every cell and through its companion, and not with --quiet", async () => {
  const grown = join(dir, "append-progress");
  const c = await cli("convert", "data/anndata/csr.h5ad", grown, "--tile-size", "16", "--quiet");
  assert.equal(c.code, 0, c.stderr);
  const r = await forPrograms("append", grown, "data/anndata/dense.h5ad", "--sporadik", "--threads", "1");
  assert.equal(r.code, 0, r.stderr);
  // the companion's "temporary space" line for the person stays text, as the module says
  const json = r.stderr.split("\n").filter((l) => l.startsWith("{"));
  const progress = records(json.join("\n")).map((x) => x.progress!);
  assert.ok(
    progress.some((p) => p.phase === "scan"),
    r.stderr,
  );
  assert.deepEqual(progress.filter((p) => p.phase === "tiles").at(-1), {
    phase: "tiles",
    done: 114,
    total: 114,
    unit: "cells",
  });
  // the companion's layouts, written again once the cells are added, through the same lines
  assert.ok(
    progress.some((p) => p.phase === "genes"),
    r.stderr,
  );
  const quiet = await forPrograms("append", grown, "data/anndata/dense.h5ad", "--quiet", "--threads", "1");
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(quiet.stderr, "");
});

test("stats and plan report their progress as lines too, up to every tile and every input's cells, and not with --quiet", async () => {
  const counted = join(dir, "stats-progress");
  const c = await cli("convert", "data/anndata/csr.h5ad", counted, "--tile-size", "16", "--quiet");
  assert.equal(c.code, 0, c.stderr);
  const stats = await forPrograms("stats", counted, "--threads", "1");
  assert.equal(stats.code, 0, stats.stderr);
  const statsProgress = records(stats.stderr).map((x) => x.progress!);
  assert.ok(
    statsProgress.every((p) => p.phase === "stats" && p.unit === "tiles"),
    stats.stderr,
  );
  assert.deepEqual(statsProgress.at(-1), { phase: "stats", done: 4, total: 4, unit: "tiles" });
  const quietStats = await forPrograms("stats", counted, "--threads", "1", "--quiet");
  assert.equal(quietStats.code, 0, quietStats.stderr);
  assert.equal(quietStats.stderr, "");

  const plan = await forPrograms(
    "plan",
    "data/anndata/csr.h5ad",
    "data/anndata/dense.h5ad",
    join(dir, "planned"),
  );
  assert.equal(plan.code, 0, plan.stderr);
  const planProgress = records(plan.stderr).map((x) => x.progress!);
  // Each input's scan, as a phase of its own, up to its every cell.
  for (const phase of ["scan 1/2", "scan 2/2"])
    assert.deepEqual(
      planProgress.filter((p) => p.phase === phase).at(-1),
      { phase, done: 57, total: 57, unit: "cells" },
      plan.stderr,
    );
  const quietPlan = await forPrograms(
    "plan",
    "data/anndata/csr.h5ad",
    "data/anndata/dense.h5ad",
    join(dir, "planned-quiet"),
    "--quiet",
  );
  assert.equal(quietPlan.code, 0, quietPlan.stderr);
  assert.equal(quietPlan.stderr, "");
});

test("obs --localize caches the columns and the index column, and lists Arrow files of one batch per tile", async () => {
  const cache = join(dir, "cache");
  const r = await cli(
    "obs",
    ds,
    "--columns",
    "cell_type,n_counts",
    "--localize",
    "--json",
    "--cache-dir",
    cache,
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.n_cells, 57);
  assert.equal(out.n_tiles, 4);
  assert.equal(out.cache_dir, cache);
  assert.equal(out.index, "barcode");
  assert.deepEqual(
    out.columns.map((c: { name: string }) => c.name),
    ["cell_type", "n_counts", "barcode"],
  );
  const cellType = out.columns[0];
  assert.equal(cellType.kind, "category");
  assert.ok(Array.isArray(cellType.categories));
  for (const c of out.columns) {
    assert.ok(c.path.startsWith(join(cache, out.fingerprint, "obs")), c.path);
    const table = tableFromIPC(readFileSync(c.path));
    assert.deepEqual(
      table.batches.map((b) => b.numRows),
      [16, 16, 16, 9],
    );
  }
});

test("obs --localize of a dataset whose metadata names no index column lists index null and every column asked for", async () => {
  const foreign = join(dir, "foreign");
  mkdirSync(foreign);
  const c = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    foreign,
    "--tile-size",
    "16",
    "--quiet",
    "--level",
    "1",
  );
  assert.equal(c.code, 0, c.stderr);
  // as another implementation writes the manifest: no obs_* metadata
  const path = join(foreign, "manifest.json");
  const manifest = JSON.parse(readFileSync(path, "utf8"));
  manifest.metadata = { source: "elsewhere" };
  writeFileSync(path, JSON.stringify(manifest));
  const r = await cli(
    "obs",
    foreign,
    "--columns",
    "cell_type",
    "--localize",
    "--json",
    "--cache-dir",
    join(dir, "cache"),
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.index, null, "no column taken for the cells' names");
  assert.equal(out.index_name, null);
  assert.deepEqual(
    out.columns.map((col: { name: string }) => col.name),
    ["cell_type"],
  );
});

test("obs --localize refuses --cells: a column is cached whole", async () => {
  const r = await cli("obs", ds, "--localize", "--cells", "0:4");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--cells does not apply to --localize/);
});
