/**
 * Errors of the input readers. They follow the convention of every deltacells package
 * (docs/errors.md): a `_tag`, the `object` concerned (the input's path followed by the dataset,
 * group or file inside it), `expected` and `found` where they mean something, and `cause`; one
 * constructor shape `(message, options)`. The message says what was expected, what was found and
 * what to do; `hint` says what to do in this library's terms. The base is `TaggedError` of
 * @deltacells/storage.
 */

import { TaggedError, type TaggedErrorOptions } from "@deltacells/storage";

export type AnndataErrorTag =
  /** The path is not an input format we recognise (or the forced format does not fit). */
  | "UnknownFormat"
  /** The input is damaged or inconsistent (lengths, shapes, offsets, an unparsable line). */
  | "MalformedInput"
  /** A requested matrix (layer, raw, genome, obsm entry) does not exist. */
  | "MissingMatrix"
  /** The matrix holds values that are not raw counts (negative, fractional, too large). */
  | "NotCounts"
  /** An HDF5 dataset uses a filter (compression) this reader cannot decode. */
  | "UnsupportedFilter"
  /** A valid input using a feature this reader does not implement. */
  | "Unsupported"
  /** An input given as a URL in a format read from local files only (HDF5, Matrix Market). */
  | "NotLocal"
  /** A call this library's contract rules out (more rows than announced to a block builder ...). */
  | "InvalidArgument"
  /** Reading the input made no progress for longer than allowed (HDF5 loops on some damaged files). */
  | "Stalled";

/**
 * What the caller could do instead, in this library's terms (matrix paths, option names of
 * {@link OpenInputOptions}); a command line turns it into its own flags.
 */
export type InputHint =
  /** Other matrices of the input that may hold raw counts: "layers/NAME", "raw/X" (or "raw.X"). */
  | { kind: "other-matrices"; matrices: string[] }
  /** The genomes of a multi-genome Cell Ranger file, one of which must be chosen (`genome`). */
  | { kind: "choose-genome"; genomes: string[] }
  /** An option that does not apply to this input and should be left out. */
  | { kind: "drop-option"; option: "layer" | "raw" | "transpose" | "genome" | "geneNames" | "cellNames" }
  /** Reading stopped for want of progress: more time may help (a very slow disk), `hdf5Timeout`. */
  | { kind: "raise-timeout"; option: "hdf5Timeout"; seconds: number };

/** What an {@link AnndataError} is made of, besides its message. */
export interface AnndataErrorOptions extends TaggedErrorOptions {
  tag: AnndataErrorTag;
  /**
   * The input, or the object inside it (see {@link objectIn}): `pbmc.h5ad/layers/counts`,
   * `https://host/a.zarr/X/indptr`, `run/matrix.mtx.gz`.
   */
  object?: string | undefined;
  /** What to do instead, when there is something specific. */
  hint?: InputHint | undefined;
}

/** Base of every error the readers raise on purpose; `name` is `AnndataError(TAG)`. */
export class AnndataError extends TaggedError<AnndataErrorTag> {
  /** What to do instead, when there is something specific. */
  readonly hint: InputHint | undefined;

  constructor(message: string, options: AnndataErrorOptions) {
    super(
      { package: "@deltacells/anndata", name: `AnndataError(${options.tag})` },
      options.tag,
      message,
      options,
    );
    this.hint = options.hint;
  }
}

