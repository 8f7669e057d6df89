/**
 * `convert --sporadik`: the dataset plus a sporadik companion of the same counts, named in the
 * manifest, checked by `validate`; read back here through both readers and compared value by value.
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openDataset } from "@deltacells/core/node";
import { openArrayReader } from "@deltacells/sporadik/node";
import { openStore } from "@deltacells/storage/node";
import { cli, REPO, tempDir } from "./cli-helpers.js";

const H5 = join(REPO, "data/10x-v3-chr21/filtered_feature_bc_matrix.h5");
let dir: string;
let out: string;

before(async () => {
  dir = tempDir();
  out = join(dir, "chr21");
  const r = await cli("convert", H5, out, "--sporadik", "--quiet", "--threads", "1", "--json");
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { sporadik: { path: string } }).sporadik.path, "sporadik");
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

test("the manifest names the companion, which holds the dataset's counts in the source's gene order", async () => {
  const ds = await openDataset(out);
  assert.equal(ds.manifest.metadata.sporadik, "sporadik");
  const array = await openArrayReader(openStore(join(out, "sporadik")));
  assert.deepEqual([...array.shape], [ds.nCells, ds.nGenes]);
  const order = (await ds.geneOrder())!;
  const rows = await ds.cells(0, ds.nCells);
  // Every nonzero of the tiles, at (cell, source column), against the companion's CSC slices.
  const expected = new Map<string, number>();
  for (let c = 0; c < ds.nCells; c++) {
    for (let k = rows.indptr[c]!; k < rows.indptr[c + 1]!; k++) {
      expected.set(`${c},${order[rows.indices[k]!]}`, Number(rows.data[k]));
    }
  }
  let seen = 0;
  const all = await array.slicesAt(
    Array.from({ length: ds.nGenes }, (_, j) => j),
    { axis: 1 },
  );
  for (let g = 0; g < ds.nGenes; g++) {
    for (let k = Number(all.indptr[g]); k < Number(all.indptr[g + 1]); k++) {
      assert.equal(
        Number(all.data[k]),
        expected.get(`${all.indices[k]},${g}`),
        `cell ${all.indices[k]} gene ${g}`,
      );
      seen++;
    }
  }
  assert.equal(seen, expected.size);
});

test("validate checks the companion: valid, then a torn one is named", async () => {
  const ok = await cli("validate", out);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /sporadik companion valid/);
  const block = join(out, "sporadik/zarr.json");
  const saved = readFileSync(block);
  rmSync(block);
  try {
    const torn = await cli("validate", out);
    assert.equal(torn.code, 1);
    assert.match(torn.stdout, /sporadik companion at "sporadik", which cannot be read/);
  } finally {
    writeFileSync(block, saved);
  }
});

test("--sporadik with --format sporadik is a usage error", async () => {
  const r = await cli("convert", H5, join(dir, "x.zarr"), "--format", "sporadik", "--sporadik");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sporadik applies to --format deltacells only/);
});

/** The zstd configuration of every array's zarr.json in the store at `root`. */
function zstdOf(root: string): unknown[] {
  return ["axis0", "axis1"].flatMap((layout) =>
    ["data", "indices", "indptr", "maxima"].map((name) => {
      const meta = JSON.parse(readFileSync(join(root, "layouts", layout, name, "zarr.json"), "utf8"));
      return meta.codecs[1].configuration;
    }),
  );
}

test("the companion carries zstd's content checksum in every chunk by default, and --no-checksums leaves it out", async () => {
  for (const configuration of zstdOf(join(out, "sporadik")))
    assert.deepEqual(configuration, { level: 0, checksum: true });
  const plain = join(dir, "plain");
  const r = await cli(
    "convert",
    H5,
    plain,
    "--sporadik",
    "--no-checksums",
    "--quiet",
    "--threads",
    "1",
    "--json",
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { sporadik: { checksums: boolean } }).sporadik.checksums, false);
  for (const configuration of zstdOf(join(plain, "sporadik")))
    assert.deepEqual(configuration, { level: 0, checksum: false });
});
