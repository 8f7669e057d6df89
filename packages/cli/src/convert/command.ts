/**
 * `deltacells convert INPUT OUTPUT`: any supported input to a deltacells dataset (folder or s3://),
 * or with `--format sporadik` (also from a deltacells dataset) to a sporadik store.
 */
import { availableParallelism } from "node:os";
import {
  createTilePool,
  DEFAULT_LEVEL,
  DEFAULT_N_CHUNKS,
  DEFAULT_TILE_SIZE,
  TARGET_TILE_NNZ,
  type WriteStatsResult,
} from "@deltacells/core";
import { convertToDataset, zstdCompressor } from "@deltacells/core/node";
import { isRemoteLocation } from "@deltacells/storage";
import { COMMON_HELP, count, intOption, parse, UsageError } from "../args.js";
import {
  ATLAS_HELP,
  ATLAS_PARSE_OPTIONS,
  asksForAtlas,
  atlasInputs,
  planOptions,
  readOptions,
  TASK_INDEX_VARIABLES,
  taskIndex,
} from "../atlas-options.js";
import type { CommandResult } from "../command.js";
import { formatBytes, formatCount } from "../format.js";
import { explainObsError, OBS_HELP, OBS_PARSE_OPTIONS, OBS_ZSTD_LEVEL, obsOptions } from "../obs-options.js";
import { commandBar } from "../progress.js";
import {
  companionLine,
  companionSummary,
  datasetSummary,
  leftoverLine,
  notStoredLines,
  notStoredSummary,
  statsLine,
  statsSummary,
  textFromLine,
  unnamedAxes,
  unnamedLines,
} from "../summary.js";
import { convertAtlas, convertPlanTask } from "./atlas.js";
import { companionPartsFromFlags, companionWriter, writeCompanionParts } from "./companion.js";
import { type EmbeddingRowsReport, ROWS_PARSE_OPTIONS, rowsChoice, rowsLine } from "./embedding-rows.js";
import { convertToSporadik, MAX_NNZ_CEILING } from "./sporadik.js";

/**
 * The largest `--tile-size`: a tile is decoded whole (8 bytes per cell of indptr alone), and the
 * writer's own choice never passes 4,096; 2^20 cells leaves room without inviting a typo's 10^9.
 */
const MAX_TILE_SIZE = 2 ** 20;

