/**
 * The commands together, run in this process (cli-helpers' `cli`); a usage error and an error
 * exit also through the real command (a child process), where main.ts sets the exit code.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { cli, deltacells, tempDir } from "./cli-helpers.js";

const INPUT = "data/anndata/csr.h5ad";

for (const command of ["convert", "inspect", "validate", "export", "stream"]) {
  test(`${command} --help prints its usage and exits 0`, async () => {
    const r = await cli(command, "--help");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^usage: deltacells ${command} `));
  });
}

test("deltacells without a command prints the command list and exits 2", async () => {
  const r = await cli();
  assert.equal(r.code, 2);
  assert.match(r.stdout, /convert .*\n.*inspect/s);
});

test("an unknown option is a usage error on stderr with exit code 2", async () => {
  const r = await deltacells("inspect", "somewhere", "--frobnicate");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--frobnicate/);
  assert.match(r.stderr, /deltacells inspect --help/);
  assert.equal(r.stdout, "");
});

test("a bad --tile-size is refused before anything is read", async () => {
  const r = await cli("convert", INPUT, join(tempDir(), "out"), "--tile-size", "0");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--tile-size must be an integer/);
});

test("convert, inspect, validate and export work together, with --json and --stats", async () => {
  const dir = tempDir();
  const out = join(dir, "ds");
  const conv = await cli(
    "convert",
    INPUT,
    out,
    "--tile-size",
    "16",
    "--chunks",
    "2",
    "--level",
    "5",
    "--json",
    "--stats",
  );
  assert.equal(conv.code, 0, conv.stderr);
  const summary = JSON.parse(conv.stdout);
  assert.equal(summary.n_cells, 57);
  assert.equal(summary.n_tiles, 4);
  assert.ok(summary.stats.requests.set >= 8, "tiles, gene files and manifest were written through the store");

  const insp = await cli("inspect", out, "--json", "--stats");
  assert.equal(insp.code, 0, insp.stderr);
  const info = JSON.parse(insp.stdout);
  assert.equal(info.n_tiles, 4);
  assert.equal(info.tile_size, 16);
  assert.equal(info.n_chunks, 2);
  assert.equal(info.zstd_level, 5);
  assert.equal(info.nnz, summary.nnz);
  assert.deepEqual(
    info.stats.requests.get,
    3,
    "inspect reads the manifest, var_names.txt and obs/schema.json only",
  );
  // --stats also says what decodes tiles here (the native kernel was built for the tests).
  assert.equal(info.codec.kernel, process.env.DELTACELLS_NATIVE === "0" ? "typescript" : "native");
  assert.equal(info.codec.zstd, "zstd-napi");
  assert.equal((await cli("inspect", out, "--json")).stdout.includes('"codec"'), false);

  const human = await cli("inspect", out, "--stats");
  assert.match(human.stdout, /57 cells x 41 genes/);
  assert.match(human.stderr, /^stats: 3 requests \(get 3\)/m);
  assert.match(
    human.stderr,
    /^stats: codec: (native kernel \([a-z0-9+]+\)|typescript kernel .*), zstd: zstd-napi/m,
  );

  const val = await cli("validate", out, "--json");
  assert.equal(val.code, 0, val.stdout + val.stderr);
  assert.equal(JSON.parse(val.stdout).tiles_checked, 4);

  const mtx = join(dir, "part.mtx");
  const exp = await cli("export", out, mtx, "--cells", "10:40");
  assert.equal(exp.code, 0, exp.stderr);
  const lines = readFileSync(mtx, "utf8").split("\n");
  assert.equal(lines[0], "%%MatrixMarket matrix coordinate integer general");
  assert.match(lines[2]!, /^30 41 \d+$/);
  // The input's gene order by default: nothing to say. Matrix Market names no genes: columns in
  // the dataset's order are said to be so, with the file that names them.
  assert.doesNotMatch(exp.stdout, /dataset's order/);
  assert.equal(
    JSON.parse((await cli("export", out, mtx, "--cells", "10:40", "--json")).stdout).gene_order,
    "source",
  );
  const datasetOrder = await cli("export", out, mtx, "--cells", "10:40", "--dataset-gene-order");
  assert.equal(datasetOrder.code, 0, datasetOrder.stderr);
  assert.match(
    datasetOrder.stdout,
    /genes in the dataset's order \(by decreasing total counts\), not the converted input's; the file names no genes: .*var_names\.txt names these columns/,
  );
});

test("a file given where a dataset is read (the .h5ad itself) is refused as a file, with the conversion to run", async () => {
  for (const cmd of ["inspect", "validate", "export", "obs", "stream"]) {
    const args = cmd === "export" ? [INPUT, join(tempDir(), "x.mtx")] : [INPUT];
    // stream writes to the process's stdout: it runs as a child.
    const r = cmd === "stream" ? await deltacells(cmd, ...args) : await cli(cmd, ...args);
    assert.equal(r.code, 1, `${cmd}: ${r.stderr}`);
    assert.match(
      r.stderr,
      /\[NotAStore\].* is a file, not a dataset: .*Convert it first: deltacells convert /,
      cmd,
    );
    assert.doesNotMatch(r.stderr.split("\n")[0]!, /convert it again/, cmd);
  }
});

test("validate exits 1 and names the tile when a tile is corrupt", async () => {
  const out = join(tempDir(), "ds");
  assert.equal((await cli("convert", INPUT, out, "--tile-size", "16", "--level", "3")).code, 0);
  const path = join(out, "tiles/tile_000001.dct");
  const bytes = readFileSync(path);
  bytes[bytes.length - 3]! ^= 0xff;
  writeFileSync(path, bytes);
  const r = await cli("validate", out);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /INVALID, 1 problem/);
  assert.match(r.stdout, /tiles\/tile_000001\.dct: \[CorruptTile\]/);
});

test("a folder without a manifest is refused with an error on stderr and exit code 1", async () => {
  const dir = tempDir();
  writeFileSync(join(dir, "var_names.txt"), "A\n"); // what a conversion killed early leaves
  const r = await deltacells("inspect", dir);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /\[IncompleteDataset\].*manifest\.json/);
  assert.equal(r.stdout, "");
});

test("export refuses an output whose format it cannot tell", async () => {
  const r = await cli("export", tempDir(), "out.csv");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /\.mtx, \*\.mtx\.gz or \*\.h5ad/);
});

test("an input that does not hold raw counts is refused with the reader's advice and exit code 1", async () => {
  const r = await cli("convert", "data/legacy-anndata/pbmc68k_reduced.h5ad", join(tempDir(), "out"));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^deltacells convert: error \[\w+\]: .*not a matrix of raw counts.*cell 0/m);
});
