/**
 * What sporadik refuses. Every message names the silent failure the check prevents: a sparse store
 * is a pile of integers, and read along the wrong axis, unraveled in the wrong order or read after a
 * torn upload it returns real numbers from the wrong cells, or the right count of zeros.
 *
 * The errors follow the convention of every deltacells package (docs/errors.md): a `_tag`, the
 * `object` concerned (a path inside the store, a key), `expected` and `found` where they mean
 * something, and `cause`; one constructor shape `(message, options)`. The base is
 * `TaggedError` of @deltacells/storage.
 */

import { TaggedError, type TaggedErrorOptions } from "@deltacells/storage";

/** The kinds of refusal, as the `_tag` of each error. */
export type SporadikErrorTag =
  /** Anything else the store or the input says that is not coherent. */
  | "SporadikError"
  /** A spec version this package cannot read. */
  | "SpecError"
  /** The store did not finish (no block, `complete` not true, an object missing or short). */
  | "IncompleteError"
  /** A layout contradicts itself or the store around it. */
  | "LayoutError"
  /** A position outside the compressed axis. */
  | "PositionError"
  /** A call's argument or option outside its domain (a reversed run, a chunk of 0 elements ...). */
  | "InvalidArgument"
  /** An object used after it was closed, removed or abandoned. */
  | "StateError"
  /** A decode worker thread could not start, failed or stopped. */
  | "DecodeWorkerError"
  /** An encode (zstd compression) worker thread failed or stopped. */
  | "EncodeWorkerError"
  /** A conversion's matrix holds more nonzeros than its bound allows (`TooManyNonzerosError`, Node). */
  | "TooManyNonzeros"
  /** A conversion's temporary folder would not fit on its disk (`NoTempSpaceError`, Node). */
  | "NoTempSpace";

/** What a {@link SporadikError} is made of, besides its message. */
export interface SporadikErrorOptions extends TaggedErrorOptions {
  tag?: SporadikErrorTag;
  /** The path inside the store, or the key, the refusal is about. */
  object?: string | undefined;
}

/** Base of every refusal: the store or the input says nothing coherent. Its `name` is its tag. */
export class SporadikError extends TaggedError<SporadikErrorTag> {
  constructor(message: string, options: SporadikErrorOptions = {}) {
    const tag = options.tag ?? "SporadikError";
    super({ package: "@deltacells/sporadik", name: tag }, tag, message, options);
  }
}

type SubclassOptions = Omit<SporadikErrorOptions, "tag">;

/** The store declares a spec version this package cannot read; reading it anyway would be a guess. */
export class SpecError extends SporadikError {
  declare readonly _tag: "SpecError";
  /** `found` is the version the store declared, `expected` the versions this package reads. */
  constructor(message: string, options: SubclassOptions = {}) {
    super(message, { ...options, tag: "SpecError" });
  }
}

/**
 * The store did not finish: no block, `complete` not true, or a named object missing. Zarr fills a
 * missing chunk with zeros, so without this refusal a torn upload reads back as silent zeros.
 */
export class IncompleteError extends SporadikError {
  declare readonly _tag: "IncompleteError";
  constructor(message: string, options: SubclassOptions = {}) {
    super(message, { ...options, tag: "IncompleteError" });
  }
}

/** A layout contradicts itself or the store around it (path, axis, order, shape, lengths). */
export class LayoutError extends SporadikError {
  declare readonly _tag: "LayoutError";
  constructor(message: string, options: SubclassOptions = {}) {
    super(message, { ...options, tag: "LayoutError" });
  }
}

/**
 * A decode worker thread could not start or stopped: a fault of this process (its Node options, its
 * installation), never of the data. The Node reader then decodes on its own thread instead.
 */
export class DecodeWorkerError extends SporadikError {
  declare readonly _tag: "DecodeWorkerError";
  constructor(message: string, options: SubclassOptions = {}) {
    super(message, { ...options, tag: "DecodeWorkerError" });
  }
}

/** A position outside the compressed axis; `found` is the position, `expected` the valid run. */
export class PositionError extends SporadikError {
  declare readonly _tag: "PositionError";
  /** The position asked for. */
  readonly position: number;
  /** The length of the axis it was asked along. */
  readonly length: number;
  constructor(message: string, options: SubclassOptions & { position: number; length: number }) {
    super(message, {
      ...options,
      tag: "PositionError",
      expected: options.expected ?? `0 <= position < ${options.length}`,
      found: options.found ?? options.position,
    });
    this.position = options.position;
    this.length = options.length;
  }

  /** The refusal of `position` along `axis` (of `length` positions) of an array of `shape`. */
  static along(position: number, axis: number, length: number, shape: readonly number[]): PositionError {
    return new PositionError(
      `${position} is not a position along axis ${axis} of shape [${shape.join(", ")}]: that axis has ` +
        `${length} positions (0 to ${length - 1}). Ask for a position inside it.`,
      { position, length },
    );
  }
}

/** Whether `error` is one of sporadik's refusals, optionally of the given tag. */
export function isSporadikError(error: unknown, tag?: SporadikErrorTag): error is SporadikError {
  return error instanceof SporadikError && (tag === undefined || error._tag === tag);
}
