/**
 * Numbers for people in one style across the commands: counts with thousands separators
 * ("1,107"), byte sizes in binary units ("5.67 KiB"), as `--stats` writes them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { cli, tempDir } from "./cli-helpers.js";

const INPUT = "data/10x-v3-chr21/filtered_feature_bc_matrix.h5"; // 1,107 cells

/**
 * The figures of `text` written without separators or units: a run of four or more digits
 * outside paths (a token with a slash), brackets (a shape, `[1107, 507]`, as numpy prints it)
 * and JSON (the manifest's metadata, as stored); positions are not counts, and stay as the command
 * line takes them: a range (`0:1107`), a slice's `POSITION=VALUE`.
 */
function bareFigures(text: string): string[] {
  return text
    .replace(/\{.*\}|\[[^\]]*\]/g, "")
    .split(/\s+/)
    .filter((token) => !/[/=]/.test(token) && !/^\d*:\d*$/.test(token) && /(^|[^\d.,])\d{4,}/.test(token));
}

/** `deltacells ARGS... --stats` with every figure of its output in the one style. */
async function run(...args: string[]): Promise<string> {
  const r = await cli(...args, "--stats");
  assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
  const text = r.stdout + r.stderr;
  assert.deepEqual(bareFigures(text), [], `deltacells ${args.join(" ")} --stats:\n${text}`);
  return text;
}

test("every command writes counts with thousands separators and byte sizes in units", async () => {
  const dir = tempDir();
  const ds = join(dir, "ds");
  const store = join(dir, "s.zarr");
  assert.match(await run("convert", INPUT, ds, "--quiet", "--tile-size", "256"), /1,107 cells x/);
  await run("inspect", ds);
  assert.match(await run("validate", ds, "--quiet"), /1,107 cells, [\d,]+ nonzeros, [\d.]+ KiB of tiles/);
  const exported = await run("export", ds, join(dir, "x.mtx"), "--quiet");
  assert.match(exported, /\(1,107 cells x 507 genes, [\d,]+ nonzeros\)/);
  await run("obs", ds);
  await run("convert", ds, store, "--format", "sporadik", "--quiet");
  await run("inspect", store);
  await run("validate", store);
  const slice = await run("slice", store, "--axis", "1", "0:300");
  assert.match(slice, /^stats: describe \d+ requests \(.*\), [\d.]+ (B|KiB), 2 waves; slices/m);
  assert.doesNotMatch(slice, /\d bytes/, "no bare byte count beside the formatted ones");
});