/** The address errors give `path` inside the input at `location`: `pbmc.h5ad/layers/counts`. */
export function objectIn(location: string, path: string | undefined): string {
  if (path === undefined) return location;
  return `${location.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/** Why a value is not a count. */
export type NotCountsReason = "negative" | "not-integer" | "too-large" | "not-finite";

/** Where a refused value sits, and what the input offers instead. */
export interface NotCountsFields {
  location: string;
  /** The matrix path inside the input ("X", "raw/X", "layers/NAME", ...). */
  object: string;
  reason: NotCountsReason;
  value: number;
  cell: number;
  cellName?: string | undefined;
  gene: number;
  geneName?: string | undefined;
  /** Other matrices of the same input that may hold raw counts ("layers/counts", "raw/X"). */
  alternatives: string[];
  /** Other matrices of the input whose first values are not counts either, each with the first such value. */
  notCountsEither?: OtherMatrixSample[];
}

/** A matrix of the input other than the one read, sampled and found not to hold counts. */
export interface OtherMatrixSample {
  /** Its path ("raw.X", "layers/NAME"). */
  matrix: string;
  reason: NotCountsReason;
  value: number;
}

/** What a value that is not a count looks like, in words. */
const NOT_COUNT_WORDS: Record<NotCountsReason, string> = {
  negative: "a negative value",
  "not-integer": "a value that is not an integer",
  "too-large": "a count too large for int32",
  "not-finite": "a value that is not finite",
};

/** A matrix value that is not a non-negative integer count fitting int32; `found` is the value. */
export class NotCountsError extends AnndataError {
  declare readonly _tag: "NotCounts";
  readonly reason: NotCountsReason;
  readonly value: number;
  readonly cell: number;
  readonly cellName: string | undefined;
  readonly gene: number;
  readonly geneName: string | undefined;
  readonly alternatives: string[];
  readonly notCountsEither: OtherMatrixSample[];

  constructor(message: string, f: Omit<NotCountsFields, "location" | "object"> & { object: string }) {
    super(message, {
      tag: "NotCounts",
      object: f.object,
      expected: "a non-negative integer below 2^31",
      found: f.value,
      hint: f.alternatives.length ? { kind: "other-matrices", matrices: f.alternatives } : undefined,
    });
    this.reason = f.reason;
    this.value = f.value;
    this.cell = f.cell;
    this.cellName = f.cellName;
    this.gene = f.gene;
    this.geneName = f.geneName;
    this.alternatives = f.alternatives;
    this.notCountsEither = f.notCountsEither ?? [];
  }

  /** The refusal of the value `f` describes, with the cell and gene named and what to do. */
  static of(f: NotCountsFields): NotCountsError {
    const cell =
      f.cellName === undefined ? `cell ${f.cell}` : `cell ${f.cell} (${JSON.stringify(f.cellName)})`;
    const gene =
      f.geneName === undefined ? `gene ${f.gene}` : `gene ${f.gene} (${JSON.stringify(f.geneName)})`;
    const what = NOT_COUNT_WORDS[f.reason];
    const either = f.notCountsEither ?? [];
    const others = either.map((o) => `${o.matrix} holds ${NOT_COUNT_WORDS[o.reason]} (${o.value})`);
    const hint =
      f.alternatives.length > 0
        ? ` This input has other matrices that may hold raw counts: ${f.alternatives.join(", ")}${others.length ? ` (${others.join("; ")}: not counts either)` : ""}.`
        : others.length > 0
          ? ` Nor do its other matrices: ${others.join("; ")}. This file holds processed values only: convert the raw counts it was made from (the matrix before normalisation or scaling).`
          : " Convert the raw counts (the matrix before normalisation or scaling), not a processed matrix.";
    return new NotCountsError(
      `${f.location}: ${f.object} is not a matrix of raw counts: ${cell}, ${gene} holds ${what} (${f.value}); ` +
        `expected non-negative integers below 2^31.${hint}`,
      { ...f, object: objectIn(f.location, f.object) },
    );
  }
}

/** An HDF5 dataset compressed with a filter that cannot be decoded here; `found` is the filter id. */
export class UnsupportedFilterError extends AnndataError {
  declare readonly _tag: "UnsupportedFilter";
  readonly filterId: number;
  readonly filterName: string;
  /** Why it cannot be decoded here. */
  readonly why: string;

  constructor(
    message: string,
    options: { object: string; filterId: number; filterName: string; why: string },
  ) {
    super(message, { tag: "UnsupportedFilter", object: options.object, found: options.filterId });
    this.filterId = options.filterId;
    this.filterName = options.filterName;
    this.why = options.why;
  }

  /** The refusal of `dataset` of the file at `location`, compressed with filter `filterId`. */
  static of(location: string, dataset: string, filterId: number, filterName: string, why: string) {
    return new UnsupportedFilterError(
      `${location}: dataset ${dataset} is compressed with HDF5 filter ${filterId} (${filterName || "unnamed"}), ` +
        `which this reader cannot decode (${why}). Rewrite the file with gzip or no compression ` +
        `(e.g. anndata: adata.write_h5ad(path, compression="gzip")).`,
      { object: objectIn(location, dataset), filterId, filterName, why },
    );
  }
}

/**
 * Columns of a data frame (obs or var) whose encoding or element type has no table column here
 * (datetimes, nested frames, complex numbers, ...). `columns` names them all, so one run lists
 * every column to skip (the CLI's `--obs-exclude`) or convert in Python first.
 */
export class UnsupportedColumnsError extends AnndataError {
  declare readonly _tag: "Unsupported";
  readonly columns: string[];
  /** What each of {@link columns} is stored as (`HDF5 opaque (8 bytes ...)`, `encoding "awkward-array"`). */
  readonly types: string[];

  constructor(message: string, options: { object: string; columns: string[]; types?: string[] }) {
    super(message, { tag: "Unsupported", object: options.object, found: options.columns });
    this.columns = options.columns;
    this.types = options.types ?? options.columns.map(() => "");
  }

  /** The refusal of `columns` (stored as `types`) of data frame `frame` (obs, var) of the input at `location`. */
  static of(location: string, frame: string, columns: string[], types?: string[]): UnsupportedColumnsError {
    return new UnsupportedColumnsError(
      `${location}: ${frame} has ${columns.length === 1 ? "a column" : "columns"} of a type that cannot be stored ` +
        `(only categorical, numeric, boolean and string columns can): ${namedTypes(columns, types)}. ` +
        "Exclude them, or convert them (e.g. datetimes to strings) in Python first.",
      { object: objectIn(location, frame), columns, ...(types ? { types } : {}) },
    );
  }
}

/** `"when" (HDF5 opaque (8 bytes)), "nested" (encoding "awkward-array")`: each column and its type. */
function namedTypes(columns: readonly string[], types?: readonly string[]): string {
  return columns.map((c, i) => `${JSON.stringify(c)}${types?.[i] ? ` (${types[i]})` : ""}`).join(", ");
}

/** True when `err` is an {@link AnndataError}, optionally of the given tag. */
export function isAnndataError(err: unknown, tag?: AnndataErrorTag): err is AnndataError {
  return err instanceof AnndataError && (tag === undefined || err._tag === tag);
}
