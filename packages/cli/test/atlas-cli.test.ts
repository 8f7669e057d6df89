/**
 * The atlas commands on real inputs from data/: `convert` of several inputs, `plan` (with
 * `--scan`/`--merge`), `convert --plan --task` with the schedulers' task indices, and `finalize`,
 * their byte-for-byte agreement, and their refusals.
 */
import assert from "node:assert/strict";
import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import {
  assertSameFiles,
  assertShortError,
  cli,
  cliPlain,
  cliWithEnv,
  deltacells,
  filesUnder,
  REPO,
  tempDir,
} from "./cli-helpers.js";

const INPUTS = [
  "data/pbmc68k-counts/pbmc68k_counts.h5ad",
  "data/10x-v3-chr21/filtered_feature_bc_matrix.h5",
  "data/anndata/obs-encodings.h5ad",
  "data/anndata/csr-v3.zarr",
];
const SMALL = ["--tile-size", "64", "--obs-tiles-per-file", "2", "--level", "3"];

let reference: string | undefined;
/** The one-process conversion of INPUTS (made once). */
async function once(): Promise<string> {
  if (reference) return reference;
  const out = join(tempDir(), "once");
  const r = await cli("convert", ...INPUTS, out, ...SMALL, "--quiet");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /converted 4 inputs -> /);
  reference = out;
  return out;
}

test("four inputs of three kinds convert into one valid dataset that names each cell's input", async () => {
  const out = await once();
  const v = await cli("validate", out);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
  assert.deepEqual(
    manifest.metadata.inputs.map((i: { name: string; cells: number }) => [i.name, i.cells]),
    [
      ["pbmc68k_counts", 700],
      ["filtered_feature_bc_matrix", 1107],
      ["obs-encodings", 40],
      ["csr-v3", 57],
    ],
  );
  const obs = await cli("obs", out, "--columns", "source", "--cells", "699:701", "--json");
  assert.equal(obs.code, 0, obs.stderr);
  assert.deepEqual(
    JSON.parse(obs.stdout).rows.map((r: unknown[]) => r[0]),
    ["pbmc68k_counts", "filtered_feature_bc_matrix"],
  );
});

test("plan + 3 tasks (their index from Slurm, AWS Batch and a Kubernetes Indexed Job) + finalize equals the one-process conversion byte for byte", async () => {
  const out = join(tempDir(), "steps");
  const p = await cli("plan", ...INPUTS, out, "--tasks", "3", ...SMALL);
  assert.equal(p.code, 0, p.stderr);
  assert.match(
    p.stdout,
    /next: run the 3 tasks, deltacells convert --plan .* --task I \(I = 0 \.\. 2\), then deltacells finalize/,
  );
  for (const [name, t] of [
    ["JOB_COMPLETION_INDEX", "2"],
    ["SLURM_ARRAY_TASK_ID", "0"],
    ["AWS_BATCH_JOB_ARRAY_INDEX", "1"],
  ] as const) {
    const r = await cliWithEnv({ [name]: t })("convert", "--plan", out);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^task ${t} of 3: tiles`));
  }
  const f = await cli("finalize", out);
  assert.equal(f.code, 0, f.stderr);
  assert.match(f.stdout, /finalized .*: 3 tasks checked/);
  assertSameFiles(await once(), out);
});

test("plan --scan per input then plan --merge makes the same plan, and --task wins over the scheduler's index", async () => {
  const out = join(tempDir(), "scanned");
  for (let i = 0; i < INPUTS.length; i++) {
    const r = await cliWithEnv({ SLURM_ARRAY_TASK_ID: "9" })(
      "plan",
      "--scan",
      ...INPUTS,
      out,
      "--task",
      String(i),
      ...SMALL,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^scanned input ${i} of 4: `));
  }
  const m = await cli("plan", "--merge", ...INPUTS, out, "--tasks", "2", ...SMALL);
  assert.equal(m.code, 0, m.stderr);
  for (const t of ["0", "1"]) assert.equal((await cli("convert", "--plan", out, "--task", t)).code, 0);
  assert.equal((await cli("finalize", out)).code, 0);
  assertSameFiles(await once(), out);
});

