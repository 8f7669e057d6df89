/**
 * The command's own errors. They follow the convention of every deltacells package
 * (docs/errors.md): a `_tag`, the `object` concerned (a path, a URL), `expected` and `found`
 * where they mean something, and `cause`; one constructor shape `(message, options)`. The base is
 * `TaggedError` of @deltacells/storage.
 */

import { TaggedError, type TaggedErrorOptions } from "@deltacells/storage";

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
export interface CliErrorOptions extends TaggedErrorOptions {
  tag: CliErrorTag;
  /** The path or URL concerned. */
  object?: string | undefined;
}

/** Base of the errors the command raises itself. */
export class CliError extends TaggedError<CliErrorTag> {
  constructor(message: string, options: CliErrorOptions) {
    super({ package: "@deltacells/cli", name: "CliError" }, options.tag, message, options);
  }
}
