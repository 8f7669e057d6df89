/**
 * A dataset's obs rebuilt as AnnData holds them (`anndataObs`, what `deltacells export` writes to
 * an `.h5ad`): the index as labels whatever the index column's kind, and a dataset naming no index
 * column keeps every column with its cells numbered.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { anndataObs, encodeTile, openDataset, writeDataset } from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { MemoryStore } from "@deltacells/storage";

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
  const obs = await anndataObs(ds, 1, 4);
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
  const obs = (await anndataObs(ds, 1, 4))!;
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