export const CONVERT_HELP = `usage: deltacells convert INPUT OUTPUT [options]
       deltacells convert INPUT... OUTPUT [options]      (or --inputs LIST OUTPUT: an atlas)
       deltacells convert --plan OUTPUT [--task I]       (one task of deltacells plan's plan)
       deltacells convert INPUT OUTPUT.zarr --format sporadik [--axes 0,1] [--byte-addressable | --checksums]

Convert a count matrix to a deltacells dataset. INPUT is an AnnData .h5ad or .zarr, a Cell Ranger
.h5, a 10x Matrix Market folder, a Matrix Market file or a zarr array; OUTPUT is a local folder
or an s3://bucket/prefix URL. Genes are reordered by decreasing total counts (the order is kept
in gene_order.npy). The cell table (AnnData obs with its index, 10x barcodes) and small obsm
embeddings go to the obs parquet sidecar (see --obsm). manifest.json is written last. OUTPUT
must be new or empty unless --overwrite.

Several inputs (of any kinds above, mixed) make one dataset, their cells in input order: genes
matched by var index (or --var-key) and joined (--join outer by default, as anndata.concat), in
decreasing total counts over all inputs; var.parquet the union, each gene from the first input
that has it; obs concatenated with a categorical column naming each cell's input (--source-column)
and schemas reconciled (a missing column is null, int and float become float, categories get one
vocabulary; a real conflict is refused, --obs-exclude is the way out). Inputs are opened one at a
time and memory stays that of one input's conversion. The same build across machines:
\`deltacells plan --help\`.

With --format sporadik, OUTPUT is a sporadik store (cells x genes, one layout per axis in --axes,
with maxima; the block is written last) and INPUT may also be a deltacells dataset (a folder with
manifest.json, or a URL), whose genes go back to the source's order. The matrix is streamed: memory
stays bounded whatever the number of nonzeros. The genes-contiguous layout (axis 1) is built through
temporary files (about 8 bytes per nonzero, announced before the first row is read, removed on
success, failure and Ctrl-C; ones left by a killed run are removed by the next). Cell and gene names
are not written, nor obs (the cell table of a deltacells dataset): the format has no place for
them.

options:
  --format F     deltacells (default) or sporadik
  --axes LIST    sporadik: the axes to make contiguous, 0 (cells, CSR) and/or 1 (genes, CSC); default 0,1
  --byte-addressable
                 sporadik: one uncompressed chunk per array, so a slice reads exact byte ranges
  --checksums    sporadik: zstd's content checksum in every chunk, verified on every read (Python
                 sporadik and zarr-python read and verify it too); default for the --sporadik
                 companion, off for --format sporadik (whose default bytes are Python sporadik's)
  --no-checksums the --sporadik companion without checksums (Python sporadik's default bytes)
  --tmp-dir DIR  sporadik, and --sporadik's rows in embedding order: where the temporary files go
                 (default: beside a local OUTPUT, else the system's)
  --max-nnz N    sporadik: refuse a matrix with more nonzeros (default: no bound)
  --tile-size N  cells per tile (default: as many as hold ~${formatCount(TARGET_TILE_NNZ)} nonzeros, 64 .. ${DEFAULT_TILE_SIZE}; at most ${formatCount(MAX_TILE_SIZE)})
  --chunks N     independently decodable chunks per tile (default ${DEFAULT_N_CHUNKS})
  --level N      zstd level of the tiles, 1 .. 22 (default ${DEFAULT_LEVEL})
  --layer NAME   AnnData: read layers/NAME instead of X
  --raw          AnnData: read raw/X instead of X
  --transpose    Matrix Market: the file is cells x genes (default genes x cells)
  --genes FILE   one plain .mtx INPUT (which has no features file): its gene names, one a line,
                 or a 10x features.tsv (id, name, type), gzipped or not; with any other input,
                 or several, --genes is the atlas's declared gene space (below)
  --barcodes FILE
                 one plain .mtx INPUT: its cell names, one a line (a 10x barcodes.tsv), gzipped
                 or not; they become the obs index (column "barcode"), as a 10x folder's
  --genome NAME  Cell Ranger v2 HDF5 with several genomes: the one to read
  --hdf5-timeout S
                 HDF5 inputs: stop with an error when HDF5 makes no progress for S seconds
                 (default 60; 0 waits for ever); some damaged files make HDF5 loop
  --threads N    encoding threads (default: the number of cores)
  --overwrite    replace the dataset or store already at OUTPUT (kept readable until the new
                 one is complete; objects that belong to neither are never deleted)
  --break-lock   delete a writer lock (OUTPUT/.deltacells-lock) left by a conversion that was
                 killed; only when no other conversion is writing to OUTPUT. A conversion takes
                 the lock before writing and removes it when done, failed or interrupted, so two
                 conversions into one OUTPUT never both run
  --sporadik     also write a sporadik store of the same counts at OUTPUT/sporadik/ (both layouts,
                 genes in the source's order, with maxima; named in the manifest's metadata), so
                 one gene across all cells reads in two requests (the viewer colours cells by it),
                 and the dataset's statistics at OUTPUT/stats/ (see \`deltacells stats\`);
                 when obs has an embedding (X_umap, else the first KEY_0/KEY_1 pair), also the
                 companion's rows sorted along a Hilbert curve over it at OUTPUT/sporadik-rows/
                 (with order.npy, the cell of each row; named in the manifest), so the viewer
                 reads a lasso's rows in a few requests: 25-40% of the companion's bytes more
                 and 7-11% more time, sorted through temporary files (8 bytes per nonzero, in
                 --tmp-dir or beside OUTPUT, removed when done) in memory bounded whatever the
                 number of cells
  --sporadik-rows
                 with --sporadik: the rows in embedding order, refusing a dataset without an
                 embedding (instead of leaving them out)
  --no-sporadik-rows
                 with --sporadik: no rows in embedding order
  --quiet        no progress bar
  --plan OUTPUT  run one task of the plan at OUTPUT (made by deltacells plan): its tiles and obs
                 shards, then its completion record; the index is --task I, else
                 ${TASK_INDEX_VARIABLES.join(", ")} (the first set)
  --task I       with --plan: the task to run (0-based)
${ATLAS_HELP}
${OBS_HELP}
${COMMON_HELP}`;

