/**
 * `deltacells convert INPUT OUTPUT --format sporadik`: any converter input (`MatrixSource.rowBlocks`
 * of @deltacells/anndata), or a deltacells dataset (`datasetRowBlocks` of @deltacells/core), written
 * by `convertToStore` of @deltacells/sporadik/node (one layout per requested axis, with maxima, in
 * bounded memory whatever the number of nonzeros; temporary space and --max-nnz checked before the
 * first row). This file is the command's part: the target (staging, --overwrite), the input, the
 * messages and the report.
 * Axis 1 is transposed in memory up to 64 MiB and through temporary files past that (8 bytes per
 * int32 nonzero at most, in `--tmp-dir` or beside the output), announced before the first row is
 * read and removed on success, failure and Ctrl-C.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { OpenInputOptions } from "@deltacells/anndata/node";
import { createTilePool, datasetRowBlocks, nnzOf, openDataset } from "@deltacells/core";
import { type ConversionTarget, openTarget } from "@deltacells/core/node";
import { convertToStore, type RowBlock, withFileParts } from "@deltacells/sporadik/node";
import { isRemoteLocation, localPath, withStats } from "@deltacells/storage/node";
import { formatBytes, formatCount } from "../format.js";
import type { Locations } from "../locations.js";
import type { ProgressBar } from "../progress.js";

/** The hard ceiling of `--max-nnz`: what a JavaScript number counts exactly. */
export const MAX_NNZ_CEILING = Number.MAX_SAFE_INTEGER;

export interface SporadikConvertOptions {
  input: string;
  output: string;
  axes: number[];
  byteAddressable: boolean;
  /** zstd's content checksum in every chunk (`--checksums`). */
  checksums: boolean;
  /** An explicit bound on nonzeros, or undefined for none. */
  maxNnz: number | undefined;
  /** Replace a dataset or store already at `output` (staged, moved into place once complete). */
  overwrite: boolean;
  /** Delete a stale writer lock first (`--break-lock`). */
  breakLock: boolean;
  /**
   * The command writing, as the output's writer lock records it and another writer's refusal
   * names it: `deltacells convert`, or the command writing a dataset's companion.
   */
  writer: string;
  threads: number;
  /** Where the temporary folder goes (default: beside a local output, else the system's). */
  tmpDir: string | undefined;
  inputOptions: OpenInputOptions;
  bar: ProgressBar;
}

/**
 * Whether `input` is a deltacells dataset: a folder or URL with manifest.json (any other URL is an
 * input file or store, e.g. an AnnData zarr on S3).
 */
export async function isDatasetInput(locations: Locations, input: string): Promise<boolean> {
  if (isRemoteLocation(input)) return (await locations.openCounted(input).get("manifest.json")) !== undefined;
  const path = localPath(input) ?? input;
  try {
    return statSync(path).isDirectory() && existsSync(join(path, "manifest.json"));
  } catch {
    return false;
  }
}

/** What {@link writeStoreAt} writes, and how the command shows it. */
export interface StoreAtOptions {
  /** The matrix as messages name it. */
  source: string;
  shape: [number, number];
  nnz?: number;
  nnzAtMost?: number;
  axes: number[];
  byteAddressable: boolean;
  checksums: boolean;
  maxNnz?: number;
  tmpDir?: string;
  /** Bytes of the transposition kept in memory (default: the writer's, `TRANSPOSE_MEMORY`); the rest goes to temporary files. */
  transposeMemory?: number;
  threads: number;
  /** Remove a local output after a failure (the run created it). */
  removeOnFailure: boolean;
  bar: ProgressBar;
  /** The bar's phase while rows are written, or undefined when another writer's bar shows them. */
  rowsPhase: string | undefined;
}

/**
 * A sporadik store written at `location` from `blocks` by `convertToStore`, as the command does
 * it: a folder's chunks straight to their files (synced all at once before the block), counted
 * for `--stats` and the report, the checks' lines on stderr with the bar, the bar's phases.
 */
