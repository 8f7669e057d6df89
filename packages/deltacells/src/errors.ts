/**
 * The deltacells error hierarchy. It follows the convention of every deltacells package
 * (docs/errors.md): a `_tag` naming what went wrong, the `object` it concerns (a tile key, a
 * manifest, an input file), what was `expected` and what was `found`, and `cause`; one
 * constructor shape `(message, options)`. Core adds `field`: the field or check of the object
 * that failed, so a caller can react without parsing messages. The base is `TaggedError` of
 * @deltacells/storage.
 */

import { TaggedError, type TaggedErrorOptions } from "@deltacells/storage";

export type DeltacellsErrorTag =
  /** A tile's bytes break the format (bad magic, CRC, offsets, frame sizes, indices ...). */
  | "CorruptTile"
  /** An object is not what it claims (unknown `format`, wrong magic on a non-tile, ...). */
  | "FormatError"
  /** A format or spec version this reader does not understand. */
  | "UnsupportedVersion"
  /** A dataset prefix without its manifest: the writer never finished. */
  | "IncompleteDataset"
  /** A manifest whose counts, lists or flags contradict each other or the stored objects. */
  | "InconsistentManifest"
  /** A required object is missing. */
  | "NotFound"
  /** A tile a loader needed could not be read or decoded (after the store's retries); `cause` says why. */
  | "UnreadableTile"
  /** Input the writer refuses (not raw counts, unsorted indices, too many exceptions ...), or an argument outside its domain. */
  | "InvalidInput"
  /** A call made in the wrong state: on a closed pool, before zstd was loaded. */
  | "InvalidState"
  /** A decode worker failed or exited: a fault of this process, never of the data. */
  | "WorkerFailed"
  /** The native kernel was handed arguments that contradict each other: a bug here, not in the data. */
  | "InternalError"
  /** The host cannot run this code correctly (big-endian, no workers, a decompress-only zstd). */
  | "UnsupportedHost"
  /** An object of an open dataset was rewritten after the dataset was opened: reopen it. */
  | "DatasetChanged"
  /** A conversion's target holds something else already. */
  | "TargetNotEmpty"
  /** A conversion's target is its input. */
  | "TargetIsInput"
  /** A conversion's target is a file, not a folder. */
  | "TargetNotAFolder"
  /** Another conversion holds the target's writer lock. */
  | "TargetLocked"
  /** A staged object changed under the writer (another writer at the same place). */
  | "ConcurrentChange"
  /** The precomputed statistics describe another version of the dataset (cells appended, converted again). */
  | "StaleStats";

/** What a {@link DeltacellsError} is made of, besides its message. */
export interface DeltacellsErrorOptions extends TaggedErrorOptions {
  tag: DeltacellsErrorTag;
  /** The object concerned: a store key, a URL, a file path. */
  object?: string | undefined;
  /** The field or check that failed. */
  field?: string | undefined;
}

/** Base class of every error this package raises on purpose; `name` is `DeltacellsError(TAG)`. */
export class DeltacellsError extends TaggedError<DeltacellsErrorTag> {
  readonly field: string | undefined;

  constructor(message: string, options: DeltacellsErrorOptions) {
    super(
      { package: "@deltacells/core", name: `DeltacellsError(${options.tag})` },
      options.tag,
      message,
      options,
    );
    this.field = options.field;
  }
}

/** True when `err` is a {@link DeltacellsError}, optionally of the given tag. */
export function isDeltacellsError(err: unknown, tag?: DeltacellsErrorTag): err is DeltacellsError {
  return err instanceof DeltacellsError && (tag === undefined || err._tag === tag);
}
