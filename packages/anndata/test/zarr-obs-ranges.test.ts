/**
 * AnnData zarr obs read by row range (bounded memory, as h5ad): tile-sized reads in increasing
 * order decode each zarr chunk once, and give the values of the whole-table read.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openAnnData } from "../src/anndata.js";
import { LocalZarrStore } from "../src/folder-store.js";
import { chunkWindowed } from "../src/row-window.js";
import type { TreeArray } from "../src/tree.js";
import type { TableColumn, TableColumnReader } from "../src/types.js";
import { openZarrTree } from "../src/zarr-tree.js";

/** A 1-d array of `n` rows in chunks of `chunk` that records the ranges it decodes. */
function fakeArray(n: number, chunk: number) {
  const loads: [number, number][] = [];
  const a: TreeArray = {
    kind: "array",
    path: "obs/x",
    shape: [n],
    element: "int",
    itemSize: 4,
    chunkRows: chunk,
    attrs: async () => ({}),
    read: async (s = 0, e = n) => {
      loads.push([s, e]);
      return Int32Array.from({ length: e - s }, (_, i) => s + i);
    },
    readStrings: async (s = 0, e = n) => {
      loads.push([s, e]);
      return Array.from({ length: e - s }, (_, i) => `r${s + i}`);
    },
    readCompound: async () => new Map(),
  };
  return { a, loads };
}

test("increasing ranges decode each chunk once, whatever the tile size, and give the right rows", async () => {
  for (const tile of [1, 3, 7, 10, 13, 40]) {
    const { a, loads } = fakeArray(95, 10);
    const w = chunkWindowed(a);
    const got: number[] = [];
    const strings: string[] = [];
    for (let s = 0; s < 95; s += tile) {
      got.push(...Array.from(await w.read(s, Math.min(95, s + tile)), Number));
      strings.push(...(await w.readStrings(s, Math.min(95, s + tile))));
    }
    assert.deepEqual(
      got,
      Array.from({ length: 95 }, (_, i) => i),
      `tile ${tile}`,
    );
    assert.deepEqual(
      strings,
      Array.from({ length: 95 }, (_, i) => `r${i}`),
      `tile ${tile}`,
    );
    // the numbers and the strings each decode chunk k exactly once, in order, at chunk bounds
    const covered = loads.flatMap(([s, e]) =>
      Array.from({ length: ((e - s + 9) / 10) | 0 }, (_, k) => s / 10 + k),
    );
    assert.equal(covered.length, 2 * 10, `tile ${tile}: ${JSON.stringify(loads)}`);
    for (const [s] of loads) assert.equal(s % 10, 0);
  }
});

test("a range before the window (a restart) is read again, not served stale", async () => {
  const { a } = fakeArray(30, 10);
  const w = chunkWindowed(a);
  assert.deepEqual(Array.from(await w.read(25, 28), Number), [25, 26, 27]);
  assert.deepEqual(Array.from(await w.read(2, 4), Number), [2, 3]);
  assert.deepEqual(Array.from(await w.read(4, 4), Number), []);
});

test("an AnnData zarr obs is read by row range, each chunk fetched once, equal to the whole read", async () => {
  for (const path of ["data/anndata/obs-encodings.zarr", "data/anndata/csr-v2.zarr"]) {
    const store = new LocalZarrStore(path);
    const gets = new Map<string, number>();
    const counting = {
      get: (key: `/${string}`) => {
        gets.set(key, (gets.get(key) ?? 0) + 1);
        return store.get(key);
      },
      children: (p: string) => store.children(p),
    };
    const source = await openAnnData(openZarrTree(path, counting), "anndata-zarr", {});
    try {
      const reader = await source.obsReader();
      assert.ok(reader, `${path}: obs has a reader by row range`);
      const whole = await source.obs();
      gets.clear();
      const n = source.nCells;
      const byColumn = new Map<string, unknown[]>();
      const index: string[] = [];
      for (let s = 0; s < n; s += 7) {
        const e = Math.min(n, s + 7);
        index.push(...(await reader.index(s, e)));
        for (const c of reader.columns)
          byColumn.set(c.name, [...(byColumn.get(c.name) ?? []), ...(await rowsOf(c, s, e))]);
      }
      assert.deepEqual(index, whole.index);
      for (const c of whole.columns)
        assert.deepEqual(byColumn.get(c.name), wholeRows(c), `${path} ${c.name}`);
      const chunks = [...gets].filter(([k]) => !/(zarr\.json|\.zarray|\.zattrs|\.zgroup)$/.test(k));
      assert.ok(chunks.length > 0);
      for (const [k, count] of chunks) assert.equal(count, 1, `${path}: chunk ${k} fetched ${count} times`);
    } finally {
      await source.close();
    }
  }
});

async function rowsOf(c: TableColumnReader, s: number, e: number): Promise<unknown[]> {
  if (c.kind === "string") return c.read(s, e);
  if (c.kind === "category") return Array.from(await c.read(s, e));
  const { values, nulls } = await c.read(s, e);
  return Array.from(values as ArrayLike<number | bigint>, (v, i) => (nulls?.[i] ? null : v));
}

function wholeRows(c: TableColumn): unknown[] {
  if (c.kind === "string") return c.values;
  if (c.kind === "category") return Array.from(c.codes);
  const nulls = c.nulls;
  return Array.from(c.values as ArrayLike<number | bigint>, (v, i) => (nulls?.[i] ? null : v));
}
