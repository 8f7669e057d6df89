/**
 * The sporadik companion of a dataset (`convert --sporadik`): a sporadik store inside the dataset's
 * prefix, at the path named by the manifest's `metadata.sporadik`, holding the same cells x genes
 * counts with genes in the source's order. It answers "one gene across all cells" in two reads,
 * which the tiles (built to stream whole cells) cannot; the viewer colours cells by it.
 *
 * `convert --sporadik` (one input or an atlas) writes it from the same cells as the tiles, in the
 * tile pass, under the conversion's staging prefix (`companion` of `convertToDataset` and
 * `buildAtlasAt`): the dataset moves into place with it, named, or not at all.
 *
 * `append --sporadik` writes it again from the dataset once the cells are added (the old cells
 * are read back from their tiles), and `finalize --sporadik` from the atlas its tasks wrote: the
 * store (block last), then the manifest again with the companion named. A run cut anywhere leaves
 * a valid dataset that names no companion, or names one that is complete. After it, every command
 * writes the statistics and the rows in embedding order the same way ({@link writeCompanionParts}).
 */
import {
  COMPANION_PATH,
  companionOf,
  type Dataset,
  embeddingRowsOf,
  nameCompanion,
  nnzOf,
  openStats,
  type WriteStatsResult,
} from "@deltacells/core";
import { type CompanionWriter, openDataset, writeDatasetStats } from "@deltacells/core/node";
import { describe as describeStore } from "@deltacells/sporadik";
import { joinLocation, type Store } from "@deltacells/storage";
import { localPath } from "@deltacells/storage/node";
import { validateSporadik } from "../inspect/sporadik.js";
import type { Locations } from "../locations.js";
import type { ProgressBar } from "../progress.js";
import { type EmbeddingRowsReport, type RowsChoice, writeRowsInEmbeddingOrder } from "./embedding-rows.js";
import { writeStoreAt } from "./sporadik.js";

/** What a written companion reports, as the commands' summaries show it. */
export interface CompanionReport {
  json: { output: string; bytes: number; checksums: boolean };
}

/**
 * The companion's writer for `convertToDataset` and `buildAtlasAt` (`companion`): both layouts,
 * with maxima, at the location it is given under the staging prefix; `report()` says what it
 * wrote once it is complete (where it is once the dataset is in place at `output`). With
 * `checksums` (the default of `--sporadik`) every chunk carries zstd's content checksum, which the
 * viewer's reader (zarrita's WebAssembly zstd) verifies as it decodes. The bar shows the tiles'
 * pass, then the companion's genes.
 */
export function companionWriter(
  locations: Locations,
  o: { output: string; threads: number; bar: ProgressBar; checksums: boolean },
): { write: CompanionWriter; report(): CompanionReport | undefined } {
  let report: CompanionReport | undefined;
  const write: CompanionWriter = async (rows, to) => {
    const { store } = await writeStoreAt(locations, to.location, rows, {
      source: o.output,
      shape: [to.nCells, to.nGenes],
      nnz: to.nnz,
      axes: [0, 1],
      byteAddressable: false,
      checksums: o.checksums,
      // Written while the tiles' pass holds its own blocks and tiles: the genes-contiguous layout
      // is transposed through temporary files (under the staging prefix) rather than in memory,
      // so the companion adds little to the conversion's peak. The bytes are the same.
      transposeMemory: 0,
      threads: o.threads,
      // The staging prefix is the conversion's own: it is dropped after a failure anyway.
      removeOnFailure: true,
      bar: o.bar,
      rowsPhase: undefined,
    });
    report = {
      json: {
        output: locations.openCounted(joinLocation(o.output, COMPANION_PATH)).url,
        bytes: store.stats.bytesWritten,
        checksums: o.checksums,
      },
    };
  };
  return { write, report: () => report };
}

/** Options of {@link writeCompanion}. */
export interface WriteCompanionOptions {
  /** Threads of the tiles' decoding and of the companion's encoding (`--threads`). */
  threads: number;
  /** The command's bar: the companion's cells, then its genes. */
  bar: ProgressBar;
  /**
   * zstd's content checksum in every chunk (the default of `--sporadik`; `--no-checksums`), which
   * the viewer's reader (zarrita's WebAssembly zstd) verifies as it decodes.
   */
  checksums: boolean;
  /**
   * Delete a writer lock a killed run left in the companion's folder first (`--break-lock`); the
   * caller holds the dataset's own lock, so no live writer can hold it.
   */
  breakLock: boolean;
  /**
   * The command writing (`deltacells append`, `deltacells finalize`): the companion's writer lock
   * records it, so a second writer's refusal names the command that holds the companion.
   */
  writer: string;
}