/** `--axes 0,1` as the sorted, distinct axes of a cells x genes matrix. */
function axesOption(spec: string | undefined): number[] {
  if (spec === undefined) return [0, 1];
  const parts = spec.split(",").map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p !== "0" && p !== "1")) {
    throw new UsageError(
      `--axes must list 0 (cells contiguous) and/or 1 (genes contiguous), e.g. 0,1 or 1, got ${JSON.stringify(spec)}`,
    );
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

/**
 * The names files of a plain `.mtx` input (`--genes`, `--barcodes`): given for one input whose
 * format is `mtx` (a local file detected as such, or a URL ending in .mtx[.gz]). `--genes` for
 * anything else is left to the atlas options; `--barcodes` is handed on, for the reader to refuse.
 */
async function mtxNames(
  inputs: string[],
  values: Record<string, unknown>,
): Promise<{ geneNames?: string; cellNames?: string }> {
  const genes = values.genes as string | undefined;
  const barcodes = values.barcodes as string | undefined;
  if (inputs.length !== 1 || (genes === undefined && barcodes === undefined)) return {};
  const input = inputs[0]!;
  let plain = /\.mtx(\.gz)?$/i.test(input);
  if (!plain && !isRemoteLocation(input)) {
    const { detectFormat } = await import("@deltacells/anndata/node");
    plain = (await detectFormat(input).catch(() => undefined)) === "mtx";
  }
  return {
    ...(plain && genes !== undefined ? { geneNames: genes } : {}),
    ...(barcodes !== undefined ? { cellNames: barcodes } : {}),
  };
}

/** The options of `deltacells convert` besides the shared ones (args.ts). */
export const CONVERT_OPTIONS = {
  "tile-size": { type: "string" },
  chunks: { type: "string" },
  level: { type: "string" },
  layer: { type: "string" },
  raw: { type: "boolean" },
  transpose: { type: "boolean" },
  genome: { type: "string" },
  "hdf5-timeout": { type: "string" },
  threads: { type: "string" },
  quiet: { type: "boolean" },
  format: { type: "string" },
  axes: { type: "string" },
  "byte-addressable": { type: "boolean" },
  checksums: { type: "boolean" },
  "no-checksums": { type: "boolean" },
  "max-nnz": { type: "string" },
  overwrite: { type: "boolean" },
  "break-lock": { type: "boolean" },
  ...OBS_PARSE_OPTIONS,
  sporadik: { type: "boolean" },
  ...ROWS_PARSE_OPTIONS,
  barcodes: { type: "string" },
  plan: { type: "string" },
  task: { type: "string" },
  ...ATLAS_PARSE_OPTIONS,
} as const;

export async function convert(argv: string[]): Promise<CommandResult> {
  const planTask = argv.some((a) => a === "--plan" || a.startsWith("--plan="));
  const { values, positionals, locations } = parse(argv, CONVERT_OPTIONS, planTask ? [] : ["ARG..."]);
  if (values.help) return { text: CONVERT_HELP };
  if (values.task !== undefined && !planTask)
    throw new UsageError("--task applies with --plan OUTPUT (a task of a plan)");
  const tileSize = intOption(values, "tile-size", undefined, 1, MAX_TILE_SIZE);
  const nChunks = intOption(values, "chunks", DEFAULT_N_CHUNKS, 1, 4096)!;
  const level = intOption(values, "level", DEFAULT_LEVEL, 1, 22)!;
  const threads = intOption(values, "threads", availableParallelism(), 1, 256)!;
  const format = (values.format as string | undefined) ?? "deltacells";
  const bar = commandBar(values);
  if (planTask) {
    return convertPlanTask({
      locations,
      output: values.plan as string,
      task: (n) => taskIndex(values, n, "task of the plan"),
      hdf5Timeout: readOptions(values).hdf5Timeout,
      threads,
      bar,
    });
  }
  const output = positionals.at(-1)!;
  const rowsWanted = rowsChoice(values);
  // The rows' temporary files: with --format sporadik, that store's own; else the rows'.
  if (values["tmp-dir"] !== undefined && format !== "sporadik" && rowsWanted === "never")
    throw new UsageError(
      "--tmp-dir applies to --format sporadik and to --sporadik's rows in embedding order only",
    );
  const inputs = await atlasInputs(positionals.slice(0, -1), values);
  if (inputs.paths.length === 0)
    throw new UsageError("expected INPUT OUTPUT, INPUT... OUTPUT or --inputs LIST OUTPUT");
  // --genes names a plain .mtx input's genes; with any other input it declares an atlas's genes.
  const names = await mtxNames(inputs.paths, values);
  const atlasValues = names.geneNames === undefined ? values : { ...values, genes: undefined };
  if (inputs.paths.length > 1 || asksForAtlas(atlasValues)) {
    if (values.barcodes !== undefined)
      throw new UsageError(
        "--barcodes names the cells of one plain .mtx input; an atlas's inputs name their own",
      );
    if (format !== "deltacells")
      throw new UsageError(
        "several inputs make a deltacells dataset; convert it to a sporadik store afterwards (deltacells convert DATASET OUT.zarr --format sporadik)",
      );
    for (const name of ["axes", "byte-addressable", "max-nnz", "checksums"]) {
      if (values[name] !== undefined) throw new UsageError(`--${name} applies to --format sporadik only`);
    }
    if (values["no-checksums"] !== undefined && !values.sporadik)
      throw new UsageError("--no-checksums applies to the --sporadik companion only");
    return convertAtlas({
      locations,
      output,
      options: await planOptions(values, inputs, { tileSize, nChunks, level, obs: obsOptions(values) }),
      hdf5Timeout: readOptions(values).hdf5Timeout,
      threads,
      overwrite: values.overwrite === true,
      breakLock: values["break-lock"] === true,
      sporadik: values.sporadik === true,
      rows: rowsWanted,
      tmpDir: values["tmp-dir"] as string | undefined,
      checksums: values["no-checksums"] !== true,
      bar,
    });
  }
  const input = positionals[0]!;
  const inputOptions = {
    layer: values.layer as string | undefined,
    raw: values.raw === true,
    transpose: values.transpose === true,
    genome: values.genome as string | undefined,
    ...names,
    hdf5Timeout: intOption(values, "hdf5-timeout", undefined, 0, 86400),
    // s3:// and http(s):// zarr inputs are read through the storage layer (credentials, retries).
    openStore: (url: string) => locations.openCounted(url),
  };
  if (values.checksums && values["no-checksums"]) {
    throw new UsageError("--checksums and --no-checksums contradict each other: give one");
  }
  if (values.checksums && values["byte-addressable"]) {
    throw new UsageError(
      "--checksums and --byte-addressable cannot be combined: a checksum covers a whole object, and a slice's byte-range read could not verify it",
    );
  }
  if (format === "sporadik") {
    for (const name of [
      "tile-size",
      "chunks",
      "level",
      "sporadik",
      "genes",
      "barcodes",
      ...Object.keys(OBS_PARSE_OPTIONS),
    ]) {
      if (values[name] !== undefined) throw new UsageError(`--${name} applies to --format deltacells only`);
    }
    return convertToSporadik(locations, {
      input,
      output,
      axes: axesOption(values.axes as string | undefined),
      byteAddressable: values["byte-addressable"] === true,
      checksums: values.checksums === true,
      maxNnz: intOption(values, "max-nnz", undefined, 1, MAX_NNZ_CEILING),
      overwrite: values.overwrite === true,
      breakLock: values["break-lock"] === true,
      writer: "deltacells convert",
      tmpDir: values["tmp-dir"] as string | undefined,
      threads,
      inputOptions,
      bar,
    });
  }
  if (format !== "deltacells") {
    throw new UsageError(`--format must be deltacells or sporadik, got ${JSON.stringify(format)}`);
  }
  for (const name of ["axes", "byte-addressable", "max-nnz"]) {
    if (values[name] !== undefined) throw new UsageError(`--${name} applies to --format sporadik only`);
  }
  for (const name of ["checksums", "no-checksums"]) {
    if (values[name] !== undefined && !values.sporadik)
      throw new UsageError(`--${name} applies to sporadik output only (--format sporadik or --sporadik)`);
  }

  const obs = obsOptions(values);
  const started = performance.now();
  const pool = createTilePool({ threads });
  let phase = "";
  const companion = values.sporadik
    ? companionWriter(locations, { output, threads, bar, checksums: values["no-checksums"] !== true })
    : undefined;
  let stats: WriteStatsResult | undefined;
  let rows: EmbeddingRowsReport | undefined;
  try {
    // The target is checked before the input is read: one that cannot be written is refused at once.
    const { manifest, bytes, store, source, removedTempFiles, leftOut } = await convertToDataset(
      output,
      async () => {
        // Loaded here, not at the top: the HDF5 reader costs seconds to start, and a dataset input needs none.
        const { openInput } = await import("@deltacells/anndata/node");
        return openInput(input, inputOptions);
      },
      {
        ...locations.targetOptions(),
        input,
        overwrite: values.overwrite === true,
        breakLock: values["break-lock"] === true,
        encoder: pool,
        compress: zstdCompressor(DEFAULT_LEVEL),
        tileSize,
        nChunks,
        level,
        inFlight: threads + 2,
        obs: { ...obs, compress: zstdCompressor(OBS_ZSTD_LEVEL) },
        onProgress: (p) => {
          if (p.phase !== phase) {
            phase = p.phase;
            bar.phase(p.phase === "totals" ? "pass 1" : "pass 2");
          }
          bar.update(p.cellsDone, p.nCells, "cells");
        },
        // The companion is written from the same cells as the tiles; the dataset moves into place
        // with it named. Then the statistics the viewer's markers and dot plots read (named last).
        ...(companion
          ? {
              companion: companion.write,
              afterCommit: async (store) => {
                bar.finish();
                // The tiles are written: their workers' memory goes back before the statistics
                // and the rows in embedding order add their own.
                await pool.close();
                ({ stats, rows } = await writeCompanionParts(
                  locations,
                  output,
                  store,
                  companionPartsFromFlags(values, {
                    threads,
                    bar,
                    rows: rowsWanted,
                    companion: "written",
                    writer: "deltacells convert",
                  }),
                ));
              },
            }
          : {}),
      },
    );
    const seconds = (performance.now() - started) / 1000;
    const summary = {
      input,
      output: store.url,
      source_format: source.format,
      matrix_path: source.matrixPath,
      ...datasetSummary(manifest, bytes),
      ...companionSummary(companion?.report()),
      unnamed: unnamedAxes(source.unnamed),
      not_stored: notStoredSummary(leftOut),
      removed_temp_files: removedTempFiles,
      ...statsSummary(stats),
      ...(rows ? { sporadik_rows: { ...rows } } : {}),
      seconds,
    };
    const text = `converted ${input} (${source.format}, ${source.matrixPath}) -> ${store.url}
  ${formatCount(manifest.n_cells)} cells x ${formatCount(manifest.n_genes)} genes, ${formatCount(summary.nnz)} nonzeros in ${count(manifest.tile_cells.length, "tile")}
  ${formatBytes(bytes)} written (tiles: ${summary.tile_bytes_per_nonzero.toFixed(3)} bytes per nonzero) in ${seconds.toFixed(1)} s${companionLine(companion?.report())}${statsLine(stats)}${rowsLine(rows, rowsWanted)}${textFromLine(manifest)}${unnamedLines(summary.unnamed, manifest)}${notStoredLines(leftOut)}${leftoverLine(removedTempFiles)}`;
    return { text, json: summary, store };
  } catch (err) {
    throw explainObsError(err);
  } finally {
    bar.finish();
    await pool.close();
  }
}
