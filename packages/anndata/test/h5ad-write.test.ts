/**
 * The obs of an `.h5ad` written by `writeH5ad` as anndata writes it: bool columns and nullable
 * masks as HDF5's bool enum (h5wasm cannot create one: placeholders rewritten after close), pandas
 * nullable columns in their nullable-* encodings. Read back with the project's own .h5ad reader;
 * anndata's reading is the CLI's conformance test's (`deltacells export`).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { type FrameColumn, type H5adMatrix, openInput, writeH5ad } from "@deltacells/anndata/node";
import h5wasm from "h5wasm/node";
import { BoolDatasets, lookup3 } from "../src/h5-bool.js";

const dir = mkdtempSync(join(tmpdir(), "anndata-h5ad-write-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A matrix of `n` cells and 2 genes with no counts. */
function emptyPlan(n: number): H5adMatrix {
  return { nCells: n, nGenes: 2, nnz: 0, async *parts() {} };
}

const n = 6;
const mask = Uint8Array.of(0, 1, 0, 0, 1, 0);
const COLUMNS: FrameColumn[] = [
  { name: "flag", kind: "bool", values: Uint8Array.of(1, 0, 0, 1, 1, 0) },
  { name: "maybe_bool", kind: "bool", values: Uint8Array.of(1, 1, 0, 1, 1, 0), nulls: mask },
  { name: "full_bool", kind: "bool", values: Uint8Array.of(1, 0, 1, 0, 1, 0), nullable: true },
  { name: "maybe_int", kind: "numeric", values: Int16Array.of(1, 2, 3, 4, 5, 6), nulls: mask },
  { name: "full_int", kind: "numeric", values: BigInt64Array.of(1n, 2n, 3n, 4n, 5n, 6n), nullable: true },
  { name: "real", kind: "numeric", values: Float32Array.of(1, 2, 3, 4, 5, 6), nulls: mask },
  { name: "text", kind: "string", values: ["a", null, "c", "d", null, "f"] },
  { name: "full_text", kind: "string", values: ["a", "b", "c", "d", "e", "f"], nullable: true },
  { name: "plain_text", kind: "string", values: ["a", "b", "c", "d", "e", "f"] },
];

test("bool and nullable obs columns are written in anndata's encodings and read back equal", async () => {
  const path = join(dir, "obs.h5ad");
  const index = Array.from({ length: n }, (_, i) => `c${i}`);
  await writeH5ad(path, emptyPlan(n), index, ["g0", "g1"], [], null, {
    indexName: "cell",
    index,
    columns: COLUMNS,
    obsm: [],
  });
  const src = await openInput(path);
  try {
    const obs = await src.obs();
    assert.deepEqual(obs.index, index);
    const col = (name: string) => obs.columns.find((c) => c.name === name)!;
    assert.deepEqual(col("flag"), { name: "flag", kind: "bool", values: Uint8Array.of(1, 0, 0, 1, 1, 0) });
    // a missing value is written as pandas does (False / 0 under the mask)
    assert.deepEqual(col("maybe_bool"), {
      name: "maybe_bool",
      kind: "bool",
      values: Uint8Array.of(1, 0, 0, 1, 0, 0),
      nulls: mask,
      nullable: true,
    });
    assert.deepEqual(col("full_bool"), {
      name: "full_bool",
      kind: "bool",
      values: Uint8Array.of(1, 0, 1, 0, 1, 0),
      nulls: new Uint8Array(n),
      nullable: true,
    });
    assert.deepEqual(col("maybe_int"), {
      name: "maybe_int",
      kind: "numeric",
      values: Int16Array.of(1, 0, 3, 4, 0, 6),
      nulls: mask,
      nullable: true,
    });
    assert.deepEqual(col("full_int"), {
      name: "full_int",
      kind: "numeric",
      values: BigInt64Array.of(1n, 2n, 3n, 4n, 5n, 6n),
      nulls: new Uint8Array(n),
      nullable: true,
    });
    // a float column's missing values are NaN, as numpy has them
    const real = col("real") as { values: Float32Array; nulls?: Uint8Array };
    assert.equal(real.values.constructor, Float32Array);
    assert.equal(real.nulls, undefined);
    assert.deepEqual(
      Array.from(real.values, (v) => (Number.isNaN(v) ? null : v)),
      [1, null, 3, 4, null, 6],
    );
    assert.deepEqual(col("text"), { ...COLUMNS[6], nullable: true });
    assert.deepEqual(col("full_text"), COLUMNS[7]);
    assert.deepEqual(col("plain_text"), COLUMNS[8]);
  } finally {
    await src.close();
  }
});

test("lookup3 is Bob Jenkins' hashlittle (his published test vectors), HDF5's metadata checksum", () => {
  assert.equal(lookup3(new Uint8Array(0)), 0xdeadbeef);
  assert.equal(lookup3(new TextEncoder().encode("Four score and seven years ago")), 0x17770551);
});

test("a bool placeholder that is not found after close is refused, not left in the file", async () => {
  await h5wasm.ready;
  const path = join(dir, "lost.h5");
  const bools = new BoolDatasets();
  const f = new h5wasm.File(path, "w");
  bools.create(f, "b", Uint8Array.of(1, 0));
  f.close();
  // the placeholder's name damaged as a tool rewriting the file might
  const bytes = readFileSync(path);
  const at = bytes.indexOf("deltacells-bool-");
  assert.ok(at > 0);
  bytes.write("X", at, "latin1");
  writeFileSync(path, bytes);
  await assert.rejects(bools.patch(path), /1 bool dataset\(s\) written as placeholders were not found/);
});