test("finalize refuses while a task is missing, naming it and the command that runs it; a merge with an input not scanned is refused the same way", async () => {
  const out = join(tempDir(), "missing");
  assert.equal((await cli("plan", ...INPUTS, out, "--tasks", "3", ...SMALL)).code, 0);
  assert.equal((await cli("convert", "--plan", out, "--task", "1")).code, 0);
  const f = await cliPlain("finalize", out);
  assertShortError(
    f,
    /2 of the 3 tasks are not done, so the atlas was not finalized \(nothing was written\): task 0: no completion record \(not run, or not finished\); task 2: .*Run them again: deltacells convert --plan .* --task I for I in 0 2 \(a job array: --array=0,2\)/,
  );
  assert.ok(!filesUnder(out).has("manifest.json"));
  const scans = join(tempDir(), "scans");
  assert.equal((await cli("plan", "--scan", ...INPUTS, scans, "--task", "2")).code, 0);
  const m = await cliPlain("plan", "--merge", ...INPUTS, scans);
  assertShortError(
    m,
    /3 of the 4 inputs have no scan record of this build, so no plan was made: input 0 is not scanned; .*--array=0,1,3/,
  );
  // scanned with other options: another build
  assert.equal(
    (await cli("plan", "--scan", ...INPUTS, scans, "--task", "0", "--max-categories", "5")).code,
    0,
  );
  assertShortError(
    await cliPlain("plan", "--merge", ...INPUTS, scans),
    /input 0 was scanned with other inputs or options; input 1 is not scanned/,
  );
});

test("a task without an index in a plan of several is a usage mistake naming where the index comes from", async () => {
  const out = join(tempDir(), "index");
  assert.equal((await cli("plan", ...INPUTS.slice(0, 2), out, "--tasks", "2", ...SMALL)).code, 0);
  const r = await cliPlain("convert", "--plan", out);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /which task of the plan\? pass --task I \(0 \.\. 1\), or run this as a job array's task \(SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX, JOB_COMPLETION_INDEX/,
  );
  assertShortError(
    await cliPlain("convert", "--plan", out, "--task", "5"),
    /task 5 is not in the plan of .*, which has 2 tasks \(0 \.\. 1\)/,
  );
});

test("a task refuses an input that changed since the plan, and a plan refuses an output holding a dataset", async () => {
  const dir = tempDir();
  const copy = join(dir, "copy.h5ad");
  writeFileSync(copy, readFileSync(join(REPO, INPUTS[2]!)));
  const out = join(dir, "changed");
  assert.equal((await cli("plan", INPUTS[0]!, copy, out, ...SMALL)).code, 0);
  utimesSync(copy, new Date(), new Date(Date.now() + 5000));
  assertShortError(
    await cliPlain("convert", "--plan", out),
    /copy\.h5ad: it changed since the plan was made .*make the plan again/,
  );
  assertShortError(
    await cliPlain("plan", ...INPUTS.slice(0, 2), await once()),
    /already holds a complete deltacells dataset\. Nothing was written: add cells to it with deltacells append/,
  );
});

test("--inputs LIST reads paths relative to the list, with optional names after a tab", async () => {
  const dir = tempDir();
  const list = join(dir, "inputs.txt");
  writeFileSync(
    list,
    `# an atlas\n${join(REPO, INPUTS[0]!)}\tpbmc\n\n${relative(dir, join(REPO, INPUTS[2]!))}\n`,
  );
  const out = join(dir, "listed");
  const r = await cli("convert", "--inputs", list, out, "--quiet", "--json");
  assert.equal(r.code, 0, r.stderr);
  const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
  assert.deepEqual(
    manifest.metadata.inputs.map((i: { name: string }) => i.name),
    ["pbmc", "obs-encodings"],
  );
  assert.equal(JSON.parse(r.stdout).n_inputs, 2);
});

