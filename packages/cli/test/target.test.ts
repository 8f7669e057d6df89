/**
 * `convert` into a folder that already holds something: refused, or replaced without losing the old
 * one on the way. The commands run in this process, but for the one killed with SIGKILL.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { validateDataset } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";
import { COMMAND_ARGS, cli, REPO, tempDir } from "./cli-helpers.js";

const SMALL = "data/anndata/csr.h5ad"; // 57 cells x 41 genes
const SLOW = "data/mouse-10k-subset/10x-10k-subset.zarr"; // 10,000 cells: seconds at --level 22 with 64-cell tiles

let template = "";
before(async () => {
  template = join(tempDir(), "ds");
  const r = await cli("convert", SMALL, template, "--tile-size", "16", "--level", "3");
  assert.equal(r.code, 0, r.stderr);
});

/** A folder holding a valid 57-cell dataset (4 tiles), and its manifest's bytes. */
async function oldDataset(): Promise<{ out: string; manifest: Buffer }> {
  const out = join(tempDir(), "ds");
  cpSync(template, out, { recursive: true });
  return { out, manifest: readFileSync(join(out, "manifest.json")) };
}

/** The old dataset is still there, whole: the same manifest, 57 cells, every tile valid. */
async function assertOldIntact(out: string, manifest: Buffer): Promise<void> {
  assert.deepEqual(readFileSync(join(out, "manifest.json")), manifest);
  const ds = await openDataset(out);
  assert.equal(ds.nCells, 57);
  const report = await validateDataset(ds);
  assert.deepEqual(report.problems, []);
  assert.equal(report.tilesChecked, 4);
}

function stagingDirs(out: string): string[] {
  return readdirSync(out).filter((n) => n.startsWith(".deltacells-staging-"));
}

test("convert refuses a folder that holds a dataset, and writes nothing there", async () => {
  const { out, manifest } = await oldDataset();
  const before = readdirSync(join(out, "tiles"));
  for (const format of ["deltacells", "sporadik"]) {
    const r = await cli("convert", SMALL, out, "--format", format);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /already holds a deltacells dataset .*Nothing was written.*--overwrite/);
  }
  assert.deepEqual(readdirSync(join(out, "tiles")), before);
  assert.ok(!existsSync(join(out, "zarr.json")));
  await assertOldIntact(out, manifest);
});

test("--overwrite never deletes objects that belong to no dataset or store", async () => {
  const { out, manifest } = await oldDataset();
  writeFileSync(join(out, "notes.txt"), "mine");
  const r = await cli("convert", SMALL, out, "--overwrite");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /notes\.txt/);
  assert.equal(readFileSync(join(out, "notes.txt"), "utf8"), "mine");
  await assertOldIntact(out, manifest);
});

test("convert refuses to write over its own input", async () => {
  const { out, manifest } = await oldDataset();
  const r = await cli("convert", out, `${out}/`, "--format", "sporadik", "--overwrite");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /is the input itself/);
  await assertOldIntact(out, manifest);
});

test("--overwrite replaces a dataset by a store, and a two-layout store by a one-layout store, leaving nothing stale", async () => {
  const { out } = await oldDataset();
  const a = await cli("convert", SMALL, out, "--format", "sporadik", "--overwrite");
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(readdirSync(out).sort(), ["layouts", "zarr.json"]);
  assert.deepEqual(readdirSync(join(out, "layouts")).sort(), ["axis0", "axis1", "zarr.json"]);

  const b = await cli("convert", SMALL, out, "--format", "sporadik", "--axes", "0", "--overwrite");
  assert.equal(b.code, 0, b.stderr);
  assert.deepEqual(readdirSync(join(out, "layouts")).sort(), ["axis0", "zarr.json"]);
  const v = await cli("validate", out, "--json");
  assert.equal(v.code, 0, v.stdout + v.stderr);

  const c = await cli("convert", SMALL, out, "--tile-size", "32", "--overwrite");
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(readdirSync(out).sort(), [
    "gene_order.npy",
    "manifest.json",
    "obs",
    "tiles",
    "var.parquet",
    "var_names.txt",
  ]);
  assert.deepEqual(readdirSync(join(out, "tiles")), ["tile_000000.dct", "tile_000001.dct"]);
  assert.equal((await cli("validate", out)).code, 0);
});

test("--overwrite replaces a dataset with its companion, statistics and rows in embedding order, leaving none of them", async () => {
  const out = join(tempDir(), "ds");
  const pbmc = "data/pbmc68k-counts/pbmc68k_counts.h5ad";
  const first = await cli("convert", pbmc, out, "--sporadik", "--quiet", "--threads", "1");
  assert.equal(first.code, 0, first.stderr);
  assert.ok(readdirSync(out).includes("sporadik-rows"));
  const again = await cli("convert", SMALL, out, "--overwrite", "--quiet");
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(readdirSync(out).sort(), [
    "gene_order.npy",
    "manifest.json",
    "obs",
    "tiles",
    "var.parquet",
    "var_names.txt",
  ]);
});

test("a conversion that fails with --overwrite leaves the old dataset as it was", async () => {
  const { out, manifest } = await oldDataset();
  // Negative counts are refused while reading, after the target was checked.
  const r = await cli("convert", "data/anndata/negative.h5ad", out, "--overwrite");
  assert.equal(r.code, 1);
  await assertOldIntact(out, manifest);
  assert.deepEqual(stagingDirs(out), []);
});

test("a conversion killed (SIGKILL) with --overwrite after writing tiles leaves the old dataset readable and valid", async () => {
  const { out, manifest } = await oldDataset();
  const child = spawn(
    process.execPath,
    [
      ...COMMAND_ARGS,
      "convert",
      SLOW,
      out,
      "--overwrite",
      "--tile-size",
      "64",
      "--level",
      "22",
      "--threads",
      "1",
    ],
    { cwd: REPO, stdio: "ignore" },
  );
  const exited = new Promise<number | null>((ok) => child.on("exit", (code) => ok(code)));
  let staged = 0;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const [dir] = stagingDirs(out);
    staged = dir && existsSync(join(out, dir, "tiles")) ? readdirSync(join(out, dir, "tiles")).length : 0;
    if (staged >= 5) break;
    await new Promise((ok) => setTimeout(ok, 10));
  }
  child.kill("SIGKILL");
  const code = await exited;
  assert.equal(code, null, "the converter was killed, not finished");
  assert.ok(staged >= 5, `new tiles were being written when it was killed (${staged})`);
  await assertOldIntact(out, manifest);

  // Its writer lock stays, and refuses the next run until broken; that run then replaces the old
  // dataset and clears the killed run's staging folder.
  const locked = await cli("convert", SMALL, out, "--overwrite", "--tile-size", "8");
  assert.equal(locked.code, 1);
  assert.match(locked.stderr, /\[TargetLocked\].*the lock is stale/);
  const again = await cli("convert", SMALL, out, "--overwrite", "--tile-size", "8", "--break-lock");
  assert.equal(again.code, 0, again.stderr);
  assert.ok(!existsSync(join(out, ".deltacells-lock")));
  assert.deepEqual(stagingDirs(out), []);
  assert.equal(readdirSync(join(out, "tiles")).length, 8);
  assert.equal((await cli("validate", out)).code, 0);
});
