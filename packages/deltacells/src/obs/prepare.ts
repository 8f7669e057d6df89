/**
 * From a source to an obs plan: which table, which embeddings, what the index column is called.
 * Refusals carry structured hints (`field` names the offending columns and `expected` the option
 * that skips them) so a caller such as the CLI can name its own flag.
 */

import type { ColumnTableReader, DatasetSource, SourceEmbedding } from "../dataset/source.js";
import type { Compress } from "../dataset/var-table.js";
import { DeltacellsError } from "../errors.js";
import { autoEmbeddingKeys, tableReader } from "./plan.js";

/** What the writer does with obs. */
export interface ObsWriteOptions {
  /** Write no obs even when the source has a cell table (default false). */
  skip?: boolean;
  /** obs columns not to read or write (types the format cannot hold, such as timedeltas). */
  exclude?: string[];
  /**
   * obsm entries to store as float32 columns `KEY_0, KEY_1, ...`: "auto" (default) takes every
   * 2-D dense entry with at most 3 columns (UMAP, t-SNE, spatial); a list names them; [] none.
   */
  obsm?: "auto" | string[];
  /** Categorical columns with more categories are stored as strings (default 20,000). */
  maxCategories?: number;
  /** Tiles (row groups) per shard (default 1000). */
  tilesPerFile?: number;
  /**
   * zstd compressor of the shards (default: the writer's `compress`). Obs is much larger than the
   * gene files, so a middle level (the CLI uses 9) saves most of the time of level 19 for a few
   * percent of size.
   */
  compress?: Compress;
}

/** What the obs refusals below share: invalid input, in obs, of the columns `found`. */
const obsRefusal = (object: string, expected: unknown, found: string[]) =>
  ({ tag: "InvalidInput", object, field: "obs", expected, found }) as const;

/** A refusal of obs columns the format cannot hold: the columns in `found`, the option in `expected`. */
export class UnsupportedObsColumns extends DeltacellsError {
  readonly columns: string[];
  /** What each of {@link columns} is stored as in the input, as the reader said (may be ""). */
  readonly types: string[];
  constructor(
    message: string,
    options: { object: string; columns: string[]; types?: string[]; cause?: unknown },
  ) {
    const { object, columns, cause } = options;
    super(message, { ...obsRefusal(object, { exclude: columns }, columns), cause });
    this.columns = columns;
    this.types = options.types ?? columns.map(() => "");
  }

  /** The refusal of `columns` (stored as `types`) of the obs of the input at `location`. */
  static of(location: string, columns: string[], cause: unknown, types?: string[]): UnsupportedObsColumns {
    const skip = `Skip ${columns.length === 1 ? "it" : "them"} with the obs exclude option`;
    return new UnsupportedObsColumns(UnsupportedObsColumns.describe(location, columns, skip, types), {
      object: location,
      columns,
      ...(types ? { types } : {}),
      cause,
    });
  }

  /** The message of {@link of}, with `skip` saying how to skip the columns (a CLI names its flag). */
  static describe(location: string, columns: string[], skip: string, types?: string[]): string {
    const typed = columns
      .map((c, i) => `${JSON.stringify(c)}${types?.[i] ? ` (${types[i]})` : ""}`)
      .join(", ");
    return `${location}: obs has ${columns.length === 1 ? "a column" : "columns"} of a type deltacells cannot store (only categorical, numeric, boolean and string): ${typed}. ${skip}, or convert ${columns.length === 1 ? "it" : "them"} (e.g. to strings) in Python first.`;
  }
}

/**
 * A refusal of names in the exclude option that are no obs column: `unknown` (also in `found`),
 * and the columns there are, `available` (also in `expected.columns`).
 */
export class UnknownObsExclude extends DeltacellsError {
  readonly unknown: string[];
  readonly available: string[];
  constructor(message: string, options: { object: string; unknown: string[]; available: string[] }) {
    const { object, unknown, available } = options;
    super(message, obsRefusal(object, { columns: available }, unknown));
    this.unknown = unknown;
    this.available = available;
  }

  /** The refusal of `unknown` in the exclude option of the input at `location`, whose obs has `available`. */
  static of(location: string, unknown: string[], available: string[]): UnknownObsExclude {
    return new UnknownObsExclude(
      UnknownObsExclude.describe(location, unknown, available, "the obs exclude option"),
      { object: location, unknown, available },
    );
  }

  /** The message of {@link of}, with `option` naming the exclude option (a CLI names its flag). */
  static describe(location: string, unknown: string[], available: string[], option: string): string {
    const one = unknown.length === 1;
    return `${location}: obs has no column ${names(unknown)} to exclude; ${
      available.length > 0 ? `its columns are ${names(available)}` : "it has no columns"
    }. Correct the name${one ? "" : "s"} in ${option} (names are case-sensitive), or drop ${one ? "it" : "them"}.`;
  }
}

const names = (list: string[]) => list.map((n) => JSON.stringify(n)).join(", ");

/**
 * Refuses names in `exclude` that are none of the `available` columns: a typo
 * would otherwise keep the column silently, or fail later on the column it meant to skip.
 */
