/**
 * Fixtures for the atlas tests: small in-memory inputs with their own gene sets and cell tables,
 * the steps of a distributed build run in-process, and a store's objects as a map. Not a test file.
 */
import { MemoryStore, type Store } from "@deltacells/storage";
import {
  type AtlasInputRef,
  type AtlasPlanOptions,
  type BuildAtlasOptions,
  buildAtlas,
  type ColumnTable,
  type DatasetSource,
  encodeTile,
  finalizeAtlas,
  planStep,
  scanStep,
  type TableColumn,
  type TileEncoder,
  taskStep,
} from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { denseToBlock, memorySource, randomMatrix } from "./dataset-fixtures.js";

export const compress = zstdCompressor(3);

/** The real codec at a fast level. */
export const encoder: TileEncoder = { encode: (rows, opts) => encodeTile(rows, { ...opts, level: 3 }) };

/** An input of `nCells` cells over the genes `genes` (keys), with an optional cell table and embedding. */
export function atlasInput(
  location: string,
  nCells: number,
  genes: string[],
  seed: number,
  opts: { obs?: ColumnTable; umap?: number; blockCells?: number; ids?: string[]; seeks?: boolean } = {},
): DatasetSource & { opened: number } {
  const m = randomMatrix(nCells, genes.length, seed, 0.3);
  const table: ColumnTable = {
    indexName: null,
    index: genes,
    columns: [
      { name: "gene_ids", kind: "string", values: opts.ids ?? genes.map((g) => `ENS-${g}`) },
      { name: "length", kind: "numeric", values: Int32Array.from(genes, (_, i) => 100 + seed * 10 + i) },
    ],
  };
  const base = memorySource(m, { table, blockCells: opts.blockCells ?? 7 });
  const step = opts.blockCells ?? 7;
  const src: DatasetSource & { opened: number } = {
    ...base,
    format: "h5ad",
    location,
    opened: 0,
    // A reader that can seek starts at rowStart, as CSR inputs do; the others start at 0.
    rowBlocks: opts.seeks
      ? async function* (o) {
          const end = Math.min(nCells, o?.rowEnd ?? nCells);
          for (let a = o?.rowStart ?? 0; a < end; a += step)
            yield denseToBlock(m, a, Math.min(end, a + step));
        }
      : base.rowBlocks,
  };
  if (opts.obs) {
    const obs = opts.obs;
    src.obs = async () => obs;
    const width = opts.umap ?? 0;
    const values = Float64Array.from({ length: nCells * width }, (_, i) => seed + i / 8);
    src.obsmKeys = async () => (width ? ["X_umap"] : []);
    src.obsm = async (keys?: string[]) =>
      Object.fromEntries(
        (keys ?? (width ? ["X_umap"] : [])).map((k) => [
          k,
          { kind: "dense", shape: [nCells, width], values },
        ]),
      );
  }
  return src;
}

/** A categorical column of `n` cells, cell i's code `code(i)` (-1: missing). */
export function category(
  name: string,
  n: number,
  code: (i: number) => number,
  categories: string[],
): TableColumn {
  return {
    name,
    kind: "category",
    codes: Int32Array.from({ length: n }, (_, i) => code(i)),
    categories,
    ordered: false,
  };
}

/** A cell table of `n` cells with the columns given (index `cell-<prefix>-i`). */
export function cells(prefix: string, n: number, columns: ColumnTable["columns"]): ColumnTable {
  return { indexName: null, index: Array.from({ length: n }, (_, i) => `${prefix}-${i}`), columns };
}

/** The inputs as a build's references, counting how often each is opened. */
export function refs(inputs: (DatasetSource & { opened: number })[]): AtlasInputRef[] {
  return inputs.map((source) => ({
    path: source.location,
    open: async () => {
      source.opened++;
      return { source, release: async () => {} };
    },
  }));
}

export type BuildOptions = Omit<BuildAtlasOptions, "encoder" | "compress">;

/** The one-process build of `inputs` into a new memory store. */
export async function buildOnce(
  inputs: (DatasetSource & { opened: number })[],
  opts: BuildOptions = {},
): Promise<MemoryStore> {
  const store = new MemoryStore("memory://once");
  await buildAtlasInto(store, inputs, opts);
  return store;
}

/** The one-process build of `inputs` into `store`. */
export async function buildAtlasInto(
  store: Store,
  inputs: (DatasetSource & { opened: number })[],
  opts: BuildOptions = {},
): Promise<void> {
  await buildAtlas(refs(inputs), store, { encoder, compress, ...opts });
}

/**
 * The distributed build: a scan per input, the merge into `tasks` tasks, each task (in `order`,
 * default last to first), then finalize; returns the store (finalize not run when `finalize` is false).
 */
export async function buildInSteps(
  inputs: (DatasetSource & { opened: number })[],
  tasks: number,
  opts: BuildOptions & { order?: number[]; finalize?: boolean; store?: MemoryStore } = {},
): Promise<MemoryStore> {
  const store = opts.store ?? new MemoryStore("memory://steps");
  const options: AtlasPlanOptions = { ...opts, paths: inputs.map((s) => s.location), tasks };
  for (let i = inputs.length - 1; i >= 0; i--) await scanStep(store, options, i, inputs[i]!);
  const plan = await planStep(store, options, compress);
  const order = opts.order ?? plan.tasks.map((_, t) => t).reverse();
  const sources = refs(inputs);
  for (const t of order) await taskStep(store, t, { open: (_, i) => sources[i]!.open(), encoder, compress });
  if (opts.finalize !== false) await finalizeAtlas(store);
  return store;
}

/** A store's objects, by key. */
export function objects(store: MemoryStore): Map<string, Uint8Array> {
  return new Map([...store.objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The gene names of `n` genes starting at `from`: G0, G1, ... */
export function genes(from: number, n: number, prefix = "G"): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${from + i}`);
}
