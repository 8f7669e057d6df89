/**
 * Errors of the input readers. Each carries a `_tag` for cheap discrimination, the input it
 * concerns (`location`, and `object`: the dataset, group or file inside it) and, where it helps,
 * structured fields; the message says what was expected, what was found and what to do.
 */

export type InputErrorTag =
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
  | { kind: "drop-option"; option: "layer" | "raw" | "transpose" | "genome" }
  /** Reading stopped for want of progress: more time may help (a very slow disk), `hdf5Timeout`. */
  | { kind: "raise-timeout"; option: "hdf5Timeout"; seconds: number };

/** Base of every error the readers raise on purpose. */
export class InputError extends Error {
  readonly _tag: InputErrorTag;
  /** The input path. */
  readonly location: string | undefined;
  /** The object inside the input: an HDF5/zarr path or a file of a folder. */
  readonly object: string | undefined;
  /** What to do instead, when there is something specific. */
  readonly hint: InputHint | undefined;

  constructor(
    tag: InputErrorTag,
    message: string,
    opts: {
      location?: string | undefined;
      object?: string | undefined;
      cause?: unknown;
      hint?: InputHint | undefined;
    } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = `InputError(${tag})`;
    this._tag = tag;
    this.location = opts.location;
    this.object = opts.object;
    this.hint = opts.hint;
  }
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
}

/** A matrix value that is not a non-negative integer count fitting int32. */
export class NotCountsError extends InputError {
  override readonly _tag = "NotCounts" as const;
  readonly reason: NotCountsReason;
  readonly value: number;
  readonly cell: number;
  readonly cellName: string | undefined;
  readonly gene: number;
  readonly geneName: string | undefined;
  readonly alternatives: string[];

  constructor(f: NotCountsFields) {
    const cell =
      f.cellName === undefined ? `cell ${f.cell}` : `cell ${f.cell} (${JSON.stringify(f.cellName)})`;
    const gene =
      f.geneName === undefined ? `gene ${f.gene}` : `gene ${f.gene} (${JSON.stringify(f.geneName)})`;
    const what = {
      negative: "a negative value",
      "not-integer": "a value that is not an integer",
      "too-large": "a count too large for int32",
      "not-finite": "a value that is not finite",
    }[f.reason];
    const hint =
      f.alternatives.length > 0
        ? ` This input has other matrices that may hold raw counts: ${f.alternatives.join(", ")}.`
        : " Convert the raw counts (the matrix before normalisation or scaling), not a processed matrix.";
    super(
      "NotCounts",
      `${f.location}: ${f.object} is not a matrix of raw counts: ${cell}, ${gene} holds ${what} (${f.value}); ` +
        `expected non-negative integers below 2^31.${hint}`,
      {
        location: f.location,
        object: f.object,
        hint: f.alternatives.length ? { kind: "other-matrices", matrices: f.alternatives } : undefined,
      },
    );
    this.reason = f.reason;
    this.value = f.value;
    this.cell = f.cell;
    this.cellName = f.cellName;
    this.gene = f.gene;
    this.geneName = f.geneName;
    this.alternatives = f.alternatives;
  }
}

/** An HDF5 dataset compressed with a filter that cannot be decoded here. */
export class UnsupportedFilterError extends InputError {
  override readonly _tag = "UnsupportedFilter" as const;
  readonly filterId: number;
  readonly filterName: string;
  /** Why it cannot be decoded here. */
  readonly why: string;

  constructor(location: string, dataset: string, filterId: number, filterName: string, why: string) {
    super(
      "UnsupportedFilter",
      `${location}: dataset ${dataset} is compressed with HDF5 filter ${filterId} (${filterName || "unnamed"}), ` +
        `which this reader cannot decode (${why}). Rewrite the file with gzip or no compression ` +
        `(e.g. anndata: adata.write_h5ad(path, compression="gzip")).`,
      { location, object: dataset },
    );
    this.filterId = filterId;
    this.filterName = filterName;
    this.why = why;
  }
}

/**
 * Columns of a data frame (obs or var) whose encoding or element type has no table column here
 * (datetimes, nested frames, complex numbers, ...). `columns` names them all, so one run lists
 * every column to skip (the CLI's `--obs-exclude`) or convert in Python first.
 */
export class UnsupportedColumnsError extends InputError {
  override readonly _tag = "Unsupported" as const;
  readonly columns: string[];

  constructor(location: string, frame: string, columns: string[]) {
    super(
      "Unsupported",
      `${location}: ${frame} has ${columns.length === 1 ? "a column" : "columns"} of a type that cannot be stored ` +
        `(only categorical, numeric, boolean and string columns can): ${columns.map((c) => JSON.stringify(c)).join(", ")}. ` +
        "Exclude them, or convert them (e.g. datetimes to strings) in Python first.",
      { location, object: frame },
    );
    this.columns = columns;
  }
}

/** True when `err` is an {@link InputError}, optionally of the given tag. */
export function isInputError(err: unknown, tag?: InputErrorTag): err is InputError {
  return err instanceof InputError && (tag === undefined || err._tag === tag);
}
