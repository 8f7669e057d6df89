/**
 * `convert --format sporadik --checksums`, and what `slice` does with a damaged store: refuses it
 * naming the chunk (exit 1), or reads a missing data chunk as zeros when told to.
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cli, REPO, tempDir } from "./cli-helpers.js";

const H5AD = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
let dir: string;

before(() => {
  dir = tempDir();
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

function zstd(store: string, array: string): unknown {
  return JSON.parse(readFileSync(join(store, "layouts/axis1", array, "zarr.json"), "utf8")).codecs[1]
    .configuration;
}

test("convert --format sporadik writes Python sporadik's default bytes, and zstd's content checksum with --checksums", async () => {
  const plain = join(dir, "plain.zarr");
  const checked = join(dir, "checked.zarr");
  assert.equal((await cli("convert", H5AD, plain, "--format", "sporadik", "--quiet")).code, 0);
  const r = await cli("convert", H5AD, checked, "--format", "sporadik", "--checksums", "--quiet", "--json");
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { checksums: boolean }).checksums, true);
  assert.deepEqual(zstd(plain, "data"), { level: 0, checksum: false });
  assert.deepEqual(zstd(checked, "data"), { level: 0, checksum: true });
  const inspected = async (store: string) =>
    (JSON.parse((await cli("inspect", store, "--json")).stdout) as { layouts: { checksums: boolean }[] })
      .layouts;
  assert.deepEqual(
    (await inspected(plain)).map((l) => l.checksums),
    [false, false],
  );
  assert.deepEqual(
    (await inspected(checked)).map((l) => l.checksums),
    [true, true],
  );
  // The same numbers either way.
  const a = await cli("slice", plain, "--axis", "1", "0:50", "--json");
  const b = await cli("slice", checked, "--axis", "1", "0:50", "--json");
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(JSON.parse(b.stdout).slices, JSON.parse(a.stdout).slices);
});

test("--checksums with --byte-addressable, both checksum flags, or without sporadik output are usage errors", async () => {
  const out = join(dir, "never.zarr");
  for (const [args, says] of [
    [
      ["--format", "sporadik", "--checksums", "--byte-addressable"],
      /cannot be combined: a checksum covers a whole object/,
    ],
    [["--format", "sporadik", "--checksums", "--no-checksums"], /contradict each other/],
    [["--checksums"], /--checksums applies to sporadik output only/],
  ] as const) {
    const r = await cli("convert", H5AD, out, ...args);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, says);
  }
});

test("slice refuses a store whose data chunk is missing, naming it; --fill-missing-data reads it as zeros", async () => {
  const store = join(dir, "torn.zarr");
  assert.equal((await cli("convert", H5AD, store, "--format", "sporadik", "--quiet")).code, 0);
  const whole = JSON.parse((await cli("slice", store, "--axis", "0", "0:5", "--json")).stdout);
  const chunk = join(store, "layouts/axis0/data/c/0");
  const saved = readFileSync(chunk);
  rmSync(chunk);
  try {
    const refused = await cli("slice", store, "--axis", "0", "0:5");
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /\[IncompleteError\]: .*layouts\/axis0\/data\/c\/0 is missing from the store/,
    );
    assert.match(refused.stderr, /--fill-missing-data/);
    const filled = await cli("slice", store, "--axis", "0", "0:5", "--json", "--fill-missing-data");
    assert.equal(filled.code, 0, filled.stderr);
    const slices = JSON.parse(filled.stdout).slices as { indices: number[]; values: number[] }[];
    const before = whole.slices as typeof slices;
    for (const [k, s] of slices.entries()) {
      assert.deepEqual(s.indices, before[k]?.indices, "positions are intact");
      assert.deepEqual(
        s.values,
        new Array(s.values.length).fill(0),
        "values of the missing chunk read as zeros",
      );
    }
  } finally {
    writeFileSync(chunk, saved);
  }
});

test("slice refuses positions out of order within a slice, naming the object, where the library's default reads them", async () => {
  const store = join(dir, "disordered.zarr");
  assert.equal(
    (await cli("convert", H5AD, store, "--format", "sporadik", "--byte-addressable", "--quiet")).code,
    0,
  );
  const file = join(store, "layouts/axis0/indices/c/0");
  const bytes = readFileSync(file);
  const positions = new Int32Array(bytes.buffer, bytes.byteOffset, 2);
  // Cell 0's first two genes swapped: both still inside the axis, their order broken.
  [positions[0], positions[1]] = [positions[1] as number, positions[0] as number];
  writeFileSync(file, bytes);
  const r = await cli("slice", store, "--axis", "0", "0");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /\[LayoutError\]: .*slice 0 lists position \d+ \(indices\[1\]\) after \d+/);
  assert.match(r.stderr, /indices\/c\/0 is damaged/);
});
