/**
 * `deltacells convert INPUT OUTPUT --format sporadik`: any converter input, or a deltacells
 * dataset, gathered in memory and written as a sporadik store (one layout per requested axis, with
 * maxima). The whole matrix is held because sporadik's writer takes whole layouts; the nonzero
 * bound is checked before anything is written.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { MatrixSource, OpenInputOptions } from "@deltacells/anndata/node";
import { createTilePool, type Dataset, openDataset } from "@deltacells/core";
import { writeStore } from "@deltacells/sporadik";
import { openCounted } from "./io.js";
import type { ProgressBar } from "./progress.js";
import { type Csr, concatRows, layoutsOf, type RowPart } from "./sporadik-build.js";
import { openTarget } from "./target.js";

/** The default bound on nonzeros held in memory: ~5.4 GB at the measured ~23 bytes per nonzero (README). */
export const DEFAULT_MAX_NNZ = 200_000_000;

/** The hard ceiling: `indptr` is int32 while building, as scipy keeps it for such matrices. */
export const MAX_NNZ_CEILING = 2 ** 31 - 1;

/** The matrix holds more nonzeros than the in-memory writer is allowed to gather. */
export class TooManyNonzerosError extends Error {
  readonly _tag = "TooManyNonzeros";
  constructor(
    message: string,
    /** Nonzeros found (or counted so far, when the reading stopped early). */
    readonly nnz: number,
    /** The bound in force. */
    readonly bound: number,
  ) {
    super(message);
    this.name = "TooManyNonzerosError";
  }
}

export interface SporadikConvertOptions {
  input: string;
  output: string;
  axes: number[];
  byteAddressable: boolean;
  maxNnz: number;
  /** Replace a dataset or store already at `output`. */
  overwrite: boolean;
  threads: number;
  inputOptions: OpenInputOptions;
  bar: ProgressBar;
}

function tooMany(what: string, nnz: number, bound: number, soFar: boolean): TooManyNonzerosError {
  return new TooManyNonzerosError(
    `${what} holds ${soFar ? "at least " : ""}${nnz.toLocaleString("en-US")} nonzeros, above the bound of ${bound.toLocaleString("en-US")} for --format sporadik, which builds every layout in memory (about 23 bytes per nonzero; a streaming writer is future work). Nothing was written. Raise the bound with --max-nnz N if this machine has the memory, or keep the matrix as a deltacells dataset.`,
    nnz,
    bound,
  );
}

/**
 * Whether `input` is a deltacells dataset: a folder or URL with manifest.json (any other URL is an
 * input file or store, e.g. an AnnData zarr on S3).
 */
export async function isDatasetInput(input: string): Promise<boolean> {
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(input) && !/^file:/i.test(input))
    return (await openCounted(input).get("manifest.json")) !== undefined;
  const path = /^file:\/\//i.test(input) ? fileURLToPath(input) : input;
  try {
    return statSync(path).isDirectory() && existsSync(join(path, "manifest.json"));
  } catch {
    return false;
  }
}

/** Every row block of a converter input, refused as soon as the nonzeros pass the bound. */
async function gatherInput(source: MatrixSource, maxNnz: number, bar: ProgressBar): Promise<Csr> {
  const parts: RowPart[] = [];
  let nnz = 0;
  let cells = 0;
  bar.phase("read");
  for await (const block of source.rowBlocks()) {
    nnz += (block.indptr[block.nRows] as number) - (block.indptr[0] as number);
    if (nnz > maxNnz) throw tooMany(source.location, nnz, maxNnz, true);
    parts.push(block);
    cells += block.nRows;
    bar.update(cells, source.nCells, "cells");
  }
  bar.finish();
  return concatRows(parts, source.nGenes, nnz);
}