/**
 * Writes the companion of the dataset at `output` from its tiles (after an append, or the tasks of
 * an atlas), then names it in the manifest. The caller holds the dataset's writer lock.
 */
export async function writeCompanion(
  locations: Locations,
  output: string,
  o: WriteCompanionOptions,
): Promise<CompanionReport> {
  const { convertToSporadik } = await import("./sporadik.js");
  const result = await convertToSporadik(locations, {
    input: output,
    output: joinLocation(output, COMPANION_PATH),
    axes: [0, 1],
    byteAddressable: false,
    checksums: o.checksums,
    // The dataset's own companion, written again after an append: replaced, staged (the old
    // one stays readable until the new one is complete).
    overwrite: true,
    breakLock: o.breakLock,
    writer: o.writer,
    maxNnz: undefined,
    // The transposition's temporary folder in the dataset's own folder, whether the companion is
    // written in place or staged: a run killed while it is there leaves it where the next run
    // looks for killed runs' folders, and removes it.
    tmpDir: localPath(output),
    threads: o.threads,
    inputOptions: {},
    bar: o.bar,
  });
  await nameCompanion(locations.openCounted(output), COMPANION_PATH);
  return { json: { output: result.json.output, bytes: result.json.bytes, checksums: o.checksums } };
}

/**
 * The statistics of the dataset in `store` (docs/stats.md), written after its companion by a
 * command holding the dataset's lock (`convert`, `append` and an atlas with `--sporadik`).
 */
export async function writeStatsWithBar(
  store: Store,
  threads: number,
  bar: ProgressBar,
): Promise<WriteStatsResult> {
  bar.phase("stats");
  const result = await writeDatasetStats(store, {
    threads,
    onProgress: (done, total) => bar.update(done, total, "tiles"),
  });
  bar.finish();
  return result;
}

/** The parts of a dataset a command with `--sporadik` writes besides its tiles. */
export type CompanionPart = "companion" | "statistics" | "rows";

/** Options of {@link writeCompanionParts}. */
export interface CompanionPartsOptions {
  threads: number;
  bar: ProgressBar;
  /** The chunks of the companion and of the rows checksummed (see `--no-checksums`). */
  checksums: boolean;
  /** Whether the rows in embedding order are written (`--sporadik-rows`, `--no-sporadik-rows`). */
  rows: RowsChoice;
  /** Where the rows' temporary files go (`--tmp-dir`; default beside a local dataset). */
  tmpDir: string | undefined;
  /** Delete writer locks a killed run left in the companion's folder (`--break-lock`). */
  breakLock: boolean;
  /** The command writing, as the companion's writer lock records it ({@link WriteCompanionOptions.writer}). */
  writer: string;
  /**
   * The companion: `written` in the tiles' pass already (convert); `write` it from the tiles
   * (append: the cells changed, so every part is written again); `complete` what the manifest
   * does not name complete yet (finalize, whose run again after a cut finishes the rest).
   */
  companion: "written" | "write" | "complete";
}

/**
 * {@link CompanionPartsOptions} from a command's own flags (`--no-checksums`, `--tmp-dir`,
 * `--break-lock`), as convert, append and finalize take them.
 */
export function companionPartsFromFlags(
  values: Record<string, unknown>,
  o: Pick<CompanionPartsOptions, "threads" | "bar" | "rows" | "companion" | "writer">,
): CompanionPartsOptions {
  return {
    ...o,
    checksums: values["no-checksums"] !== true,
    tmpDir: values["tmp-dir"] as string | undefined,
    breakLock: values["break-lock"] === true,
  };
}

/** What {@link writeCompanionParts} wrote, and what it found complete and left. */
export interface CompanionPartsReport {
  /** The companion, when written here. */
  companion: CompanionReport | undefined;
  stats: WriteStatsResult | undefined;
  rows: EmbeddingRowsReport | undefined;
  /** The parts the manifest named complete, left as they were (with `companion: "complete"`). */
  kept: CompanionPart[];
}

