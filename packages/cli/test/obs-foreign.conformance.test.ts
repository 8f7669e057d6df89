/**
 * Obs sidecars written by another implementation from the format text alone: pyarrow rewrites a
 * dataset's shards with its defaults (every field nullable, so category codes are OPTIONAL;
 * int32/int64 with the logical annotation only; statistics; dictionary pages) and the fingerprint
 * with json.dumps's default separators, or with missing categories as null codes
 * (conformance/obs_foreign_sidecar.py). validate, inspect, obs and export read them as the
 * original; a sidecar changed after that is still refused.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { openDataset } from "@deltacells/core/node";
import { cli, PYTHON, run, tempDir } from "./cli-helpers.js";

const dir = tempDir();
const ORIGINAL = join(dir, "original");
const VARIANTS = {
  "json.dumps's default separators, nullable codes": { path: join(dir, "spaced"), args: [] },
  "compact separators, missing categories as null codes": {
    path: join(dir, "null-codes"),
    args: ["--compact", "--null-codes"],
  },
};

before(async () => {
  const c = await cli(
    "convert",
    "data/anndata/obs-encodings.h5ad",
    ORIGINAL,
    "--tile-size",
    "16",
    "--obs-tiles-per-file",
    "2",
    "--quiet",
    "--level",
    "1",
  );
  assert.equal(c.code, 0, c.stderr);
  for (const { path, args } of Object.values(VARIANTS)) {
    const r = await run(PYTHON, ["conformance/obs_foreign_sidecar.py", ORIGINAL, path, ...args]);
    assert.equal(r.code, 0, r.stderr);
  }
});

/** Every obs column of every cell as `deltacells obs --json` prints it. */
async function allRows(ds: string): Promise<unknown> {
  const r = await cli("obs", ds, "--columns", "all", "--json", "--cache-dir", join(dir, "cache"));
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

for (const [what, { path }] of Object.entries(VARIANTS)) {
  test(`a pyarrow-written sidecar (${what}) validates, inspects and reads as the original`, async () => {
    const manifest = JSON.parse(readFileSync(join(path, "manifest.json"), "utf8"));
    const original = JSON.parse(readFileSync(join(ORIGINAL, "manifest.json"), "utf8"));
    assert.notEqual(manifest.obs_fingerprint, original.obs_fingerprint, "another writer's shards");
    const v = await cli("validate", path);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const info = JSON.parse((await cli("inspect", path, "--json")).stdout);
    const want = JSON.parse((await cli("inspect", ORIGINAL, "--json")).stdout);
    assert.deepEqual(info.obs_columns, want.obs_columns);
    assert.deepEqual(await allRows(path), await allRows(ORIGINAL));
    // the codes as a loader takes them, tile by tile: -1 where a category is missing, never a null
    // over a code that reads as the first category
    const codes = async (ds: string) => {
      const col = (await (await openDataset(ds)).obs(["cat"], { cacheDir: join(dir, "cache") })).column(
        "cat",
      );
      return Array.from({ length: col.table.batches.length }, (_, t) => Array.from(col.tile(t).toArray()));
    };
    const got = await codes(path);
    assert.deepEqual(got, await codes(ORIGINAL));
    assert.ok(got.flat().includes(-1));
  });

  test(`export of a pyarrow-written sidecar (${what}) gives anndata the original's obs`, async () => {
    const back = join(dir, `${path.split("/").at(-1)}.h5ad`);
    const want = join(dir, "original.h5ad");
    assert.equal((await cli("export", ORIGINAL, want, "--quiet")).code, 0);
    const e = await cli("export", path, back, "--quiet");
    assert.equal(e.code, 0, e.stderr);
    const r = await run(PYTHON, [
      "-c",
      "import sys, anndata as ad, pandas as pd; a, b = (ad.read_h5ad(p) for p in sys.argv[1:]); " +
        "pd.testing.assert_frame_equal(a.obs, b.obs, check_exact=True); print(a.obs.shape)",
      back,
      want,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "(40, 25)");
  });
}

test("export of a sidecar whose manifest names no obs index keeps every column and numbers the cells, as anndata reads it", async () => {
  const path = join(dir, "no-metadata");
  const r = await run(PYTHON, ["conformance/obs_foreign_sidecar.py", ORIGINAL, path, "--no-obs-metadata"]);
  assert.equal(r.code, 0, r.stderr);
  const back = join(dir, "no-metadata.h5ad");
  const e = await cli("export", path, back, "--quiet", "--cells", "3:9");
  assert.equal(e.code, 0, e.stderr);
  const check = await run(PYTHON, [
    "-c",
    [
      "import json, sys, anndata as ad",
      "a = ad.read_h5ad(sys.argv[1]); o = ad.read_h5ad(sys.argv[2])[3:9]",
      "print(json.dumps({'names': list(a.obs_names), 'index_name': a.obs.index.name, 'columns': list(a.obs.columns),",
      "  'cell_id': list(a.obs['cell_id']), 'same_cat': list(a.obs['cat'].astype(str)) == list(o.obs['cat'].astype(str)),",
      "  'same_cats': list(a.obs['cat'].cat.categories) == list(o.obs['cat'].cat.categories)}))",
    ].join("\n"),
    back,
    "data/anndata/obs-encodings.h5ad",
  ]);
  assert.equal(check.code, 0, check.stderr);
  const got = JSON.parse(check.stdout);
  assert.deepEqual(got.names, ["3", "4", "5", "6", "7", "8"], "the cells' numbers in the dataset");
  assert.equal(got.index_name, null);
  assert.equal(got.columns[0], "cell_id", "the column that was the index is kept, first");
  assert.ok(got.columns.includes("cat") && got.columns.includes("X_umap_0"), got.columns.join(","));
  assert.deepEqual(got.cell_id, ["c003", "c004", "c005", "c006", "c007", "c008"]);
  assert.equal(got.same_cat, true, "a categorical stays a column, not cell names");
  assert.equal(got.same_cats, true);
});

test("a pyarrow-written sidecar changed afterwards is still refused: the accepted spellings are of the same content", async () => {
  const { path } = VARIANTS["json.dumps's default separators, nullable codes"];
  const schema = join(path, "obs", "schema.json");
  writeFileSync(schema, `${readFileSync(schema, "utf8")} `);
  const v = await cli("validate", path);
  assert.equal(v.code, 1);
  assert.match(
    v.stdout,
    /obs_fingerprint is [0-9a-f]{24} but schema\.json, tile_cells and the shards' hashes give/,
  );
  const o = await cli("obs", path);
  assert.equal(o.code, 1);
  assert.match(o.stderr, /\[InconsistentManifest\].*does not belong to this manifest/);
});
