/**
 * `deltacells stream` read by pyarrow (conformance/stream_check.py): every row equal to the row
 * anndata reads from the converted .h5ad (scipy), the columns the input's var_names (the dataset's
 * gene_order.npy undone), exactly-once coverage over ranks with the reported padding, obs equal
 * to the input's, --genes --dense rows, and the Python example (examples/python) on top: scipy
 * batches, leaving early, errors. Then the same stream from S3 (moto_server).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { before, test } from "node:test";
import { RecordBatchReader } from "apache-arrow";
import { COMMAND_ARGS, COMMAND_LINE, deltacells, PYTHON, REPO, run, tempDir } from "./cli-helpers.js";
import { motoBucket } from "./s3-helpers.js";

const dir = tempDir();

const CASES = [
  {
    input: "data/anndata/csr.h5ad",
    convert: ["--tile-size", "16"],
    check: ["--obs", "cell_type,maybe_int,maybe_bool,score", "--world-sizes", "1,4", "--batch-size", "5"],
  },
  {
    input: "data/pbmc68k-counts/pbmc68k_counts.h5ad",
    convert: ["--tile-size", "64"],
    check: ["--obs", "louvain,percent_mito", "--world-sizes", "3", "--batch-size", "64"],
  },
];

before(async () => {
  for (const [i, c] of CASES.entries()) {
    const r = await deltacells(
      "convert",
      c.input,
      join(dir, `ds${i}`),
      ...c.convert,
      "--level",
      "3",
      "--quiet",
    );
    assert.equal(r.code, 0, r.stderr);
  }
});

for (const [i, c] of CASES.entries()) {
  test(`pyarrow reads the stream of ${c.input} equal to the input's rows, obs and columns`, async () => {
    const r = await run(PYTHON, ["conformance/stream_check.py", c.input, join(dir, `ds${i}`), ...c.check], {
      DELTACELLS: COMMAND_LINE,
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const report = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
    assert.deepEqual(report.problems, []);
    assert.equal(report.ok, true);
  });
}

/** The record batches `deltacells stream ARGS` writes, read with apache-arrow. */
function streamBatches(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stderr: string; cells: number[][]; indices: number[][] }>((ok, fail) => {
    const child = spawn(process.execPath, [...COMMAND_ARGS, "stream", ...args], {
      cwd: REPO,
      env: { ...process.env, ...env },
    });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", fail);
    child.on("close", (code) => {
      const batches =
        code === 0 ? [...RecordBatchReader.from(Buffer.concat(out))].filter((b) => b.numRows > 0) : [];
      ok({
        code: code ?? -1,
        stderr,
        cells: batches.map((b) => Array.from(b.getChild("cell")!.toArray() as BigInt64Array, Number)),
        indices: batches.map((b) =>
          Array.from(b.getChild("indices")!.data[0]!.children[0]!.values as Int32Array),
        ),
      });
    });
  });
}

const s3 = motoBucket("stream");

test("the stream of a dataset on S3 equals the stream of its folder, and --stats counts one GET per tile", async () => {
  const local = join(dir, "ds0");
  await s3.upload(local, "ds0");
  const args = ["--batch-size", "10", "--seed", "9", "--rank", "1", "--world-size", "2"];
  const a = await streamBatches([local, ...args]);
  const b = await streamBatches(["s3://stream/ds0", ...args, "--stats"], s3.env());
  assert.equal(b.code, 0, b.stderr);
  assert.deepEqual(b.cells, a.cells);
  assert.deepEqual(b.indices, a.indices);
  const gets = /\bget (\d+)/.exec(b.stderr);
  assert.ok(gets, b.stderr);
  // rank 1 of 2 reads its share (2 or 3 of the 4 tiles, not all), the manifest and the two gene files
  assert.ok(Number(gets[1]) <= 3 + 3, `GETs: ${b.stderr}`);
});
