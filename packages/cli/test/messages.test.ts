/**
 * What the command says when something is wrong: one or two lines, exit code 1, the flag to use; the
 * stack only with --debug. The commands run in this process; a truncated input also as a child
 * process, whose stderr holds whatever HDF5 would print.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { assertShortError, cli, cliPlain, cliWithEnv, deltacellsPlain, tempDir } from "./cli-helpers.js";

const INPUT = "data/anndata/csr.h5ad"; // 57 cells x 41 genes

test("--version prints the package's version", async () => {
  const r = await cliPlain("--version");
  assert.equal(r.code, 0, r.stderr);
  const { version } = JSON.parse(readFileSync("packages/cli/package.json", "utf8"));
  assert.equal(r.stdout, `deltacells ${version}\n`);
});

test("a truncated .h5ad is one line saying it is truncated; --debug adds the stack", async () => {
  const path = join(tempDir(), "cut.h5ad");
  writeFileSync(path, readFileSync(INPUT).subarray(0, 50_000));
  const out = join(tempDir(), "out");
  assertShortError(
    await deltacellsPlain("convert", path, out),
    /\[MalformedInput\]: .*cut\.h5ad: not a readable HDF5 file: the file is truncated \(50,000 of its 92,136 bytes/,
  );
  const debug = await cliPlain("convert", path, out, "--debug");
  assert.equal(debug.code, 1);
  assert.match(debug.stderr, /^\s+at /m);
});

test("the reader's advice names the command's flags: --genome, --raw; --genome is refused where it means nothing", async () => {
  const out = join(tempDir(), "out");
  const genomes = await cliPlain("convert", "data/10x-v2/multiple_genomes.h5", out);
  assertShortError(
    genomes,
    /several genomes \(another_genome, hg19_chr21\).*\n {2}hint: choose one with --genome NAME/,
  );
  const h5ad = await cliPlain("convert", INPUT, out, "--genome", "hg19");
  assertShortError(
    h5ad,
    /genome option applies to Cell Ranger HDF5 files only, not to h5ad.*\n {2}hint: leave out --genome/,
  );
  const scaled = await cliPlain("convert", "data/legacy-anndata/pbmc68k_reduced.h5ad", out);
  // raw.X is log-normalised: no "try --raw", which would be refused in turn; the message says what it holds
  assertShortError(
    scaled,
    /\[NotCounts\].*raw\.X holds a value that is not an integer .*processed values only.*\.\n$/,
  );
  assert.doesNotMatch(scaled.stderr, /hint/);
});

test("no AWS credentials: the storage library names its option, the command adds its flag", async () => {
  const none = { AWS_ACCESS_KEY_ID: "", AWS_SECRET_ACCESS_KEY: "", AWS_SESSION_TOKEN: "", AWS_PROFILE: "" };
  const env = { ...none, AWS_DEFAULT_PROFILE: "", AWS_SHARED_CREDENTIALS_FILE: "", AWS_CONFIG_FILE: "" };
  const r = await cliWithEnv({ ...env, HOME: tempDir() })("inspect", "s3://bucket/ds");
  assertShortError(
    r,
    /\[NoCredentials\]: no AWS credentials for s3:\/\/bucket\/ds: .*\(option signRequests: false\)\.\n {2}hint: for a public bucket, read without signing: --no-sign-request\n$/,
  );
});

test("inspect and export of a path where nothing is say so, rather than suggesting a conversion", async () => {
  const nowhere = join(tempDir(), "nothing-here");
  for (const args of [
    ["inspect", nowhere],
    ["validate", nowhere],
    ["export", nowhere, join(tempDir(), "x.mtx")],
  ]) {
    const r = await cliPlain(...args);
    assertShortError(r, /\[NotFound\]: .*nothing-here: nothing is there/);
    assert.doesNotMatch(r.stderr, /convert/);
  }
});

test("usage messages: a reversed --cells says reversed; --tile-size has a real bound; one tile is one tile", async () => {
  const ds = join(tempDir(), "ds");
  const conv = await cli("convert", INPUT, ds, "--tile-size", "64", "--level", "3");
  assert.equal(conv.code, 0, conv.stderr);
  assert.match(conv.stdout, /800 nonzeros in 1 tile\n/);
  const v = await cli("validate", ds);
  assert.match(v.stdout, /valid \(1 tile, /);

  const reversed = await cliPlain("export", ds, join(tempDir(), "x.mtx"), "--cells", "50:10");
  assert.equal(reversed.code, 2);
  assert.match(reversed.stderr, /--cells 50:10 is reversed/);

  const zero = await cliPlain("convert", INPUT, join(tempDir(), "o"), "--tile-size", "0");
  assert.equal(zero.code, 2);
  assert.match(zero.stderr, /--tile-size must be an integer in 1 \.\. 1,048,576, got "0"/);
});

test("convert into a folder that cannot be created (/proc/x) fails in one line instead of spinning", async (t) => {
  if (process.platform !== "linux") return t.skip("needs /proc");
  assertShortError(await cliPlain("convert", INPUT, "/proc/deltacells-x"), /\/proc\/deltacells-x.*ENOENT/);
});

test("inspect says how many cells the tiles hold, not the tile size a small dataset never fills", async () => {
  const one = join(tempDir(), "one");
  assert.equal((await cli("convert", INPUT, one, "--tile-size", "4096", "--level", "1", "--quiet")).code, 0);
  assert.match((await cli("inspect", one)).stdout, /^ {2}tiles {8}1 tile of 57 cells; /m);
  const four = join(tempDir(), "four");
  assert.equal((await cli("convert", INPUT, four, "--tile-size", "16", "--level", "1", "--quiet")).code, 0);
  assert.match((await cli("inspect", four)).stdout, /^ {2}tiles {8}4 tiles of 16 cells, the last of 9; /m);
  const even = join(tempDir(), "even");
  const pbmc = "data/pbmc68k-counts/pbmc68k_counts.h5ad"; // 700 cells
  assert.equal((await cli("convert", pbmc, even, "--tile-size", "350", "--level", "1", "--quiet")).code, 0);
  assert.match((await cli("inspect", even)).stdout, /^ {2}tiles {8}2 tiles of 350 cells; /m);
});
