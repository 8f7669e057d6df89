/**
 * What a writing command (convert, plan, append, finalize) says about what it wrote: its `--json`
 * fields and its lines.
 */
import {
  COMPANION_PATH,
  type DatasetManifest,
  type KeepWith,
  type LeftOutPart,
  nnzOf,
  STATS_PATH,
  type WriteStatsResult,
} from "@deltacells/core";
import { count } from "./args.js";
import { formatBytes } from "./format.js";

/** The `--json` fields of a written dataset. */
export function datasetSummary(manifest: DatasetManifest, bytes: number) {
  const nnz = nnzOf(manifest);
  const tileBytes = manifest.tile_bytes.reduce((a, b) => a + b, 0);
  const textFrom = manifest.metadata.obs_text_from as Record<string, string> | undefined;
  return {
    n_cells: manifest.n_cells,
    n_genes: manifest.n_genes,
    nnz,
    n_tiles: manifest.tile_cells.length,
    bytes,
    tile_bytes: tileBytes,
    has_obs: manifest.has_obs,
    ...(textFrom ? { obs_text_from: textFrom } : {}),
    tile_bytes_per_nonzero: nnz ? tileBytes / nnz : 0,
  };
}

/** The `--json` field of a companion written with the dataset. */
export function companionSummary(companion: { json: { bytes: number; checksums: boolean } } | undefined) {
  return companion
    ? { sporadik: { path: COMPANION_PATH, bytes: companion.json.bytes, checksums: companion.json.checksums } }
    : {};
}

/** The `--json` field of statistics written with the dataset. */
export function statsSummary(stats: WriteStatsResult | undefined) {
  // Not "stats": that key is --stats' (the storage requests), which would replace it.
  return stats ? { statistics: { path: STATS_PATH, bytes: stats.bytes } } : {};
}

/** The statistics' line: where, how large, which columns have per-category sums and which not. */
export function statsText(result: WriteStatsResult): string {
  const { index } = result;
  const columns = index.columns.map((c) => `${c.name} (${c.categories})`).join(", ");
  return `statistics: ${STATS_PATH}/ (${formatBytes(result.bytes)}; per gene, per cell${columns ? `, per category of ${columns}` : ""})${
    index.skipped.length
      ? `; left out: ${index.skipped.map((s) => `${s.name} (${s.reason})`).join(", ")}`
      : ""
  }`;
}

/** The statistics' line of a writing command's report, or nothing. */
export function statsLine(stats: WriteStatsResult | undefined): string {
  return stats ? `\n  ${statsText(stats)}` : "";
}

/** The companion's line, or nothing. */
export function companionLine(
  companion: { json: { output: string; bytes: number; checksums: boolean } } | undefined,
): string {
  return companion
    ? `\n  sporadik companion: ${companion.json.output} (${formatBytes(companion.json.bytes)}, both layouts, with maxima${companion.json.checksums ? ", checksummed" : ""})`
    : "";
}

/**
 * The line saying which obs columns were stored as text though they were not text in the input
 * (datetime64 columns as ISO-8601 text), if any: what a reader of the summary would not expect.
 */
export function textFromLine(manifest: DatasetManifest): string {
  const entries = Object.entries(
    (manifest.metadata.obs_text_from as Record<string, string> | undefined) ?? {},
  );
  if (entries.length === 0) return "";
  const list = entries.map(([name, type]) => `${JSON.stringify(name)} (${type})`).join(", ");
  return `\n  obs: ${list} kept as ISO-8601 text, the only way obs can hold ${entries.length === 1 ? "it" : "them"} (pandas.to_datetime reads ${entries.length === 1 ? "it" : "them"} back)`;
}

/** The line saying which temporary files of killed writers the conversion removed, if any. */
export function leftoverLine(removed: string[]): string {
  if (removed.length === 0) return "";
  return `\n  removed ${count(removed.length, "temporary file")} left by a writer that was killed (${removed[0]}${removed.length > 1 ? ", ..." : ""})`;
}

/** The `--json` field of the axes the input named nothing along: ["genes", "cells"], or fewer. */
export function unnamedAxes(unnamed: { cells: boolean; genes: boolean } | undefined): ("genes" | "cells")[] {
  return [...(unnamed?.genes ? ["genes" as const] : []), ...(unnamed?.cells ? ["cells" as const] : [])];
}

/** The lines saying which axes have only positions for names, and the flag that names them. */
export function unnamedLines(axes: ("genes" | "cells")[], manifest: DatasetManifest): string {
  let out = "";
  if (axes.includes("genes"))
    out += `\n  genes unnamed: the input names none, so they are named by position (0 .. ${(manifest.n_genes - 1).toLocaleString("en-US")}); name them with --genes FILE (one a line, or a 10x features.tsv)`;
  if (axes.includes("cells"))
    out += `\n  cells unnamed: the input names none, so no cell table (obs) was stored; name them with --barcodes FILE (one a line)`;
  return out;
}

/** The flag of `convert` that keeps a part, when there is one. */
function keepFlag(keep: KeepWith | undefined): string | undefined {
  if (keep === undefined) return undefined;
  if (keep.kind === "obsm") return `--obsm ${keep.keys.join(",")}`;
  if (keep.path.startsWith("layers/")) return `--layer ${keep.path.slice("layers/".length)}`;
  if (keep.path === "raw/X" || keep.path === "raw.X") return "--raw";
  return undefined; // X: the default, without --layer or --raw
}

/** The `--json` field listing what the input holds that the dataset does not, with the flag that keeps each. */
export function notStoredSummary(parts: LeftOutPart[]) {
  return parts.map(({ part, reason, keep }) => {
    const flag = keepFlag(keep);
    return { part, reason, ...(flag ? { flag } : {}) };
  });
}

/** The lines of what was not stored, each with why and the flag that would keep it. */
export function notStoredLines(parts: LeftOutPart[]): string {
  if (parts.length === 0) return "";
  const lines = parts.map(({ part, reason, keep }) => {
    const flag = keepFlag(keep);
    const how =
      keep?.kind === "matrix"
        ? `; ${flag ?? "leaving out --layer and --raw"} converts it instead`
        : flag
          ? `; ${flag} keeps it`
          : "";
    return `\n    ${part}: ${reason}${how}`;
  });
  return `\n  not stored (${count(parts.length, "part")} of the input):${lines.join("")}`;
}
