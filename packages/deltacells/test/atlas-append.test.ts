/**
 * Appending to a dataset: it equals a fresh conversion of all the inputs with the dataset's gene
 * order, byte for byte; only what changes is written; genes the dataset lacks are refused or
 * dropped; an append killed before or while moving into place leaves the old dataset valid, and
 * the next append completes or clears it; a reader opened before sees the old version or
 * `DatasetChanged`.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { MemoryStore, Store } from "@deltacells/storage";
import { FolderStore } from "@deltacells/storage/node";
import { appendNames } from "../src/atlas/append.js";
import { tileKey } from "../src/dataset/manifest.js";
import {
  APPEND_STAGING,
  appendToDataset,
  type DatasetSource,
  isDeltacellsError,
  openDataset,
  validateDataset,
} from "../src/index.js";
import {
  atlasInput,
  buildAtlasInto,
  buildOnce,
  category,
  cells,
  compress,
  encoder,
  genes,
  objects,
  refs,
} from "./atlas-fixtures.js";

type Input = DatasetSource & { opened: number };
const OPTS = { tileSize: 4, obs: { tilesPerFile: 2 } };

function inputA(): Input {
  return atlasInput("data/a.h5ad", 21, genes(0, 9), 1, {
    obs: cells("a", 21, [
      category("cell_type", 21, (i) => i % 2, ["B", "T"]),
      { name: "n_genes", kind: "numeric", values: Int32Array.from({ length: 21 }, (_, i) => i) },
    ]),
    umap: 2,
  });
}
function inputB(): Input {
  return atlasInput("data/b.h5ad", 10, genes(4, 8), 2, {
    obs: cells("b", 10, [
      {
        name: "cell_type",
        kind: "category",
        codes: new Int32Array(10).fill(1),
        categories: ["B", "T"],
        ordered: false,
      },
    ]),
    umap: 2,
  });
}
/** New cells over some of the genes: a new category; with `widen`, n_genes as float and a new column. */
function inputC(widen: boolean): Input {
  const columns: NonNullable<Parameters<typeof cells>[2]> = [
    category("cell_type", 13, (i) => i % 3, ["T", "NK", "B"]),
  ];
  if (widen) {
    columns.push(
      { name: "n_genes", kind: "numeric", values: Float64Array.from({ length: 13 }, (_, i) => i + 0.25) },
      { name: "donor", kind: "string", values: Array.from({ length: 13 }, (_, i) => `d${i % 2}`) },
    );
  }
  return atlasInput("data/c.h5ad", 13, ["G3", "G11", "G0", "G7"], 3, {
    obs: cells("c", 13, columns),
    umap: 2,
  });
}

async function datasetOf(inputs: Input[]): Promise<MemoryStore> {
  return buildOnce(inputs, OPTS);
}

/** The dataset's gene keys in output order (what a fresh conversion is given as its order). */
async function outputKeys(store: Store): Promise<string[]> {
  const ds = await openDataset(store);
  const names = (await ds.geneNames())!;
  await ds.close();
  return names;
}

async function append(
  store: Store,
  inputs: Input[],
  extra: Partial<Parameters<typeof appendToDataset>[2]> = {},
) {
  return appendToDataset(store, refs(inputs), { encoder, compress, ...extra });
}