/** Every tile of a dataset, decoded on `threads` threads; the bound is checked from the manifest first. */
async function gatherDataset(ds: Dataset, threads: number, bar: ProgressBar): Promise<Csr> {
  const nnz = ds.manifest.tile_nnz.reduce((a, b) => a + b, 0);
  const parts: RowPart[] = [];
  bar.phase("read");
  let cells = 0;
  for await (const { tile } of ds.tiles({ prefetch: threads + 1 })) {
    parts.push({
      nRows: tile.nCells,
      indptr: tile.indptr,
      indices: tile.indices,
      data: tile.data as Int32Array,
    });
    cells += tile.nCells;
    bar.update(cells, ds.nCells, "cells");
  }
  bar.finish();
  return concatRows(parts, ds.nGenes, nnz);
}

/** Convert, write, and describe what was done for the command's text and JSON. */
export async function convertToSporadik(o: SporadikConvertOptions) {
  const started = performance.now();
  let csr: Csr;
  let columnOf: Int32Array | undefined;
  let source: { format: string; matrixPath: string };
  let geneOrder: "source" | "dataset" | "input" = "input";
  // Before the input is read: a target that cannot be written is refused at once.
  const target = await openTarget(o.input, o.output, o.overwrite);
  const store = target.store;
  if (await isDatasetInput(o.input)) {
    const pool = createTilePool({ threads: o.threads });
    try {
      const ds = await openDataset(openCounted(o.input), { decoder: pool });
      const nnz = ds.manifest.tile_nnz.reduce((a, b) => a + b, 0);
      if (nnz > o.maxNnz) throw tooMany(ds.url, nnz, o.maxNnz, false);
      // Columns go back to the source's order: that is the matrix a user converted. A dataset
      // without gene_order.npy never reordered them, or no longer knows how.
      columnOf = await ds.geneOrder();
      geneOrder = columnOf ? "source" : "dataset";
      csr = await gatherDataset(ds, o.threads, o.bar);
      source = { format: "deltacells", matrixPath: "tiles" };
    } finally {
      await pool.close();
    }
  } else {
    // Loaded only for such an input: the HDF5 reader costs seconds to start.
    const { openInput } = await import("@deltacells/anndata/node");
    const input = await openInput(o.input, o.inputOptions);
    try {
      csr = await gatherInput(input, o.maxNnz, o.bar);
      source = { format: input.format, matrixPath: input.matrixPath };
    } finally {
      await input.close();
    }
  }
  const layouts = layoutsOf(csr, o.axes, columnOf);
  let bytes: number;
  try {
    await writeStore(target.staging, layouts, { byteAddressable: o.byteAddressable, maxima: true });
    bytes = await target.commit("zarr.json");
  } catch (err) {
    await target.abandon().catch(() => undefined);
    throw err;
  }
  const seconds = (performance.now() - started) / 1000;
  const nnz = csr.data.length;
  const json = {
    input: o.input,
    output: store.url,
    format: "sporadik",
    source_format: source.format,
    matrix_path: source.matrixPath,
    n_cells: csr.nRows,
    n_genes: csr.nCols,
    nnz,
    axes: o.axes,
    byte_addressable: o.byteAddressable,
    gene_order: geneOrder,
    bytes,
    bytes_per_nonzero: nnz ? bytes / nnz : 0,
    seconds,
  };
  const order =
    geneOrder === "source"
      ? "; genes in the source's order (from gene_order.npy)"
      : geneOrder === "dataset"
        ? "; genes in the dataset's order (it has no gene_order.npy)"
        : "";
  const text = `converted ${o.input} (${source.format}, ${source.matrixPath}) -> ${store.url} (sporadik${o.byteAddressable ? ", byte-addressable" : ""})
  ${csr.nRows.toLocaleString("en-US")} cells x ${csr.nCols.toLocaleString("en-US")} genes, ${nnz.toLocaleString("en-US")} nonzeros; layouts along axes ${o.axes.join(", ")} (${o.axes.map((a) => (a === 0 ? "cells contiguous" : "genes contiguous")).join(", ")}), with maxima${order}
  ${bytes.toLocaleString("en-US")} bytes written in ${seconds.toFixed(1)} s (cell and gene names are not stored: sporadik has no place for them)`;
  return { text, json, store };
}