export async function writeStoreAt(
  locations: Locations,
  location: string,
  blocks: AsyncIterable<RowBlock>,
  o: StoreAtOptions,
) {
  const local = localPath(location);
  const say = (line: string) => o.bar.say(line);
  const raw = locations.open(location);
  // A folder output: chunks written straight to their files and synced all at once before the
  // block (by the writer's flush, which the stats wrapper passes on). A byte-addressable array is
  // one object as large as the array: written in parts (to a file, or as an S3 multipart upload as
  // the bytes come), it is never held whole; the stats wrapper counts it as a set of its length.
  const store = withStats(local ? withFileParts(raw, local, { deferSync: true }) : raw);
  let phase = "";
  let rowsSeconds = 0;
  const timing = { rowsStart: performance.now(), columnsStart: 0 };
  if (o.rowsPhase !== undefined) o.bar.phase(o.rowsPhase);
  const result = await convertToStore(store, blocks, {
    source: o.source,
    ...(o.maxNnz !== undefined ? { maxNnz: o.maxNnz } : {}),
    ...(local !== undefined ? { folder: local } : {}),
    removeOnFailure: o.removeOnFailure,
    optionNames: { maxNnz: "--max-nnz", tmpDir: "--tmp-dir" },
    onStaleSpill: (s) =>
      say(
        s.removed
          ? `removed ${s.path} (${formatBytes(s.bytes)}), left by an earlier conversion that was killed`
          : `kept ${s.path} (${formatBytes(s.bytes)}): another conversion (pid ${s.owner?.pid ?? "?"}) may still use it; remove it if not`,
      ),
    onTemporarySpace: (t) => {
      say(
        `temporary space: about ${t.bytes !== undefined ? formatBytes(t.bytes) : `${t.bytesPerNonzero} bytes per nonzero`} in ${t.folder}${t.available !== undefined ? ` (${formatBytes(t.available)} free)` : ""}, removed when done`,
      );
      timing.rowsStart = performance.now();
    },
    shape: o.shape,
    axes: o.axes,
    byteAddressable: o.byteAddressable,
    checksums: o.checksums,
    dtype: "int32",
    ...(o.nnz !== undefined ? { nnz: o.nnz } : {}),
    ...(o.nnzAtMost !== undefined ? { nnzAtMost: o.nnzAtMost } : {}),
    ...(o.tmpDir !== undefined ? { tmpDir: o.tmpDir } : {}),
    ...(o.transposeMemory !== undefined ? { transposeMemory: o.transposeMemory } : {}),
    threads: o.threads,
    removeOnSignal: true,
    onProgress: (p) => {
      if (p.phase !== phase) {
        phase = p.phase;
        if (phase === "columns") {
          timing.columnsStart = performance.now();
          rowsSeconds = (timing.columnsStart - timing.rowsStart) / 1000;
        }
        if (phase === "columns") o.bar.phase("genes");
        else if (o.rowsPhase !== undefined) o.bar.phase(o.rowsPhase);
      }
      if (phase === "columns") o.bar.update(p.done, p.total, "genes");
      else if (o.rowsPhase !== undefined) o.bar.update(p.done, p.total, "cells");
    },
  });
  if (phase !== "columns") rowsSeconds = (performance.now() - timing.rowsStart) / 1000;
  const columnsSeconds = timing.columnsStart ? (performance.now() - timing.columnsStart) / 1000 : 0;
  return { result, store, rowsSeconds, columnsSeconds };
}

/** Convert, write, and describe what was done for the command's text and JSON. */
export async function convertToSporadik(locations: Locations, o: SporadikConvertOptions) {
  const started = performance.now();
  // Before the input is read: a target that cannot be written is refused at once. A target that
  // holds a dataset or store (with --overwrite) gets the new store staged beside it, moved into
  // place only once complete; an empty one is written directly (no block until it is complete).
  // Whether a new output can be removed whole on failure: asked before the writer lock makes the folder.
  const outPath = localPath(o.output);
  const outputExisted = outPath !== undefined && existsSync(outPath);
  const target = await openTarget(o.output, {
    ...locations.targetOptions(o.writer),
    input: o.input,
    overwrite: o.overwrite,
    breakLock: o.breakLock,
  });
  try {
    return await convertLocked(locations, o, target, outputExisted, started);
  } finally {
    await target.lock.release();
  }
}

