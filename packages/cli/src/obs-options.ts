/** `convert`'s obs options (`--obs-exclude`, `--obsm`, `--max-categories`, `--obs-tiles-per-file`, `--no-obs`). */
import {
  DEFAULT_MAX_CATEGORIES,
  DEFAULT_OBS_TILES_PER_FILE,
  DeltacellsError,
  type ObsWriteOptions,
  UnknownObsExclude,
  UnsupportedObsColumns,
} from "@deltacells/core";
import { intOption, UsageError } from "./args.js";
import { formatCount } from "./format.js";

/**
 * zstd level of the obs shards: at 1,000,000 cells x 12 columns level 19 took longer than the
 * tiles themselves (bench/convert-rss.ts --obs); 9 keeps most of the ratio.
 */
export const OBS_ZSTD_LEVEL = 9;

export const OBS_PARSE_OPTIONS = {
  "obs-exclude": { type: "string" },
  obsm: { type: "string" },
  "max-categories": { type: "string" },
  "obs-tiles-per-file": { type: "string" },
  "no-obs": { type: "boolean" },
} as const;

export const OBS_HELP = `  --obs-exclude A,B
                 obs columns not to store (e.g. datetimes, which obs cannot hold)
  --obsm KEYS    obsm embeddings stored as float32 obs columns KEY_0, KEY_1, ...: a list
                 (e.g. X_umap,X_pca), or none; default: every 2-D entry with at most 3 columns
  --max-categories N
                 categoricals with more categories are stored as strings (default ${formatCount(DEFAULT_MAX_CATEGORIES)})
  --obs-tiles-per-file N
                 tiles (parquet row groups) per obs shard (default ${DEFAULT_OBS_TILES_PER_FILE})
  --no-obs       store no obs (cell table) at all`;

function list(spec: string): string[] {
  return spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The writer's obs options from the parsed command line. */
export function obsOptions(values: Record<string, unknown>): ObsWriteOptions {
  const obsm = values.obsm as string | undefined;
  if (obsm !== undefined && list(obsm).length === 0)
    throw new UsageError(`--obsm needs a list of obsm keys or "none", got ${JSON.stringify(obsm)}`);
  return {
    skip: values["no-obs"] === true,
    exclude: typeof values["obs-exclude"] === "string" ? list(values["obs-exclude"]) : [],
    obsm: obsm === undefined ? "auto" : obsm.trim() === "none" ? [] : list(obsm),
    maxCategories: intOption(values, "max-categories", DEFAULT_MAX_CATEGORIES, 0),
    tilesPerFile: intOption(values, "obs-tiles-per-file", DEFAULT_OBS_TILES_PER_FILE, 1),
  };
}

/** The library's refusals of obs columns, told with the flag that skips them. */
export function explainObsError(err: unknown): unknown {
  if (err instanceof UnknownObsExclude) {
    // An --obs-exclude name that is no column: the same error, naming the flag.
    const { unknown, available } = err;
    return new DeltacellsError(UnknownObsExclude.describe(err.object!, unknown, available, "--obs-exclude"), {
      tag: err._tag,
      object: err.object,
      field: "obs",
      expected: err.expected,
      found: err.found,
      cause: err,
    });
  }
  if (!(err instanceof UnsupportedObsColumns)) return err;
  const flag = `--obs-exclude ${err.columns.join(",")}`;
  const skip = `Add ${flag} to convert without ${err.columns.length === 1 ? "it" : "them"}`;
  return new DeltacellsError(UnsupportedObsColumns.describe(err.object!, err.columns, skip, err.types), {
    tag: "InvalidInput",
    object: err.object,
    field: "obs",
    expected: { flag },
    found: err.columns,
    cause: err,
  });
}
