/**
 * Storage errors. Each carries a `_tag` for cheap discrimination, the store location and key it
 * concerns, and the underlying `cause` where there is one. A missing object is never an error
 * (it is `undefined`); these are everything else.
 */

export type StorageErrorTag =
  | "StorageError" // any other backend failure (permissions, disk, unexpected status)
  | "InvalidKey" // a key that would escape the store root or is malformed
  | "RangeNotSatisfiable" // a range past the end of the object, or a body shorter than asked
  | "HttpStatus" // an HTTP status that is neither success nor 404
  | "RetriesExhausted"; // every attempt of a retried read failed

/** Base of every error raised by a store or a store wrapper. */
export class StorageError extends Error {
  readonly _tag: StorageErrorTag;
  /** The key concerned, when the error is about one object. */
  readonly key: string | undefined;
  /** The store location (path or URL). */
  readonly location: string | undefined;

  constructor(
    message: string,
    opts: { tag?: StorageErrorTag; key?: string; location?: string; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "StorageError";
    this._tag = opts.tag ?? "StorageError";
    this.key = opts.key;
    this.location = opts.location;
  }
}

/** True when `err` is a {@link StorageError}, optionally of the given tag. */
export function isStorageError(err: unknown, tag?: StorageErrorTag): err is StorageError {
  return err instanceof StorageError && (tag === undefined || err._tag === tag);
}
