/**
 * Each epoch reaches Python worker processes started before it (conformance/stream_epochs.py): the
 * example module's shared epoch, read by persistent workers through multiprocessing (spawn and
 * fork), and by a torch `DataLoader(..., persistent_workers=True)` where torch is importable
 * (conformance/.venv has no torch: that test is skipped, saying so; DELTACELLS_TORCH_PYTHON names
 * another interpreter, with torch, pyarrow, numpy and scipy, to run it with).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, test } from "node:test";
import { COMMAND_LINE, deltacells, PYTHON, run, tempDir } from "./cli-helpers.js";

const dir = tempDir();
const dataset = join(dir, "ds");

before(async () => {
  const r = await deltacells(
    "convert",
    "data/anndata/csr.h5ad",
    dataset,
    "--tile-size",
    "16",
    "--level",
    "3",
    "--quiet",
  );
  assert.equal(r.code, 0, r.stderr);
});

/** The last line of stream_epochs.py's output, parsed. */
async function check(python: string, part: "multiprocessing" | "torch") {
  const r = await run(python, ["conformance/stream_epochs.py", dataset, part], { DELTACELLS: COMMAND_LINE });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as {
    ok?: boolean;
    problems?: string[];
    skipped?: string;
  };
}

test("set_epoch reaches worker processes started before it (spawn and fork): each epoch as a fresh stream of it", async () => {
  const report = await check(PYTHON, "multiprocessing");
  assert.deepEqual(report.problems, []);
  assert.equal(report.ok, true);
});

test("a torch DataLoader with persistent_workers=True yields each epoch set with set_epoch, not epoch 0 again", async (t) => {
  const report = await check(process.env.DELTACELLS_TORCH_PYTHON || PYTHON, "torch");
  if (report.skipped !== undefined) {
    t.skip(report.skipped);
    return;
  }
  assert.deepEqual(report.problems, []);
  assert.equal(report.ok, true);
});
