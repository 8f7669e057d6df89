/**
 * `deltacells obs DATASET`: the obs schema, or rows of chosen obs columns, read through the
 * local Arrow cache (each column fetched once per machine).
 */

import type { Dataset } from "@deltacells/core";
import { cacheLocalizer, obsCacheRoot } from "@deltacells/core/node";
import { COMMON_HELP, cellRange, count, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import { formatCount } from "../format.js";
import { openCountedDataset } from "../io.js";

export const OBS_HELP = `usage: deltacells obs DATASET [--columns A,B] [--cells A:B] [options]

Print a dataset's obs (the per-cell table written by convert: the input's obs with its index,
10x barcodes, embedding columns such as X_umap_0). Without --columns, the schema: each column's
name, kind (category, numeric, bool, string), Arrow type and number of categories. With
--columns, a header and one tab-separated line per cell (categories as their labels, missing
values empty); with --json, {"columns": [names], "rows": [[...], ...]} with null for missing.
Columns are fetched once into the local cache ($DELTACELLS_CACHE, $XDG_CACHE_HOME/deltacells or
~/.cache/deltacells) and read from there afterwards.

With --localize, the columns (default: every one; the index column, the cells' names, always)
are fetched into the cache and their files listed instead of printed: each is an uncompressed Arrow IPC file, one record batch per tile, for
a program that maps it (the Python package does). With --json, {"dataset", "n_cells",
"fingerprint", "cache_dir", "n_tiles", "index", "index_name", "ordered", "nullable", "columns":
[{"name", "kind", "arrow_type", "categories", "path"}]}; "index" is null when the dataset names no
index column (one written by another implementation): its cells are then numbered.

options:
  --columns A,B    the columns to print (all: every column)
  --cells A:B      cells A .. B-1 only (either side may be omitted)
  --localize       fetch the columns into the cache and list their files
  --cache-dir DIR  the cache folder (default as above)
${COMMON_HELP}`;

/** A JSON-safe value: bigints as numbers when exact, else as strings. */
function jsonValue(v: unknown): unknown {
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  return v ?? null;
}

/** A TSV field: missing values empty, tabs, newlines and backslashes escaped. */
function tsvField(v: unknown): string {
  if (v === null || v === undefined) return "";
  return String(v).replace(
    /[\\\t\n\r]/g,
    (c) => ({ "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" })[c]!,
  );
}

/** The names of `--columns A,B`, at least one. */
function list(spec: string): string[] {
  const names = spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 0) throw new UsageError(`--columns needs column names, got ${JSON.stringify(spec)}`);
  return names;
}

/** `--localize`: the columns `names` in the cache, and where their files are. */
async function localize(
  ds: Dataset,
  names: string[],
  cacheDir: string | undefined,
): Promise<Omit<CommandResult, "store">> {
  const md = ds.manifest.metadata as Record<string, unknown>;
  // The column whose values are the cells' names (AnnData's obs_names), as export rebuilds it;
  // null when the metadata names none (another writer's dataset): the cells are then numbered.
  const index = typeof md.obs_index === "string" ? md.obs_index : null;
  const wanted = index === null || names.includes(index) ? names : [...names, index];
  const frame = await ds.obs(wanted, { cacheDir });
  const columns = frame.columns.map((c) => ({
    name: c.name,
    kind: c.kind,
    arrow_type: c.arrowType,
    categories: c.categories,
    path: c.path ?? null,
  }));
  const json = {
    dataset: ds.url,
    n_cells: ds.nCells,
    fingerprint: ds.manifest.obs_fingerprint,
    cache_dir: obsCacheRoot(cacheDir),
    n_tiles: ds.nTiles,
    index,
    index_name: index === null ? null : md.obs_index_name === undefined ? index : md.obs_index_name,
    ordered: md.obs_ordered ?? [],
    nullable: md.obs_nullable ?? [],
    columns,
  };
  return { text: columns.map((c) => `${c.name}\t${c.path ?? "(in memory)"}`).join("\n"), json };
}

/** The options of `deltacells obs` besides the shared ones (args.ts). */
export const OBS_COMMAND_OPTIONS = {
  columns: { type: "string" },
  cells: { type: "string" },
  localize: { type: "boolean" },
  "cache-dir": { type: "string" },
} as const;

export async function obsCommand(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, OBS_COMMAND_OPTIONS, ["DATASET"]);
  if (values.help) return { text: OBS_HELP };
  const { store, ds } = await openCountedDataset(locations, positionals[0]!, undefined, {
    obsLocalizer: cacheLocalizer(),
  });
  // A dataset without obs is refused by obsSchema (NotFound, field has_obs): the dataset's
  // content, not a mistake on the command line.
  const schema = await ds.obsSchema();
  const spec = values.columns as string | undefined;
  const cacheDir = values["cache-dir"] as string | undefined;
  if (values.localize) {
    if (values.cells !== undefined)
      throw new UsageError("--cells does not apply to --localize: a column is cached whole");
    const names =
      spec === undefined || spec.trim() === "all" ? schema.columns.map((c) => c.name) : list(spec);
    return { ...(await localize(ds, names, cacheDir)), store };
  }
  if (spec === undefined) {
    if (values.cells !== undefined)
      throw new UsageError("--cells needs --columns (without them the schema is printed)");
    const lines = [
      `${ds.url}: ${count(schema.columns.length, "obs column")}, ${formatCount(ds.nCells)} cells in ${count(ds.manifest.obs_shard_bytes!.length, "shard")} of up to ${count(ds.manifest.obs_tiles_per_file!, "tile")}`,
      ...schema.columns.map(
        (c) =>
          `  ${c.name.padEnd(24)} ${c.kind.padEnd(9)} ${c.arrow_type.padEnd(7)}${c.categories ? ` ${c.categories.length} categories` : ""}`,
      ),
    ];
    return { text: lines.join("\n"), json: schema, store };
  }
  const names = spec.trim() === "all" ? schema.columns.map((c) => c.name) : list(spec);
  const [a, b] = cellRange(values.cells as string | undefined, ds.nCells);
  const frame = await ds.obs(names, { cacheDir });
  const rows = frame.rows(a, b);
  const text = [names.map(tsvField).join("\t"), ...rows.map((r) => r.map(tsvField).join("\t"))].join("\n");
  return {
    text,
    json: { columns: names, rows: rows.map((r) => r.map(jsonValue)) },
    store,
  };
}
