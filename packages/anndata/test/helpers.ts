/** Test helpers: the Python reference reader, and row blocks gathered into one CSR matrix. */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  CanonicalRowBlock,
  ColumnTable,
  Embeddings,
  MatrixSource,
  NumericValues,
  OpenInputOptions,
} from "../src/index.js";
import { openInput } from "../src/node.js";
import type { Tree, TreeNode } from "../src/tree.js";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const DATA = join(REPO, "data");
const PYTHON = join(REPO, "conformance", ".venv", "bin", "python");

/** Reads every row block of the input at `path` (the reading is the point: refusals surface). */
export async function drain(path: string, opts: OpenInputOptions = {}): Promise<void> {
  const src = await openInput(path, opts);
  try {
    for await (const _ of src.rowBlocks({ blockCells: 100 })) {
      // reading is the point
    }
  } finally {
    await src.close();
  }
}

export type PyColumn = { kind: string; ordered?: boolean; values: unknown[] } | string[];

/** One obsm entry as conformance/anndata_dump.py writes it (numbers row-major, NaN as "NaN"). */
export type PyObsmEntry =
  | { kind: "dense"; shape: number[]; dtype: string; values: (number | "NaN")[] }
  | {
      kind: "sparse";
      shape: number[];
      dtype: string;
      indptr: number[];
      indices: number[];
      data: (number | "NaN")[];
    }
  | { kind: "table"; shape: number[]; index: string[]; columns: Record<string, PyColumn> };

export interface PyDump {
  shape: [number, number];
  obs_names: string[];
  var_names: string[];
  var_columns: Record<string, PyColumn>;
  obs_columns: Record<string, PyColumn>;
  index_names: [string | null, string | null];
  obsm: Record<string, PyObsmEntry>;
  indptr: number[];
  indices: number[];
  data: number[];
}

/**
 * What conformance/anndata_dump.py reads for each request, in one Python process (importing
 * anndata costs seconds; one spawn per file would dominate the test time).
 */
export function pythonDumps(requests: [kind: string, path: string, option?: string][]): PyDump[] {
  const input = requests.map(([k, p, o]) => JSON.stringify([k, p, o ?? null])).join("\n");
  const r = spawnSync(PYTHON, [join(REPO, "conformance", "anndata_dump.py"), "--batch"], {
    input,
    encoding: "utf8",
    maxBuffer: 512 * 1024 * 1024,
  });
  assert.equal(r.status, 0, `python dump failed: ${r.stderr}`);
  const lines = r.stdout.trim().split("\n");
  assert.equal(lines.length, requests.length);
  return lines.map((l) => JSON.parse(l) as PyDump);
}