for (const widen of [false, true]) {
  test(`an appended dataset equals a fresh conversion of all the inputs with its gene order, byte for byte (${widen ? "a new column and int becoming float: every shard rewritten" : "new categories only: the last shard rewritten"})`, async () => {
    const store = await datasetOf([inputA(), inputB()]);
    const before = objects(store);
    const order = await outputKeys(store);
    const result = await append(store, [inputC(widen)]);
    const fresh = objects(
      await buildOnce([inputA(), inputB(), inputC(widen)], { ...OPTS, genes: { order } }),
    );
    const after = objects(store);
    assert.deepEqual([...after.keys()], [...fresh.keys()]);
    for (const [key, bytes] of fresh) assert.deepEqual(after.get(key), bytes, key);
    // 31 old cells in 8 tiles (the last of 3), 44 now in 11: tiles 7..10 written, 0..6 untouched
    assert.deepEqual(
      result.written.filter((k) => k.startsWith("tiles/")),
      [tileKey(8), tileKey(9), tileKey(10), tileKey(7)],
    );
    for (let t = 0; t < 7; t++) assert.deepEqual(after.get(tileKey(t)), before.get(tileKey(t)));
    const shards = result.written.filter((k) => k.startsWith("obs/obs_"));
    assert.deepEqual(
      shards,
      widen
        ? [
            "obs/obs_0000.parquet",
            "obs/obs_0001.parquet",
            "obs/obs_0002.parquet",
            "obs/obs_0003.parquet",
            "obs/obs_0004.parquet",
            "obs/obs_0005.parquet",
          ]
        : ["obs/obs_0003.parquet", "obs/obs_0004.parquet", "obs/obs_0005.parquet"],
    );
    if (!widen)
      for (const s of [0, 1, 2])
        assert.deepEqual(after.get(`obs/obs_000${s}.parquet`), before.get(`obs/obs_000${s}.parquet`));
    assert.equal(result.cells, 13);
    const ds = await openDataset(store);
    assert.equal((await validateDataset(ds)).problems.length, 0);
    const type = (await ds.obsSchema()).columns.find((c) => c.name === "cell_type")!;
    assert.deepEqual(
      type.categories,
      ["B", "T", "NK"],
      "old codes keep their meaning, new categories at the end",
    );
    await ds.close();
  });
}

test("an append stops naming the companion, its rows in embedding order and the statistics (the old cells' only), each with a note tagged by its part", async () => {
  const store = await datasetOf([inputA(), inputB()]);
  const ds = await openDataset(store);
  const rows = { path: "sporadik-rows", embedding: ["X_umap_0", "X_umap_1"], digest: "0123abcd" };
  await store.set(
    "manifest.json",
    new TextEncoder().encode(
      JSON.stringify({
        ...ds.manifest,
        metadata: { ...ds.manifest.metadata, sporadik: "sporadik", sporadik_rows: rows, stats: "stats" },
      }),
    ),
  );
  await ds.close();
  const result = await append(store, [inputC(false)]);
  const after = await openDataset(store);
  for (const key of ["sporadik", "sporadik_rows", "stats"])
    assert.equal(after.manifest.metadata[key], undefined, `${key} is no longer named`);
  await after.close();
  assert.deepEqual(
    result.notes.map((n) => n.split(" hold")[0]!.split(" describe")[0]),
    [
      "the sporadik companion (sporadik/)",
      "the rows in embedding order (sporadik-rows/)",
      "the statistics (stats/)",
    ],
  );
  assert.match(
    result.notes[1]!,
    /no longer named in the manifest: write them again \(append with the sporadik option\)/,
  );
  // Tagged by part, so a caller that writes one again drops its note without reading its words.
  assert.deepEqual(
    result.stale.map((s) => [s.part, s.path, result.notes.indexOf(s.note)]),
    [
      ["companion", "sporadik", 0],
      ["rows", "sporadik-rows", 1],
      ["stats", "stats", 2],
    ],
  );
  const plain = await append(await datasetOf([inputA(), inputB()]), [inputC(false)]);
  assert.deepEqual(plain.stale, [], "a dataset that named none has none stale");
});

