/**
 * The deltacells error hierarchy. Every error has a `_tag` naming what went wrong, the object it
 * concerns (a tile key, a manifest, an input file), and where it applies the field, what was
 * expected and what was found, so a caller can react without parsing messages.
 */

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
  /** Input the writer refuses (not raw counts, unsorted indices, too many exceptions ...). */
  | "InvalidInput"
  /** The host cannot run this code correctly (big-endian). */
  | "UnsupportedHost";

export interface DeltacellsErrorFields {
  /** The object concerned: a store key, a URL, a file path. */
  object?: string;
  /** The field or check that failed. */
  field?: string;
  expected?: unknown;
  found?: unknown;
  cause?: unknown;
}

/** Base class of every error this package raises on purpose. */
export class DeltacellsError extends Error {
  readonly _tag: DeltacellsErrorTag;
  readonly object: string | undefined;
  readonly field: string | undefined;
  readonly expected: unknown;
  readonly found: unknown;

  constructor(tag: DeltacellsErrorTag, message: string, fields: DeltacellsErrorFields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = `DeltacellsError(${tag})`;
    this._tag = tag;
    this.object = fields.object;
    this.field = fields.field;
    this.expected = fields.expected;
    this.found = fields.found;
  }
}

/** True when `err` is a {@link DeltacellsError}, optionally of the given tag. */
export function isDeltacellsError(err: unknown, tag?: DeltacellsErrorTag): err is DeltacellsError {
  return err instanceof DeltacellsError && (tag === undefined || err._tag === tag);
}