/**
 * After the tiles of the dataset at `output` (in `store`, under the dataset's writer lock): its
 * companion, then its statistics, then its rows in embedding order (made from the companion),
 * each named in the manifest once complete.
 */
export async function writeCompanionParts(
  locations: Locations,
  output: string,
  store: Store,
  o: CompanionPartsOptions,
): Promise<CompanionPartsReport> {
  const complete =
    o.companion === "complete" ? await completeParts(locations, output) : new Set<CompanionPart>();
  const companion =
    o.companion === "written" || complete.has("companion")
      ? undefined
      : await writeCompanion(locations, output, o);
  const stats = complete.has("statistics") ? undefined : await writeStatsWithBar(store, o.threads, o.bar);
  // Made from the companion: written again with it.
  const rows =
    o.rows === "never" || (complete.has("rows") && companion === undefined)
      ? undefined
      : await writeRowsInEmbeddingOrder(locations, output, {
          choice: o.rows,
          checksums: o.checksums,
          threads: o.threads,
          tmpDir: o.tmpDir,
          say: (line) => o.bar.say(line),
        });
  const written = { companion, statistics: stats, rows };
  const kept = (["companion", "statistics", "rows"] as const).filter(
    (p) => complete.has(p) && written[p] === undefined,
  );
  return { companion, stats, rows, kept };
}

/**
 * The parts the manifest of the dataset at `output` names that are complete: named only once
 * complete, each is checked to be there as named without reading it whole (the companion's and
 * the rows' blocks, written last, describe the dataset's matrix; the statistics' index describes
 * this version of the dataset). `deltacells validate` reads them whole.
 */
async function completeParts(locations: Locations, output: string): Promise<Set<CompanionPart>> {
  const ds = await openDataset(locations.openCounted(output));
  const nnz = nnzOf(ds.manifest);
  const describes = async (rel: string | undefined, axes: number[]) => {
    if (rel === undefined) return false;
    const info = await describeStore(locations.openCounted(joinLocation(output, rel))).catch(() => undefined);
    return (
      info !== undefined &&
      info.shape[0] === ds.nCells &&
      info.shape[1] === ds.nGenes &&
      axes.every((a) => info.layouts.get(a)?.nnz === nnz)
    );
  };
  const parts = new Set<CompanionPart>();
  if (await describes(companionOf(ds), [0, 1])) parts.add("companion");
  if ((await openStats(ds).catch(() => undefined)) !== undefined) parts.add("statistics");
  const rows = (() => {
    try {
      return embeddingRowsOf(ds);
    } catch {
      return undefined;
    }
  })();
  if (await describes(rows?.path, [0])) parts.add("rows");
  return parts;
}

/** Problems of a dataset's companion: its own validation, and its shape against the manifest's. */
export async function validateCompanion(
  locations: Locations,
  ds: Dataset,
  location: string,
): Promise<{ problems: { object: string; tag: string; message: string }[]; checked: boolean }> {
  const rel = companionOf(ds);
  if (rel === undefined) return { problems: [], checked: false };
  const store = locations.openCounted(joinLocation(location, rel));
  let info: Awaited<ReturnType<typeof describeStore>>;
  try {
    info = await describeStore(store);
  } catch (err) {
    const e = err as Error & { _tag?: string };
    return {
      problems: [
        {
          object: store.url,
          tag: e._tag ?? e.name,
          message: `the manifest names a sporadik companion at ${JSON.stringify(rel)}, which cannot be read: ${e.message}`,
        },
      ],
      checked: true,
    };
  }
  const problems = [];
  const [cells, genes] = info.shape;
  if (info.shape.length !== 2 || cells !== ds.nCells || genes !== ds.nGenes) {
    problems.push({
      object: `${store.url}/zarr.json`,
      tag: "CompanionMismatch",
      message: `the companion's shape is [${info.shape.join(", ")}], the dataset's [${ds.nCells}, ${ds.nGenes}]: it holds another matrix. Convert again with --sporadik.`,
    });
  }
  const own = (await validateSporadik(store, info)).json as { problems: typeof problems };
  problems.push(...own.problems);
  return { problems, checked: true };
}
