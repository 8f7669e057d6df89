/**
 * The command's own errors. They follow the convention of every deltacells package
 * (docs/errors.md): a `_tag`, the `object` concerned (a path, a URL), `expected` and `found`
 * where they mean something, and `cause`; one constructor shape `(message, options)`.
 */

export type CliErrorTag =
  /** A mistake on the command line: reported with a pointer to `--help`, exit code 2. */
  | "Usage"
  /** Nothing at all is at a location. */
  | "NotFound"
  /** A location with neither a deltacells manifest nor a readable sporadik store. */
  | "NotAStore"
  /** A store that is a deltacells dataset where a sporadik store was asked for. */
  | "NotASporadikStore"
  /** An output file cannot be created where it was asked for. */
  | "OutputNotWritable"
  /** `serve` was given a root that is not a folder. */
  | "NotAFolder";

/** What a {@link CliError} is made of, besides its message. */
export interface CliErrorOptions {
  tag: CliErrorTag;
  /** The path or URL concerned. */
  object?: string | undefined;
  expected?: unknown;
  found?: unknown;
  cause?: unknown;
}

/**
 * The brand of every deltacells-family error, its value the package (see `isDeltacellsFamilyError`
 * in @deltacells/storage).
 */
const DELTACELLS_ERROR: unique symbol = Symbol.for("deltacells.error") as never;

/** Base of the errors the command raises itself. */
export class CliError extends Error {
  readonly [DELTACELLS_ERROR] = "@deltacells/cli";
  readonly _tag: CliErrorTag;
  readonly object: string | undefined;
  readonly expected: unknown;
  readonly found: unknown;

  constructor(message: string, options: CliErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CliError";
    this._tag = options.tag;
    this.object = options.object;
    this.expected = options.expected;
    this.found = options.found;
  }
}
