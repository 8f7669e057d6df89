/**
 * Data frames read from HDF5: each tree call (`get`, `attrs`) is a round trip to the HDF5 worker
 * thread, so the calls a frame costs are counted here; and the whole read equals the read by
 * range, for the current encoding and anndata 0.7's `__categories`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { frameReader, readDataFrame } from "../src/dataframe.js";
import { openHdf5 } from "../src/hdf5-thread.js";
import type { ColumnTable, ColumnTableReader } from "../src/types.js";
import { counting, DATA } from "./helpers.js";

/** A frame read by range, read whole through its readers. */
async function readAll(r: ColumnTableReader, n: number): Promise<ColumnTable> {
  const columns = [];
  for (const c of r.columns) {
    if (c.kind === "category") {
      const { read, ...rest } = c;
      columns.push({ ...rest, codes: await read(0, n) });
    } else {
      const nullable = c.nullable ? { nullable: true } : {};
      if (c.kind === "string")
        columns.push({ name: c.name, kind: c.kind, values: await c.read(0, n), ...nullable });
      else columns.push({ name: c.name, kind: c.kind, ...(await c.read(0, n)), ...nullable });
    }
  }
  return { indexName: r.indexName, index: await r.index(0, n), columns, excluded: r.excluded } as ColumnTable;
}

test("a data frame costs one tree call per node it needs, whole or by range, and both reads agree", async () => {
  const tree = await openHdf5(join(DATA, "anndata", "csr.h5ad"));
  try {
    // obs: 8 columns, of which 3 categorical and 2 nullable groups (2 children each), 3 arrays.
    // The frame (get, attrs), its index, its absent __categories; a get per column, an attrs per
    // group column, a get per child array.
    const expected = { get: 3 + 8 + 3 * 2 + 2 * 2, attrs: 1 + 3 + 2 };
    const whole = { get: 0, attrs: 0 };
    const table = await readDataFrame(counting(tree, whole), "obs", 57);
    assert.deepEqual(whole, expected);
    const ranged = { get: 0, attrs: 0 };
    const reader = (await frameReader(counting(tree, ranged), "obs", 57))!;
    assert.deepEqual(ranged, expected);
    assert.deepEqual(await readAll(reader, 57), table);
    assert.deepEqual(
      table.columns.map((c) => `${c.name}:${c.kind}`),
      [
        "cell_type:category",
        "batch:category",
        "n_counts:numeric",
        "score:numeric",
        "is_doublet:bool",
        "donor:category",
        "maybe_int:numeric",
        "maybe_bool:bool",
      ],
    );
  } finally {
    await tree.close();
  }
});

test("anndata 0.7 categoricals (codes, categories in __categories) read whole and by range alike", async () => {
  const tree = await openHdf5(join(DATA, "anndata", "obs-0.7.h5ad"));
  try {
    const table = await readDataFrame(tree, "obs", 40);
    const reader = (await frameReader(tree, "obs", 40))!;
    assert.deepEqual(await readAll(reader, 40), table);
    const kinds = Object.fromEntries(table.columns.map((c) => [c.name, c.kind]));
    assert.deepEqual(kinds, {
      cell_type: "category",
      batch: "category",
      n_counts: "numeric",
      score: "numeric",
      is_doublet: "bool",
    });
  } finally {
    await tree.close();
  }
});