function refuseUnknownExcluded(location: string, available: string[], exclude: string[]): void {
  const known = new Set(available);
  const unknown = exclude.filter((n) => !known.has(n));
  if (unknown.length > 0) throw UnknownObsExclude.of(location, unknown, available);
}

/** The name the obs index column gets when the index is unnamed. */
export function defaultIndexColumn(format: string): string {
  return format === "10x-h5" || format === "10x-mtx" || format === "mtx" ? "barcode" : "obs_names";
}

/**
 * What an export needs to rebuild the AnnData obs and obsm, kept in the manifest's `metadata`:
 * the column holding the pandas index and the index's own name, and each embedding's width.
 */
export interface ObsMetadata {
  obs_index: string;
  obs_index_name: string | null;
  obs_embeddings: Record<string, number>;
  /** Categorical columns whose categories are ordered (the schema has no place for it). */
  obs_ordered: string[];
  /**
   * Columns that were pandas nullable arrays (Int32, boolean, string ...): exported as such again,
   * also when no value is missing (the schema has no place for it).
   */
  obs_nullable: string[];
  /**
   * Columns stored as text that were not text in the input, with the input's type: a numpy
   * `datetime64[ns]` column is kept as ISO-8601 text (obs has no date type). Present only when
   * there are such columns.
   */
  obs_text_from?: Record<string, string>;
}

/** An input's cell table read by row range, and the embeddings chosen, before any planning. */
export interface OpenedObs {
  /** The table without the excluded columns. */
  table: ColumnTableReader;
  /** Every column of the table, the excluded ones included. */
  available: string[];
  embeddings: [string, SourceEmbedding][];
  /** obsm keys asked for by name that this input lacks (only when opened `tolerant`). */
  missingObsm: string[];
  /** The obs column of the index when the index has no name. */
  indexColumn: string;
}

/**
 * The cell table of `source` and its embeddings, or undefined when it gets no obs. `tolerant`
 * (one input of several) accepts excluded names and obsm keys this input does not have: the
 * caller checks them against all the inputs.
 */
export async function openObs(
  source: DatasetSource,
  opts: ObsWriteOptions = {},
  tolerant = false,
): Promise<OpenedObs | undefined> {
  // A cell table of positions only (no names, no columns) is not worth a sidecar.
  if (opts.skip || !source.obs || source.unnamed?.cells) return undefined;
  const exclude = opts.exclude ?? [];
  const excluded = new Set(exclude);
  let table: ColumnTableReader;
  try {
    // A reader by row range when the source has one: only a tile of each column is held at once.
    const reader = source.nCells > 0 ? await source.obsReader?.({ exclude }) : undefined;
    table = reader ?? tableReader(await source.obs({ exclude }), source.location, source.nCells);
  } catch (err) {
    const { columns, types } = err as { columns?: unknown; types?: unknown };
    if (Array.isArray(columns)) {
      const described =
        Array.isArray(types) && types.length === columns.length ? (types as string[]) : undefined;
      throw UnsupportedObsColumns.of(source.location, columns as string[], err, described);
    }
    throw err;
  }
  const available = [...(table.excluded ?? []), ...table.columns.map((c) => c.name)];
  if (!tolerant) refuseUnknownExcluded(source.location, available, exclude);
  table = { ...table, columns: table.columns.filter((c) => !excluded.has(c.name)) };
  let embeddings: [string, SourceEmbedding][] = [];
  const missingObsm: string[] = [];
  const choice = opts.obsm ?? "auto";
  if (source.obsm && source.obsmKeys && (choice === "auto" || choice.length > 0)) {
    if (choice === "auto") {
      embeddings = await autoEmbeddings(source);
    } else {
      const keys = tolerant ? await source.obsmKeys() : choice;
      const wanted = choice.filter((k) => keys.includes(k));
      missingObsm.push(...choice.filter((k) => !keys.includes(k)));
      const entries = await source.obsm(wanted);
      embeddings = wanted.map((k) => [k, entries[k]!]);
    }
  } else if (Array.isArray(choice) && choice.length > 0) {
    if (!tolerant) {
      throw new DeltacellsError(
        `${source.location}: obsm entries ${choice.join(", ")} were asked for, but a ${source.format} input has no obsm`,
        { tag: "InvalidInput", object: source.location, field: "obsm", found: choice },
      );
    }
    missingObsm.push(...choice);
  }
  return { table, available, embeddings, missingObsm, indexColumn: defaultIndexColumn(source.format) };
}

/**
 * The obsm entries chosen by default, read one at a time so that only one wide entry (a 50-column
 * X_pca, say) is in memory at once before it is dropped; entries the reader cannot represent
 * (strings, awkward arrays) are not embeddings and are skipped.
 */
async function autoEmbeddings(source: DatasetSource): Promise<[string, SourceEmbedding][]> {
  const out: [string, SourceEmbedding][] = [];
  for (const key of (await source.obsmKeys?.()) ?? []) {
    let entry: SourceEmbedding | undefined;
    try {
      entry = (await source.obsm!([key]))[key];
    } catch {
      continue;
    }
    if (entry && autoEmbeddingKeys({ [key]: entry }).length === 1) out.push([key, entry]);
  }
  return out;
}
