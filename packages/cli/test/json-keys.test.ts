/**
 * Every command's `--json` (and `--stats --json`) in one style: snake_case keys, as the formats'
 * own files (manifest.json, the sporadik block) spell theirs. Values that are the data's own
 * names (the manifest's metadata, obs column names) are not keys of the command's.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { cli, tempDir } from "./cli-helpers.js";

/** Keys whose values are maps named by the data, not by the command. */
const DATA_MAPS = new Set(["metadata", "obs_text_from"]);

/** The keys of `value`, at any depth, that are not snake_case, with where they are. */
function notSnake(value: unknown, at = "$"): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => notSnake(v, `${at}[${i}]`));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => [
    ...(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(k) ? [] : [`${at}.${k}`]),
    ...(DATA_MAPS.has(k) ? [] : notSnake(v, `${at}.${k}`)),
  ]);
}

/** `deltacells ARGS... --json`'s answer, checked for exit code 0 and snake_case keys. */
async function json(...args: string[]): Promise<Record<string, unknown>> {
  const r = await cli(...args, "--json");
  assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(notSnake(out), [], `deltacells ${args.join(" ")} --json`);
  return out;
}

test("every command's --json and --stats --json keys are snake_case", async () => {
  const dir = tempDir();
  const ds = join(dir, "ds");
  const small = ["--tile-size", "16", "--level", "1", "--quiet"];
  await json("convert", "data/anndata/csr.h5ad", ds, ...small, "--stats");
  // --stats' key and the dataset statistics' (convert --sporadik writes them) are two keys
  const both = await json(
    "convert",
    "data/anndata/csr.h5ad",
    join(dir, "with"),
    ...small,
    "--sporadik",
    "--stats",
  );
  assert.equal((both.statistics as { path: string }).path, "stats");
  assert.equal(typeof (both.stats as { bytes_written: number }).bytes_written, "number");
  await json("stats", ds, "--quiet", "--stats");
  const inspect = await json("inspect", ds, "--stats");
  assert.equal(typeof (inspect.stats as { bytes_read: number }).bytes_read, "number");
  const validate = await json("validate", ds, "--stats");
  assert.equal(validate.tiles_checked, 4);
  await json("export", ds, join(dir, "x.mtx"), "--quiet", "--stats");
  await json("obs", ds, "--stats");
  await json("obs", ds, "--columns", "all", "--cells", "0:2");
  await json("obs", ds, "--localize", "--cache-dir", join(dir, "cache"));
  const store = join(dir, "s.zarr");
  await json("convert", ds, store, "--format", "sporadik", "--quiet", "--stats");
  await json("inspect", store, "--stats");
  const sporadik = await json("validate", store, "--stats");
  assert.equal(sporadik.layouts_checked, 2);
  const slice = await json("slice", store, "--axis", "0", "3", "--stats");
  assert.equal(
    typeof (slice.reads as { slices: { requests: { get_range: number } } }).slices.requests.get_range,
    "number",
  );

  const inputs = ["data/anndata/csr.h5ad", "data/anndata/obs-encodings.h5ad"];
  await json("convert", ...inputs, join(dir, "atlas"), ...small, "--stats");
  const planned = join(dir, "planned");
  await json("plan", ...inputs, planned, "--tasks", "2", "--tile-size", "16", "--level", "1", "--quiet");
  await json("plan", ...inputs, planned, "--scan", "--task", "0", "--quiet");
  for (const task of ["0", "1"]) await json("convert", "--plan", planned, "--task", task, "--quiet");
  await json("finalize", planned, "--quiet", "--stats");
  await json("append", ds, "data/anndata/csr.h5ad", "--quiet", "--stats");
});