/** What conformance/anndata_dump.py (anndata, scipy, h5py, zarr) reads for `path`. */
export function pythonDump(kind: string, path: string, option?: string): PyDump {
  const args = [join(REPO, "conformance", "anndata_dump.py"), kind, path, ...(option ? [option] : [])];
  const r = spawnSync(PYTHON, args, { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, `python dump failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as PyDump;
}

export interface Csr {
  indptr: number[];
  indices: number[];
  data: number[];
}

/** Gathers all row blocks, checking that each is canonical and that they tile the cells in order. */
export async function gather(src: MatrixSource, blockCells: number): Promise<Csr> {
  const indptr = [0];
  const indices: number[] = [];
  const data: number[] = [];
  let next = 0;
  for await (const b of src.rowBlocks({ blockCells })) {
    checkBlock(b, src.nGenes);
    assert.equal(b.rowStart, next, "blocks are in order and contiguous");
    assert.ok(b.nRows <= blockCells);
    next += b.nRows;
    for (let r = 0; r < b.nRows; r++) {
      for (let k = b.indptr[r] as number; k < (b.indptr[r + 1] as number); k++) {
        indices.push(b.indices[k] as number);
        data.push(b.data[k] as number);
      }
      indptr.push(indices.length);
    }
  }
  assert.equal(next, src.nCells, "blocks cover every cell");
  return { indptr, indices, data };
}

function checkBlock(b: CanonicalRowBlock, nGenes: number): void {
  assert.equal(b.indptr.length, b.nRows + 1);
  assert.equal(b.indptr[0], 0);
  assert.equal(b.indptr[b.nRows], b.indices.length);
  assert.equal(b.indices.length, b.data.length);
  for (let r = 0; r < b.nRows; r++) {
    for (let k = b.indptr[r] as number; k < (b.indptr[r + 1] as number); k++) {
      const g = b.indices[k] as number;
      assert.ok(g >= 0 && g < nGenes);
      if (k > (b.indptr[r] as number))
        assert.ok(g > (b.indices[k - 1] as number), "genes strictly increasing");
      assert.ok((b.data[k] as number) > 0, "no explicit zeros");
    }
  }
}

/** A table column in the JSON shape the Python dump uses. */
export function columnAsPython(
  t: ColumnTable,
  name: string,
): { kind: string; ordered?: boolean; values: unknown[] } {
  const c = t.columns.find((x) => x.name === name);
  assert.ok(c, `column ${name} exists`);
  const num = (v: number | bigint) => {
    const n = Number(v);
    return Number.isNaN(n) ? "NaN" : n;
  };
  switch (c.kind) {
    case "category":
      return {
        kind: "category",
        ordered: c.ordered,
        values: Array.from(c.codes, (k) => (k < 0 ? null : c.categories[k])),
      };
    case "string":
      return { kind: "string", values: c.values };
    case "bool":
      return { kind: "bool", values: Array.from(c.values, (v, i) => (c.nulls?.[i] ? null : v !== 0)) };
    case "numeric":
      return {
        kind: "numeric",
        values: Array.from(c.values as ArrayLike<number | bigint>, (v, i) => (c.nulls?.[i] ? null : num(v))),
      };
  }
}

/** Compares a source's obs/var tables with the Python reader's. */
export function assertTablesMatch(ours: ColumnTable, theirs: Record<string, PyColumn>): void {
  assert.deepEqual(
    ours.columns.map((c) => c.name),
    Object.keys(theirs),
    "same columns, same order",
  );
  for (const [name, col] of Object.entries(theirs)) {
    const mine = columnAsPython(ours, name);
    if (Array.isArray(col)) {
      assert.deepEqual(mine.values, col, `column ${name}`);
      continue;
    }
    assert.deepEqual(mine.values, col.values, `column ${name}`);
    if (col.kind === "category") {
      assert.equal(mine.kind, "category", `column ${name} is categorical`);
      assert.equal(mine.ordered, col.ordered, `column ${name} ordered flag`);
    }
  }
}

/** Numbers as the Python dump writes them: NaN as "NaN", bigints and bools as numbers. */
function jsonNumbers(v: NumericValues): (number | "NaN")[] {
  return Array.from(v as ArrayLike<number | bigint>, (x) => {
    const n = Number(x);
    return Number.isNaN(n) ? "NaN" : n;
  });
}

/** Compares a source's obsm entries (all of them, same keys) with anndata's. */
export function assertObsmMatch(ours: Embeddings, theirs: Record<string, PyObsmEntry>): void {
  assert.deepEqual(Object.keys(ours).sort(), Object.keys(theirs).sort(), "same obsm keys");
  for (const [key, py] of Object.entries(theirs)) {
    const e = ours[key];
    assert.ok(e, `obsm ${key}`);
    assert.equal(e.name, key);
    assert.equal(e.kind, py.kind, `obsm ${key} kind`);
    assert.deepEqual(e.shape, py.shape, `obsm ${key} shape`);
    if (e.kind === "dense" && py.kind === "dense") {
      assert.equal(e.dtype, py.dtype, `obsm ${key} dtype`);
      assert.deepEqual(jsonNumbers(e.values), py.values, `obsm ${key} values`);
    } else if (e.kind === "sparse" && py.kind === "sparse") {
      assert.equal(e.dtype, py.dtype, `obsm ${key} dtype`);
      assert.deepEqual(Array.from(e.indptr), py.indptr, `obsm ${key} indptr`);
      assert.deepEqual(Array.from(e.indices), py.indices, `obsm ${key} indices`);
      assert.deepEqual(jsonNumbers(e.data), py.data, `obsm ${key} data`);
    } else if (e.kind === "table" && py.kind === "table") {
      assert.deepEqual(e.table.index, py.index, `obsm ${key} index`);
      assertTablesMatch(e.table, py.columns);
    }
  }
}

/**
 * `tree`, counting its `get` and its nodes' `attrs` calls in `calls` (each is a round trip to the
 * HDF5 worker thread), and the paths it was asked for in `calls.paths` when given.
 */
export function counting(tree: Tree, calls: { get: number; attrs: number; paths?: string[] }): Tree {
  const wrap = (node: TreeNode): TreeNode =>
    new Proxy(node, {
      get(target, prop) {
        if (prop === "attrs")
          return () => {
            calls.attrs++;
            return target.attrs();
          };
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  return {
    location: tree.location,
    close: () => tree.close(),
    get: async (path) => {
      calls.get++;
      calls.paths?.push(path);
      const node = await tree.get(path);
      return node && wrap(node);
    },
  };
}
