/**
 * The obs of an `.h5ad` export as anndata writes it: bool columns and nullable masks as HDF5's
 * bool enum (h5wasm cannot create one: placeholders rewritten after close), pandas nullable
 * columns in their nullable-* encodings, the index as labels whatever the index column's kind.
 * Read back with the project's own .h5ad reader; anndata's reading is the conformance test's.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openInput } from "@deltacells/anndata/node";
import { encodeTile, openDataset, writeDataset } from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { MemoryStore } from "@deltacells/storage";
import h5wasm from "h5wasm/node";
import { type FrameColumn, writeH5ad } from "../src/export-h5ad.js";
import { exportObs } from "../src/export-obs.js";
import type { ExportPlan } from "../src/export-rows.js";
import { BoolDatasets, lookup3 } from "../src/h5-bool.js";
import { tempDir } from "./cli-helpers.js";

/** A plan of `n` cells and 2 genes with no counts. */
function emptyPlan(n: number): ExportPlan {
  return {
    nCells: n,
    nGenes: 2,
    nnz: 0,
    async *parts() {},
  } as unknown as ExportPlan;
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
  const path = join(tempDir(), "obs.h5ad");
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
  const path = join(tempDir(), "lost.h5");
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

/**
 * A 4-cell dataset (in memory) with this cell table, its manifest's metadata then changed by
 * `edit` as another writer's would be.
 */
async function foreignDataset(
  obs: { indexName: string | null; index: string[]; columns: unknown[] },
  edit: (metadata: Record<string, unknown>) => Record<string, unknown>,
) {
  const store = new MemoryStore();
  const source = {
    format: "h5ad",
    location: "memory://foreign",
    matrixPath: "X",
    nCells: 4,
    nGenes: 1,
    var: async () => ({ indexName: null, index: ["g"], columns: [] }),
    obs: async () => obs,
    async *rowBlocks() {
      yield {
        rowStart: 0,
        nRows: 4,
        indptr: new Float64Array(5),
        indices: new Int32Array(0),
        data: new Int32Array(0),
      };
    },
  };
  await writeDataset(source as never, store, {
    encoder: {
      encode: (rows: Parameters<typeof encodeTile>[0], o?: object) => encodeTile(rows, { ...o, level: 1 }),
    },
    compress: zstdCompressor(1),
    tileSize: 2,
  });
  const manifest = JSON.parse(new TextDecoder().decode((await store.get("manifest.json"))!));
  manifest.metadata = edit(manifest.metadata);
  await store.set("manifest.json", new TextEncoder().encode(JSON.stringify(manifest)));
  return openDataset(store);
}

const category = (name: string, codes: number[], categories: string[]) => ({
  name,
  kind: "category" as const,
  codes: Int32Array.from(codes),
  categories,
  ordered: false,
});

test("the index comes back as labels when the index column is a category", async () => {
  // the dataset says its index is the categorical column (as another writer may)
  const ds = await foreignDataset(
    {
      indexName: null,
      index: ["0", "1", "2", "3"],
      columns: [category("label", [2, 0, 1, 0], ["b", "a", "c"])],
    },
    (metadata) => ({ ...metadata, obs_index: "label" }),
  );
  const obs = await exportObs(ds, 1, 4);
  assert.deepEqual(obs?.index, ["b", "a", "b"]);
});

test("without a named obs index every column is kept and the cells are numbered, as a dataset written by others has it", async () => {
  const ds = await foreignDataset(
    {
      indexName: "cell",
      index: ["w", "x", "y", "z"],
      columns: [
        category("cluster", [0, 1, 1, 0], ["Mono", "NK"]),
        { name: "n_genes", kind: "numeric" as const, values: Int32Array.of(10, 20, 30, 40) },
      ],
    },
    () => ({ source: "elsewhere" }), // no obs_* metadata at all
  );
  const obs = (await exportObs(ds, 1, 4))!;
  assert.deepEqual(obs.index, ["1", "2", "3"], "the dataset's cell numbers, not a column's labels");
  assert.equal(obs.indexName, null);
  assert.deepEqual(
    obs.columns.map((c) => c.name),
    ["cell", "cluster", "n_genes"],
  );
  const cluster = obs.columns[1]!;
  assert.ok(cluster.kind === "category");
  assert.deepEqual(
    Array.from(cluster.codes, (c) => cluster.categories[c]),
    ["NK", "NK", "Mono"],
  );
});