test("a new input whose name the dataset has takes the first free number, b-2, b-3; given names win, and repeats are refused", async () => {
  const store = await datasetOf([inputA(), inputB()]);
  const at = (path: string, inputs: Input[]) => refs(inputs).map((r) => ({ ...r, path }));
  const names = async () => {
    const ds = await openDataset(store);
    const listed = (ds.manifest.metadata.inputs as { name: string }[]).map((i) => i.name);
    const source = (await ds.obsSchema()).columns.find((c) => c.name === "source")!;
    await ds.close();
    assert.deepEqual(source.categories, listed, "the source column has the names the inputs list");
    return listed;
  };
  // The same file again, twice, then the same name from another folder: no long paths.
  await appendToDataset(store, refs([inputB()]), { encoder, compress });
  await appendToDataset(store, refs([inputB()]), { encoder, compress });
  await appendToDataset(store, at("/elsewhere/b.h5ad", [inputB()]), { encoder, compress });
  assert.deepEqual(await names(), ["a", "b", "b-2", "b-3", "b-4"]);
  // New inputs alike among themselves take parent folders, as a conversion names them.
  await appendToDataset(store, [...at("x/c.h5ad", [inputC(false)]), ...at("y/c.h5ad", [inputC(false)])], {
    encoder,
    compress,
  });
  assert.deepEqual((await names()).slice(5), ["x/c", "y/c"]);
  await appendToDataset(store, refs([inputB()]), { encoder, compress, names: ["b-late"] });
  assert.equal((await names()).at(-1), "b-late");
  const before = objects(store);
  for (const [inputs, names, message] of [
    [
      refs([inputB()]),
      ["a"],
      /new input 0 \(data\/b\.h5ad\) would be named "a" in the source column, as an input of the dataset is/,
    ],
    [
      [...refs([inputC(false)]), ...refs([inputC(false)])],
      undefined,
      /new inputs 0 \(data\/c\.h5ad\) and 1 \(data\/c\.h5ad\) would both be named "data\/c" in the source column/,
    ],
  ] as const)
    await assert.rejects(
      appendToDataset(store, [...inputs], { encoder, compress, ...(names ? { names: [...names] } : {}) }),
      (err: unknown) => isDeltacellsError(err, "InvalidInput") && message.test(err.message),
    );
  assert.deepEqual(objects(store), before, "nothing written");
});

test("appendNames: a one-input dataset keeps its input's name; list names given for some inputs only", () => {
  // A one-input conversion records its path as given; the same file appended is named from its own path.
  assert.deepEqual(
    appendNames(
      [{ path: "data/anndata/csr.h5ad" }],
      ["/work/main/data/anndata/csr.h5ad"],
      undefined,
      "source",
    ),
    { oldNames: ["csr"], newNames: ["csr-2"] },
  );
  // A number another new input is named with is skipped.
  assert.deepEqual(
    appendNames(
      [{ path: "/d/pbmc.h5ad", name: "pbmc" }],
      ["/e/pbmc.h5ad", "/f/lung.h5ad"],
      [undefined, "pbmc-2"],
      "source",
    ),
    { oldNames: ["pbmc"], newNames: ["pbmc-3", "pbmc-2"] },
  );
  assert.throws(() => appendNames([], ["a.h5ad"], ["x", "y"], "source"), /2 source names for 1 new inputs/);
});

test("genes the dataset lacks are refused, naming how many and the input, or dropped with dropUnlisted and reported", async () => {
  const store = await datasetOf([inputA(), inputB()]);
  const before = objects(store);
  const d = atlasInput("data/d.h5ad", 6, ["G1", "G2", "X9"], 4, { obs: cells("d", 6, []), umap: 2 });
  await assert.rejects(append(store, [d]), (err: unknown) => {
    assert.ok(isDeltacellsError(err, "InvalidInput"));
    assert.match(
      err.message,
      /data\/d\.h5ad: 1 of its 3 genes are not in the genes of memory:\/\/once \("X9"\).*A dataset's genes are fixed: drop them with the drop-unlisted-genes option/,
    );
    return true;
  });
  assert.deepEqual(objects(store), before, "nothing written");
  const result = await append(
    store,
    [atlasInput("data/d.h5ad", 6, ["G1", "G2", "X9"], 4, { obs: cells("d", 6, []), umap: 2 })],
    { dropUnlisted: true },
  );
  assert.deepEqual(
    result.dropped.map((x) => [x.location, x.count, x.keys]),
    [["data/d.h5ad", 1, ["X9"]]],
  );
  const ds = await openDataset(store);
  assert.equal(ds.nCells, 37);
  await ds.close();
});

