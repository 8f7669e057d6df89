/**
 * `deltacells obs DATASET`: the obs schema, or rows of chosen obs columns, read through the
 * local Arrow cache (each column fetched once per machine).
 */

import { cacheLocalizer } from "@deltacells/core/node";
import { COMMON_HELP, cellRange, count, parse, UsageError } from "../args.js";
import { openCountedDataset } from "../io.js";
import type { CommandResult } from "./types.js";

export const OBS_HELP = `usage: deltacells obs DATASET [--columns A,B] [--cells A:B] [options]

Print a dataset's obs (the per-cell table written by convert: the input's obs with its index,
10x barcodes, embedding columns such as X_umap_0). Without --columns, the schema: each column's
name, kind (category, numeric, bool, string), Arrow type and number of categories. With
--columns, a header and one tab-separated line per cell (categories as their labels, missing
values empty); with --json, {"columns": [names], "rows": [[...], ...]} with null for missing.
Columns are fetched once into the local cache ($DELTACELLS_CACHE, $XDG_CACHE_HOME/deltacells or
~/.cache/deltacells) and read from there afterwards.

options:
  --columns A,B    the columns to print (all: every column)
  --cells A:B      cells A .. B-1 only (either side may be omitted)
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

export async function obsCommand(argv: string[]): Promise<CommandResult> {
  const { values, positionals } = parse(
    argv,
    { columns: { type: "string" }, cells: { type: "string" }, "cache-dir": { type: "string" } },
    ["DATASET"],
  );
  if (values.help) return { text: OBS_HELP };
  const { store, ds } = await openCountedDataset(positionals[0]!, undefined, {
    obsLocalizer: cacheLocalizer(),
  });
  if (!ds.manifest.has_obs) {
    throw new UsageError(
      `${ds.url} has no obs: it was converted from an input without a cell table (or with --no-obs)`,
    );
  }
  const schema = await ds.obsSchema();
  const spec = values.columns as string | undefined;
  if (spec === undefined) {
    if (values.cells !== undefined)
      throw new UsageError("--cells needs --columns (without them the schema is printed)");
    const lines = [
      `${ds.url}: ${schema.columns.length} obs columns, ${ds.nCells.toLocaleString("en-US")} cells in ${count(ds.manifest.obs_shard_bytes!.length, "shard")} of up to ${count(ds.manifest.obs_tiles_per_file!, "tile")}`,
      ...schema.columns.map(
        (c) =>
          `  ${c.name.padEnd(24)} ${c.kind.padEnd(9)} ${c.arrow_type.padEnd(7)}${c.categories ? ` ${c.categories.length} categories` : ""}`,
      ),
    ];
    return { text: lines.join("\n"), json: schema, store };
  }
  const names =
    spec.trim() === "all"
      ? schema.columns.map((c) => c.name)
      : spec
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s.length > 0);
  if (names.length === 0) throw new UsageError(`--columns needs column names, got ${JSON.stringify(spec)}`);
  const [a, b] = cellRange(values.cells as string | undefined, ds.nCells);
  const frame = await ds.obs(names, { cacheDir: values["cache-dir"] as string | undefined });
  const rows = frame.rows(a, b);
  const text = [names.map(tsvField).join("\t"), ...rows.map((r) => r.map(tsvField).join("\t"))].join("\n");
  return {
    text,
    json: { columns: names, rows: rows.map((r) => r.map(jsonValue)) },
    store,
  };
}
