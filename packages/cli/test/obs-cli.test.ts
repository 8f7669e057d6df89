/**
 * `deltacells obs`, `inspect` and `validate` on datasets with obs, run in this process (cli-helpers'
 * `cli`); and convert refusing obs columns it cannot store without touching the output.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { DeltacellsError, UnknownObsExclude, UnsupportedObsColumns } from "@deltacells/core";
import { explainObsError } from "../src/obs-options.js";
import { cli, tempDir } from "./cli-helpers.js";

const dir = tempDir();
const ds = join(dir, "ds");
const cache = join(dir, "cache");

before(async () => {
  const r = await cli("convert", "data/anndata/csr.h5ad", ds, "--tile-size", "16", "--level", "3", "--quiet");
  assert.equal(r.code, 0, r.stderr);
});

test("obs without --columns prints the schema; --json gives schema.json", async () => {
  const text = await cli("obs", ds, "--cache-dir", cache);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /12 obs columns, 57 cells in 1 shard of up to 1,000 tiles/);
  assert.match(text.stdout, /cell_type\s+category\s+int8\s+3 categories/);
  assert.match(text.stdout, /maybe_int\s+numeric\s+int32/);
  assert.match(text.stdout, /X_pca_2\s+numeric\s+float/);
  const json = JSON.parse((await cli("obs", ds, "--json")).stdout);
  assert.equal(json.format, "deltacells-obs");
  assert.equal(json.columns[0].name, "barcode");
});

test("obs --columns --cells prints labels and nulls, as TSV and as JSON", async () => {
  const r = await cli(
    "obs",
    ds,
    "--columns",
    "barcode,cell_type,maybe_int,maybe_bool,n_counts",
    "--cells",
    "2:6",
    "--json",
    "--cache-dir",
    cache,
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.columns, ["barcode", "cell_type", "maybe_int", "maybe_bool", "n_counts"]);
  assert.equal(out.rows.length, 4);
  // the fixture: cell 3 has no cell type, maybe_int misses every 7th, maybe_bool every 5th
  assert.deepEqual(
    out.rows.map((row: unknown[]) => [row[0], row[2], row[3]]),
    [
      ["cell-002", 2, true],
      ["cell-003", 3, false],
      ["cell-004", 4, true],
      ["cell-005", 5, null],
    ],
  );
  assert.equal(out.rows[1][1], null);
  assert.ok(["B", "T", "NK"].includes(out.rows[0][1]));
  assert.equal(typeof out.rows[0][4], "number");
  const tsv = await cli(
    "obs",
    ds,
    "--columns",
    "barcode,cell_type,maybe_bool",
    "--cells",
    "3:6",
    "--cache-dir",
    cache,
  );
  assert.equal(tsv.code, 0, tsv.stderr);
  const lines = tsv.stdout.replace(/\n$/, "").split("\n");
  assert.equal(lines[0], "barcode\tcell_type\tmaybe_bool");
  assert.equal(lines[1], "cell-003\t\tfalse");
  assert.match(lines[3]!, /^cell-005\t(B|T|NK)\t$/);
});

test("obs refuses an unknown column (listing the columns) and a dataset without obs", async () => {
  const bad = await cli("obs", ds, "--columns", "nope", "--cache-dir", cache);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /\[NotFound\].*no obs column "nope"; it has "barcode", "cell_type"/);
  const plain = join(dir, "plain");
  const c = await cli("convert", "data/seurat-pbmc-small/pbmc_small_counts.mtx", plain, "--quiet");
  assert.equal(c.code, 0, c.stderr);
  const none = await cli("obs", plain);
  assert.equal(none.code, 1, "the dataset's content, not a usage mistake (exit code 2)");
  assert.match(none.stderr, /\[NotFound\].*has no obs \(has_obs is false in its manifest\)/);
  assert.match(none.stderr, /hint: convert the input again without --no-obs/);
});

test("a pre-0.7 AnnData zarr keeps its cell table: obs lists its barcodes as anndata names them", async () => {
  const out = join(dir, "legacy-zarr");
  const c = await cli("convert", "data/mouse-10k-subset/10x-10k-subset.zarr", out, "--quiet", "--level", "1");
  assert.equal(c.code, 0, c.stderr);
  const info = JSON.parse((await cli("inspect", out, "--json")).stdout);
  assert.equal(info.has_obs, true);
  assert.deepEqual(info.obs_columns, [{ name: "index", kind: "string", arrow_type: "string" }]);
  const r = await cli("obs", out, "--columns", "index", "--cells", "0:3", "--cache-dir", cache);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "index\nAAACCTGAGATAGGAG-1\nAAACCTGAGCGGCTTC-1\nAAACCTGAGGAATCGC-1\n");
});

test("inspect lists the obs columns and kinds; validate checks the shards", async () => {
  const r = await cli("inspect", ds, "--json");
  const info = JSON.parse(r.stdout);
  assert.equal(info.has_obs, true);
  assert.deepEqual(info.obs_columns[1], {
    name: "cell_type",
    kind: "category",
    arrow_type: "int8",
    n_categories: 3,
  });
  const text = await cli("inspect", ds);
  assert.match(text.stdout, /obs +12 columns in 1 shard .*cell_type \(category, 3\)/);
  const v = await cli("validate", ds);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});

test("convert refuses obs columns it cannot store, names them and the flag, and leaves the output untouched", async () => {
  const out = join(dir, "refused");
  const r = await cli("convert", "data/anndata/obs-unsupported.h5ad", out, "--quiet");
  assert.equal(r.code, 1);
  // each column with what it is stored as: h5py's opaque datetime values, an awkward array
  assert.match(
    r.stderr,
    /\[InvalidInput\].*"when" \(HDF5 opaque, 8 bytes: how h5py stores numpy datetime64 and timedelta64\), "nested" \(encoding "awkward-array"\)\. Add --obs-exclude when,nested/,
  );
  assert.equal(existsSync(join(out, "manifest.json")), false);
  // over an existing dataset: the refusal comes before anything is deleted
  const before = readFileSync(join(ds, "manifest.json"));
  const again = await cli("convert", "data/anndata/obs-unsupported.h5ad", ds, "--quiet");
  assert.equal(again.code, 1);
  assert.deepEqual(readFileSync(join(ds, "manifest.json")), before);
  const ok = await cli(
    "convert",
    "data/anndata/obs-unsupported.h5ad",
    out,
    "--quiet",
    "--obs-exclude",
    "when,nested",
  );
  assert.equal(ok.code, 0, ok.stderr);
});

test("convert keeps a zarr input's datetime64 obs columns as ISO-8601 text and says so; a timedelta64 one is refused by name and type", async () => {
  const out = join(dir, "datetimes");
  const refused = await cli("convert", "data/anndata/obs-datetime-v3.zarr", out, "--quiet");
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /\[InvalidInput\].*"gap" \(timedelta64\[s\]\)\. Add --obs-exclude gap to convert without it/,
  );
  assert.doesNotMatch(refused.stderr, /missing/);
  const r = await cli("convert", "data/anndata/obs-datetime-v3.zarr", out, "--quiet", "--obs-exclude", "gap");
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /\n {2}obs: "when" \(datetime64\[ns\]\), "day" \(datetime64\[D\]\) kept as ISO-8601 text, the only way obs can hold them/,
  );
  const json = await cli(
    "convert",
    "data/anndata/obs-datetime-v2.zarr",
    join(dir, "dt2"),
    "--quiet",
    "--obs-exclude",
    "gap",
    "--json",
  );
  assert.deepEqual(JSON.parse(json.stdout).obs_text_from, { when: "datetime64[ns]", day: "datetime64[D]" });
  const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
  assert.deepEqual(manifest.metadata.obs_text_from, { when: "datetime64[ns]", day: "datetime64[D]" });
  const rows = await cli("obs", out, "--columns", "cell,when,day", "--cells", "2:5", "--cache-dir", cache);
  assert.equal(
    rows.stdout,
    "cell\twhen\tday\nc02\t2024-01-03T02:02:02.000000000\t2000-01-01\nc03\t\t2000-01-02\nc04\t1969-12-31T23:59:59.999999999\t2000-01-03\n",
  );
  // an input without such columns says nothing of it
  const plain = await cli("convert", "data/anndata/csr.h5ad", join(dir, "plain-summary"), "--quiet");
  assert.doesNotMatch(plain.stdout, /ISO-8601/);
});

test("convert --obs-exclude refuses a name that is no obs column, names it and the columns there are", async () => {
  const out = join(dir, "typo");
  const r = await cli(
    "convert",
    "data/anndata/csr.h5ad",
    out,
    "--quiet",
    "--obs-exclude",
    "cell_type,celltype",
  );
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /\[InvalidInput\].*obs has no column "celltype" to exclude; its columns are "cell_type", .*"maybe_int".*Correct the name in --obs-exclude/,
  );
  assert.equal(existsSync(join(out, "manifest.json")), false);
});

test("the library's obs refusals are told with --obs-exclude, their details kept; other errors pass as they are", () => {
  const unknown = explainObsError(UnknownObsExclude.of("in.h5ad", ["celltype", "batch "], ["cell_type"]));
  assert.ok(unknown instanceof DeltacellsError);
  assert.equal(
    unknown.message,
    'in.h5ad: obs has no column "celltype", "batch " to exclude; its columns are "cell_type". Correct the names in --obs-exclude (names are case-sensitive), or drop them.',
  );
  assert.deepEqual(
    [unknown._tag, unknown.found, unknown.expected],
    ["InvalidInput", ["celltype", "batch "], { columns: ["cell_type"] }],
  );
  const unsupported = explainObsError(
    UnsupportedObsColumns.of("in.h5ad", ["when"], undefined, ["HDF5 opaque"]),
  );
  assert.ok(unsupported instanceof DeltacellsError);
  assert.equal(
    unsupported.message,
    'in.h5ad: obs has a column of a type deltacells cannot store (only categorical, numeric, boolean and string): "when" (HDF5 opaque). Add --obs-exclude when to convert without it, or convert it (e.g. to strings) in Python first.',
  );
  assert.deepEqual(unsupported.expected, { flag: "--obs-exclude when" });
  // An obs error that only mentions the option's words is no refusal of excluded names.
  const other = new DeltacellsError("x: the obs exclude option", { tag: "InvalidInput", field: "obs" });
  assert.equal(explainObsError(other), other);
});

test("convert --obsm refuses an entry that is not a 2-D dense embedding, and --no-obs writes none", async () => {
  const r = await cli(
    "convert",
    "data/anndata/obsm.h5ad",
    join(dir, "obsm"),
    "--quiet",
    "--obsm",
    "X_umap,sparse_csr",
  );
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /obsm "sparse_csr" is a sparse entry .* only 2-D dense embeddings .*\(choose others with the obsm option, or none\)/,
  );
  assert.match(
    r.stderr,
    /\n {2}hint: choose the obsm entries with --obsm KEYS, or store none with --obsm none\n/,
  );
  const none = await cli("convert", "data/anndata/csr.h5ad", join(dir, "no-obs"), "--quiet", "--no-obs");
  assert.equal(none.code, 0, none.stderr);
  assert.equal(JSON.parse(readFileSync(join(dir, "no-obs", "manifest.json"), "utf8")).has_obs, false);
  assert.equal(existsSync(join(dir, "no-obs", "obs")), false);
});