test("an input without an embedding the dataset has is refused unless obsmFill, which appends nulls for its cells", async () => {
  const store = await datasetOf([inputA(), inputB()]);
  const bare = () => atlasInput("data/e.h5ad", 5, ["G1"], 5, { obs: cells("e", 5, []) });
  await assert.rejects(
    append(store, [bare()]),
    /data\/e\.h5ad has no obsm "X_umap" of 2 columns.*obsm fill option/,
  );
  await append(store, [bare()], { obs: { obsmFill: true } });
  const ds = await openDataset(store);
  const frame = await ds.obs(["X_umap_0"]);
  assert.deepEqual(frame.rows(30, 32), [[2 + (9 * 2) / 8], [null]]); // b's last cell, then e's first
  await ds.close();
});

test("an append killed before it moves into place leaves the old dataset valid and as it was; the next append clears its staging and appends", async () => {
  const store = await datasetOf([inputA(), inputB()]);
  const before = objects(store);
  let writes = 0;
  const dying = Object.assign(Object.create(store) as MemoryStore, {
    set: async (key: string, value: Uint8Array) => {
      if (key.startsWith(APPEND_STAGING) && key.includes("tiles/") && ++writes === 2)
        throw new Error("killed");
      return store.set(key, value);
    },
  });
  await assert.rejects(append(dying, [inputC(true)]), /killed/);
  for (const [key, bytes] of before) assert.deepEqual(store.objects.get(key), bytes, key);
  const ds = await openDataset(store);
  assert.equal((await validateDataset(ds)).problems.length, 0);
  await ds.close();
  assert.ok(
    [...store.objects.keys()].some((k) => k.startsWith(APPEND_STAGING)),
    "the staging area is left",
  );
  const order = await outputKeys(store);
  await append(store, [inputC(true)]);
  assert.ok(![...store.objects.keys()].some((k) => k.startsWith(APPEND_STAGING)));
  const fresh = objects(await buildOnce([inputA(), inputB(), inputC(true)], { ...OPTS, genes: { order } }));
  assert.deepEqual(objects(store), fresh);
});

test("an append killed while moving into place is completed by the next append of the same inputs, from its journal", async () => {
  const store = await datasetOf([inputA(), inputB()]);
  const order = await outputKeys(store);
  let moved = 0;
  const killer = async (from: string, to: string) => {
    if (++moved === 3) throw new Error("killed while moving");
    await store.set(to, (await store.get(from))!);
    await store.delete(from);
  };
  await assert.rejects(append(store, [inputC(true)], { move: killer }), /killed while moving/);
  const resumed = await append(store, [inputC(true)]);
  assert.deepEqual(resumed.resumed, ["data/c.h5ad"]);
  assert.equal(resumed.cells, 0);
  const fresh = objects(await buildOnce([inputA(), inputB(), inputC(true)], { ...OPTS, genes: { order } }));
  assert.deepEqual(objects(store), fresh);
});

test("a reader opened before an append reads the old cells or refuses a rewritten tile with DatasetChanged, never a mix", async () => {
  const dir = mkdtempSync(join(tmpdir(), "deltacells-append-"));
  try {
    const folder = new FolderStore(dir);
    await buildAtlasInto(folder, [inputA(), inputB()], OPTS);
    const reader = await openDataset(folder);
    const tile0 = await reader.cells(0, 4);
    await new Promise((r) => setTimeout(r, 20)); // a clock tick after the open
    await append(folder, [inputC(false)]);
    assert.deepEqual(await reader.cells(0, 4), tile0, "an old tile still reads the same");
    await assert.rejects(reader.cells(28, 31), (err: unknown) => isDeltacellsError(err, "DatasetChanged"));
    await reader.close();
    const now = await openDataset(folder);
    assert.equal(now.nCells, 44);
    await now.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