test("two copies of one task running at once as processes are harmless: finalize passes and the bytes are the one-process conversion's", async () => {
  const out = join(tempDir(), "twice");
  assert.equal((await cli("plan", ...INPUTS, out, "--tasks", "2", ...SMALL)).code, 0);
  assert.equal((await cli("convert", "--plan", out, "--task", "0")).code, 0);
  const [a, b] = await Promise.all([
    deltacells("convert", "--plan", out, "--task", "1", "--threads", "1"),
    deltacells("convert", "--plan", out, "--task", "1", "--threads", "1"),
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal((await cli("finalize", out)).code, 0);
  assertSameFiles(await once(), out);
});

test("append adds the cells of a new input: the result equals a fresh conversion of all three with the dataset's gene order (--gene-order), byte for byte", async () => {
  const dir = tempDir();
  const first = [INPUTS[0]!, "data/anndata/csr.h5ad"];
  const ds = join(dir, "grown");
  assert.equal((await cli("convert", ...first, ds, ...SMALL, "--quiet")).code, 0);
  const order = join(dir, "order.txt");
  writeFileSync(order, readFileSync(join(ds, "var_names.txt")));
  const r = await cli("append", ds, "data/anndata/dense.h5ad");
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /^appended 1 input \(57 cells\) to .*\n {2}now 814 cells x \d+ genes in 13 tiles; wrote 2 tiles, \d+ obs shards? and the manifest/,
  );
  const fresh = join(dir, "fresh");
  assert.equal(
    (
      await cli(
        "convert",
        ...first,
        "data/anndata/dense.h5ad",
        fresh,
        ...SMALL,
        "--gene-order",
        order,
        "--quiet",
      )
    ).code,
    0,
  );
  assertSameFiles(fresh, ds);
  const v = await cli("validate", ds);
  assert.equal(v.code, 0, v.stdout);
  assertShortError(
    await cliPlain("append", ds, INPUTS[2]!),
    /obs-encodings\.h5ad: 12 of its 12 genes are not in the genes of .*A dataset's genes are fixed: drop them with --drop-unlisted-genes/,
  );
});

test("the same file appended again is named csr-2, then csr-3; a list's unnamed line is named from its file, its named line as given", async () => {
  const dir = tempDir();
  const ds = join(dir, "again");
  const small = ["--quiet", "--threads", "1"];
  assert.equal((await cli("convert", "data/anndata/csr.h5ad", ds, "--tile-size", "64", ...small)).code, 0);
  for (const _ of [2, 3]) {
    const r = await cli("append", ds, "data/anndata/csr.h5ad", ...small);
    assert.equal(r.code, 0, r.stderr);
  }
  const list = join(dir, "more.txt");
  writeFileSync(
    list,
    `${join(REPO, "data/anndata/dense.h5ad")}\n${join(REPO, "data/anndata/csr.h5ad")}\tlate\n`,
  );
  const r = await cli("append", ds, "--inputs", list, ...small);
  assert.equal(r.code, 0, r.stderr);
  const manifest = JSON.parse(readFileSync(join(ds, "manifest.json"), "utf8"));
  assert.deepEqual(
    manifest.metadata.inputs.map((i: { name: string }) => i.name),
    ["csr", "csr-2", "csr-3", "dense", "late"],
  );
  assertShortError(
    await cliPlain("append", ds, "data/anndata/csr.h5ad", "--source-names", "csr-2"),
    /new input 0 \(.*csr\.h5ad\) would be named "csr-2" in the source column, as an input of the dataset is; name it otherwise with --source-names/,
  );
});

test("several inputs into an OUTPUT holding a dataset are refused without --overwrite and replace it with it; an input as OUTPUT is refused", async () => {
  const out = join(tempDir(), "replaced");
  assert.equal((await cli("convert", INPUTS[2]!, out, "--quiet")).code, 0);
  assertShortError(
    await cliPlain("convert", ...INPUTS.slice(0, 2), out),
    /already holds a deltacells dataset .*--overwrite/,
  );
  const r = await cli("convert", ...INPUTS.slice(0, 2), out, "--overwrite", ...SMALL, "--quiet");
  assert.equal(r.code, 0, r.stderr);
  const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
  assert.equal(manifest.metadata.inputs.length, 2);
  assert.ok(!filesUnder(out).has(".deltacells-lock"), "the lock is released");
  assert.equal((await cli("validate", out)).code, 0);
  assertShortError(
    await cliPlain("convert", INPUTS[2]!, INPUTS[3]!, INPUTS[3]!),
    /is one of the inputs|is the input itself/,
  );
});
