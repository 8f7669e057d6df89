/**
 * `export` writes all or nothing: a failed export never replaces an existing file, and says why in a
 * line or two. The commands run in this process, but on a terminal and piped, where the process matters.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { writeMatrixMarket } from "@deltacells/anndata/node";
import type { ExportPlan } from "../src/export/rows.js";
import { assertShortError, COMMAND_LINE, cli, cliPlain, deltacells, REPO, tempDir } from "./cli-helpers.js";

let dir = "";
let good = "";
let corrupt = "";
let missing = "";

before(async () => {
  dir = tempDir();
  good = join(dir, "good");
  const r = await cli("convert", "data/anndata/csr.h5ad", good, "--tile-size", "16", "--level", "3");
  assert.equal(r.code, 0, r.stderr);
  corrupt = join(dir, "corrupt");
  cpSync(good, corrupt, { recursive: true });
  const tile = join(corrupt, "tiles", "tile_000002.dct");
  const bytes = readFileSync(tile);
  bytes[bytes.length - 10]! ^= 0xff; // inside a zstd frame: the CRC no longer matches
  writeFileSync(tile, bytes);
  missing = join(dir, "missing");
  cpSync(good, missing, { recursive: true });
  rmSync(join(missing, "tiles", "tile_000002.dct"));
});

for (const ext of ["mtx", "mtx.gz", "h5ad"]) {
  test(`a failed export to .${ext} leaves the existing file as it was, and no temporary file`, async () => {
    for (const [source, why] of [
      [corrupt, /CorruptTile/],
      [missing, /tile_000002/],
      [join(dir, "no-such-dataset"), /nothing is there/],
    ] as const) {
      const out = join(tempDir(), `part.${ext}`);
      writeFileSync(out, "a good file from before");
      assertShortError(await cliPlain("export", source, out), why);
      assert.equal(readFileSync(out, "utf8"), "a good file from before", `${source} -> ${out}`);
      assert.deepEqual(readdirSync(join(out, "..")), [`part.${ext}`]);
    }
  });
}

test("export into a missing folder says so in one line, for Matrix Market and .h5ad alike", async () => {
  for (const name of ["part.mtx", "part.h5ad"]) {
    const out = join(dir, "no", "such", "folder", name);
    assertShortError(await cliPlain("export", good, out), /the folder .*no\/such\/folder does not exist/);
  }
});

test("export to an s3:// or https:// URL is a usage error, not a local folder named after the scheme", async () => {
  for (const out of ["s3://bucket/part.h5ad", "https://example.org/part.mtx"]) {
    const r = await cliPlain("export", good, out);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /export writes a local file; give a path \(or a file:\/\/ URL\)/);
    assert.ok(!existsSync(join(REPO, out.split("/")[0]!)), "nothing was made in the working folder");
  }
  // A file:// URL is a local path.
  const out = join(tempDir(), "part.mtx");
  const r = await cliPlain("export", good, pathToFileURL(out).href);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(existsSync(out));
});

test("a Matrix Market file failing while the rows are still read fails the export, not the process", async () => {
  // The first rows take some turns of the event loop (as decoding a tile does): the file's failure
  // (here its open) comes meanwhile, long before the export awaits the file's closing. Then more
  // than a write's worth of rows: the failed file never drains.
  const n = 150_000;
  const plan: ExportPlan = {
    nCells: n,
    nGenes: 2,
    nnz: n,
    async *parts() {
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      const indptr = Float64Array.from({ length: n + 1 }, (_, i) => i);
      yield { rowOffset: 0, nCells: n, indptr, indices: new Int32Array(n), data: new Int32Array(n).fill(3) };
    },
  };
  for (const gzip of [false, true]) {
    const path = join(dir, "no-such-folder", gzip ? "part.mtx.gz" : "part.mtx");
    await assert.rejects(writeMatrixMarket(path, plan, { comment: " test", gzip }), { code: "ENOENT" });
  }
});

test("export into a folder it may not write (sysfs, even for root) says so in one line", async (t) => {
  if (process.platform !== "linux") return t.skip("needs /sys");
  assertShortError(await cliPlain("export", good, "/sys/part.mtx"), /permission denied in \/sys/);
});

test("export into a folder path is refused, and a successful export replaces the file", async () => {
  const folder = tempDir();
  assertShortError(await cliPlain("export", good, folder, "--format", "mtx"), /it is a folder/);
  const out = join(folder, "part.mtx");
  writeFileSync(out, "old");
  const r = await cli("export", good, out, "--cells", "0:10");
  assert.equal(r.code, 0, r.stderr);
  assert.match(readFileSync(out, "utf8"), /^%%MatrixMarket/);
  assert.deepEqual(readdirSync(folder), ["part.mtx"]);
});

test("export on a terminal draws a progress bar that reaches every cell; piped, it draws none", async () => {
  const out = join(tempDir(), "part.mtx");
  // `script` (util-linux) gives the command a pseudo-terminal, as a user's shell would.
  const onTerminal = spawnSync("script", ["-qec", `${COMMAND_LINE} export ${good} ${out}`, "/dev/null"], {
    encoding: "utf8",
  });
  assert.equal(onTerminal.status, 0, onTerminal.stdout);
  assert.match(onTerminal.stdout, /export +\[#+\] 100% 57\/57 cells/);
  const piped = await deltacells("export", good, out);
  assert.equal(piped.code, 0, piped.stderr);
  assert.doesNotMatch(piped.stderr, /\[#/);
});
