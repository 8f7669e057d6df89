/**
 * `deltacells inspect DATASET`: what a dataset holds, from its manifest (and gene names); for a
 * sporadik store, what its description says.
 */
import { codecInfo, formatCodecInfo, nnzOf } from "@deltacells/core";
import { COMMON_HELP, count, parse } from "../args.js";
import type { CommandResult } from "../command.js";
import { formatBytes, formatCount } from "../format.js";
import { openCountedAny } from "../io.js";
import { codecJson } from "../json.js";

export const INSPECT_HELP = `usage: deltacells inspect DATASET [options]

Show a dataset's shape, tiles, sizes, bytes per nonzero, encoder settings, gene files and obs
columns (names, kinds). Reads manifest.json, var_names.txt and obs/schema.json only. DATASET is a local folder or a URL
(s3://bucket/prefix, https://...). A sporadik store (no manifest.json, a root zarr.json with the
"sporadik" block) is described instead: shape, layouts, nonzeros, dtypes, chunking, whether it
is byte-addressable and carries maxima (its metadata only). With --stats, also what decodes
tiles on this machine (native or TypeScript kernel, its instruction set, the zstd backend).

options:
${COMMON_HELP}`;

/**
 * How many cells the tiles hold, as they are: "1 tile of 700 cells" (not the tile size, 4,096, a
 * dataset smaller than one tile never fills), "5 tiles of 256 cells, the last of 83", or a range
 * when they differ (an atlas appended to).
 */
function tilesHeld(tileCells: readonly number[]): string {
  const n = tileCells.length;
  if (n === 0) return "no tiles";
  const first = tileCells[0]!;
  const last = tileCells[n - 1]!;
  if (tileCells.every((c) => c === first)) return `${count(n, "tile")} of ${count(first, "cell")}`;
  if (tileCells.slice(0, -1).every((c) => c === first) && last < first)
    return `${count(n, "tile")} of ${count(first, "cell")}, the last of ${formatCount(last)}`;
  const min = tileCells.reduce((a, b) => Math.min(a, b));
  const max = tileCells.reduce((a, b) => Math.max(a, b));
  return `${count(n, "tile")} of ${formatCount(min)} .. ${count(max, "cell")}`;
}

function quantile(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0;
}

/** The options of `deltacells inspect` besides the shared ones (args.ts). */
export const INSPECT_OPTIONS = {} as const;

export async function inspect(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, INSPECT_OPTIONS, ["DATASET"]);
  if (values.help) return { text: INSPECT_HELP };
  const opened = await openCountedAny(locations, positionals[0]!);
  if (opened.kind === "sporadik") {
    const { inspectSporadik } = await import("./sporadik.js");
    return inspectSporadik(opened.store, opened.info);
  }
  const { store, ds } = opened;
  const m = ds.manifest;
  const nnz = nnzOf(m);
  const tileBytes = m.tile_bytes.reduce((a, b) => a + b, 0);
  const sorted = [...m.tile_bytes].sort((a, b) => a - b);
  const names = await ds.geneNames();
  const info = {
    url: ds.url,
    format: m.format,
    version: m.version,
    n_cells: m.n_cells,
    n_genes: m.n_genes,
    nnz,
    density: m.n_cells && m.n_genes ? nnz / (m.n_cells * m.n_genes) : 0,
    n_tiles: ds.nTiles,
    tile_size: m.tile_size,
    tile_bytes: {
      total: tileBytes,
      min: sorted[0] ?? 0,
      median: quantile(sorted, 0.5),
      max: sorted.at(-1) ?? 0,
    },
    bytes_per_nonzero: nnz ? tileBytes / nnz : 0,
    n_chunks: m.n_chunks,
    zstd_level: m.zstd_level,
    has_gene_order: m.has_gene_order,
    has_var_names: m.has_var_names,
    has_var_table: m.has_var_table,
    has_obs: m.has_obs,
    obs_columns: [] as { name: string; kind: string; arrow_type: string; n_categories?: number }[],
    first_genes: names?.slice(0, 10) ?? [],
    metadata: m.metadata,
  };
  if (m.has_obs) {
    const schema = await ds.obsSchema();
    info.obs_columns = schema.columns.map((c) => ({
      name: c.name,
      kind: c.kind,
      arrow_type: c.arrow_type,
      ...(c.categories ? { n_categories: c.categories.length } : {}),
    }));
  }
  const obsBytes = (m.obs_shard_bytes ?? []).reduce((x, y) => x + y, 0);
  const lines = [
    `${ds.url}: ${m.format} version ${m.version}`,
    `  shape        ${formatCount(m.n_cells)} cells x ${formatCount(m.n_genes)} genes, ${formatCount(nnz)} nonzeros (density ${(info.density * 100).toFixed(2)}%)`,
    `  tiles        ${tilesHeld(m.tile_cells)}; ${formatBytes(tileBytes)} in total, per tile min ${formatBytes(info.tile_bytes.min)}, median ${formatBytes(info.tile_bytes.median)}, max ${formatBytes(info.tile_bytes.max)}`,
    `  compression  ${info.bytes_per_nonzero.toFixed(3)} bytes per nonzero; ${m.n_chunks} chunks per tile, zstd level ${m.zstd_level}`,
    `  genes        gene_order.npy ${m.has_gene_order ? "yes" : "no"}, var_names.txt ${m.has_var_names ? "yes" : "no"}, var.parquet ${m.has_var_table ? "yes" : "no"}${names ? `; first: ${names.slice(0, 5).join(", ")}${names.length > 5 ? ", ..." : ""}` : ""}`,
    `  obs          ${
      m.has_obs
        ? `${count(info.obs_columns.length, "column")} in ${count(m.obs_shard_bytes?.length ?? 0, "shard")} (${formatBytes(obsBytes)}): ${info.obs_columns
            .map((c) => `${c.name} (${c.kind}${c.n_categories !== undefined ? `, ${c.n_categories}` : ""})`)
            .join(", ")}`
        : "none"
    }`,
    `  metadata     ${JSON.stringify(m.metadata)}`,
  ];
  // With --stats, also what would decode this dataset's tiles here (native kernel or not, zstd).
  if (!values.stats) return { text: lines.join("\n"), json: info, store };
  const codec = await codecInfo();
  return {
    text: lines.join("\n"),
    json: { ...info, codec: codecJson(codec) },
    store,
    statsDetail: `codec: ${formatCodecInfo(codec)}`,
  };
}