/** {@link convertToSporadik} once the target's writer lock is held. */
async function convertLocked(
  locations: Locations,
  o: SporadikConvertOptions,
  target: ConversionTarget,
  outputExisted: boolean,
  started: number,
) {
  const writeTo = target.replacing ? target.stagingLocation : o.output;
  const local = localPath(writeTo);
  const existed = target.replacing ? local !== undefined && existsSync(local) : outputExisted;
  const say = (line: string) => o.bar.say(line);
  if (target.removedTempFiles.length > 0)
    say(`removed ${target.removedTempFiles.length} temporary file(s) left by a writer that was killed`);

  let close: () => Promise<void> = async () => undefined;
  let nRows: number;
  let nCols: number;
  let nnzKnown: number | undefined;
  /** An input's stored entries: at least its nonzeros (explicit zeros are left out of the rows). */
  let nnzAtMost: number | undefined;
  let blocks: AsyncIterable<RowBlock>;
  /** What the input is, and what messages call it. */
  let source: { format: string; matrixPath: string; name: string };
  let geneOrder: "source" | "dataset" | "input" = "input";
  if (await isDatasetInput(locations, o.input)) {
    const pool = createTilePool({ threads: o.threads });
    close = () => pool.close();
    const ds = await openDataset(locations.openCounted(o.input), { decoder: pool });
    nnzKnown = nnzOf(ds.manifest);
    // Columns go back to the source's order: that is the matrix a user converted. A dataset
    // without gene_order.npy never reordered them, or no longer knows how.
    const rows = await datasetRowBlocks(ds, { prefetch: o.threads + 1 });
    geneOrder = rows.geneOrder;
    [nRows, nCols] = [ds.nCells, ds.nGenes];
    blocks = rows.blocks;
    source = { format: "deltacells", matrixPath: "tiles", name: ds.url };
  } else {
    // Loaded only for such an input: the HDF5 reader costs seconds to start.
    const { openInput } = await import("@deltacells/anndata/node");
    const input = await openInput(o.input, o.inputOptions);
    close = () => input.close();
    [nRows, nCols] = [input.nCells, input.nGenes];
    nnzAtMost = input.nnz;
    // the writer is done with a block when it asks for the next (writeRows has returned)
    blocks = input.rowBlocks({ reuse: true });
    source = { format: input.format, matrixPath: input.matrixPath, name: o.input };
  }

  try {
    const { result, store, rowsSeconds, columnsSeconds } = await writeStoreAt(locations, writeTo, blocks, {
      source: source.name,
      shape: [nRows, nCols],
      ...(nnzKnown !== undefined ? { nnz: nnzKnown } : {}),
      ...(nnzAtMost !== undefined ? { nnzAtMost } : {}),
      axes: o.axes,
      byteAddressable: o.byteAddressable,
      checksums: o.checksums,
      ...(o.maxNnz !== undefined ? { maxNnz: o.maxNnz } : {}),
      ...(o.tmpDir !== undefined ? { tmpDir: o.tmpDir } : {}),
      threads: o.threads,
      // A store this run created and did not finish is removed; an existing output is left as it is.
      removeOnFailure: !existed,
      bar: o.bar,
      rowsPhase: "cells",
    });
    if (target.replacing) await target.commit("zarr.json");
    o.bar.finish();
    const seconds = (performance.now() - started) / 1000;
    const bytes = store.stats.bytesWritten;
    const json = {
      input: o.input,
      output: target.store.url,
      format: "sporadik",
      source_format: source.format,
      matrix_path: source.matrixPath,
      n_cells: nRows,
      n_genes: nCols,
      nnz: result.nnz,
      axes: o.axes,
      byte_addressable: o.byteAddressable,
      checksums: o.checksums,
      gene_order: geneOrder,
      bytes,
      bytes_per_nonzero: result.nnz ? bytes / result.nnz : 0,
      temp_bytes_spilled: result.bytesSpilled,
      temp_peak_bytes: result.peakSpillBytes,
      transposed_in_memory_bytes: result.bytesInMemory,
      temp_dir: result.temporary.folder,
      seconds,
      seconds_rows: rowsSeconds,
      seconds_genes: columnsSeconds,
    };
    const order =
      geneOrder === "source"
        ? "; genes in the source's order (from gene_order.npy)"
        : geneOrder === "dataset"
          ? "; genes in the dataset's order (it has no gene_order.npy)"
          : "";
    const text = `converted ${o.input} (${source.format}, ${source.matrixPath}) -> ${target.store.url} (sporadik${o.byteAddressable ? ", byte-addressable" : ""}${o.checksums ? ", checksummed" : ""})
  ${formatCount(nRows)} cells x ${formatCount(nCols)} genes, ${formatCount(result.nnz)} nonzeros; layouts along axes ${o.axes.join(", ")} (${o.axes.map((a) => (a === 0 ? "cells contiguous" : "genes contiguous")).join(", ")}), with maxima${order}
  ${formatBytes(bytes)} written in ${seconds.toFixed(1)} s (cell and gene names are not stored: sporadik has no place for them)`;
    const statsDetail = `temporary: ${formatBytes(result.bytesSpilled)} spilled (peak ${formatBytes(result.peakSpillBytes)}) in ${result.temporary.folder}, ${formatBytes(result.bytesInMemory)} transposed in memory; rows ${rowsSeconds.toFixed(1)} s, genes ${columnsSeconds.toFixed(1)} s`;
    return { text, json, store, statsDetail };
  } catch (error) {
    o.bar.finish();
    // A staged store is dropped: the old one stays as it was.
    if (target.replacing) await target.abandon().catch(() => undefined);
    throw error;
  } finally {
    await close();
  }
}
