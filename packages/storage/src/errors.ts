/**
 * Storage errors. Each carries a `_tag` for cheap discrimination, the store location and key it
 * concerns, and the underlying `cause` where there is one. A missing object is never an error
 * (it is `undefined`); these are everything else. An aborted call rejects with its signal's
 * reason (normally a DOMException named `AbortError`), not with one of these.
 */

export type StorageErrorTag =
  | "StorageError" // any other backend failure (permissions, disk, malformed answers)
  | "InvalidKey" // a key that would escape the store root or is malformed, or a malformed range
  | "RangeNotSatisfiable" // a range past the end of the object (416, or the object is shorter)
  | "HttpStatus" // an HTTP status that is neither success nor "missing"
  | "Network" // the connection failed or a body ended before its announced length (transient)
  | "Timeout" // one attempt took longer than its per-attempt timeout (transient)
  | "RangeUnsupported" // the server ignored a Range header and the whole object is too large to take
  | "ReadOnly" // a write, delete or list on a store that cannot do it
  | "UnsupportedUrl" // openStore was given a URL it cannot open
  | "NoCredentials" // an S3 store with no credentials found, and unsigned requests not asked for
  | "RetriesExhausted" // every attempt of a retried read failed
  | "Changed" // the object changed after the time a read said it must not have (see StoreOptions.unchangedSince)
  | "AlreadyExists"; // a create-only write found the object already there

/** Base of every error raised by a store or a store wrapper. */
export class StorageError extends Error {
  readonly _tag: StorageErrorTag;
  /** The key concerned, when the error is about one object. */
  readonly key: string | undefined;
  /** The store location (path or URL). */
  readonly location: string | undefined;

  constructor(
    message: string,
    opts: {
      tag?: StorageErrorTag;
      key?: string | undefined;
      location?: string | undefined;
      cause?: unknown;
    } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "StorageError";
    this._tag = opts.tag ?? "StorageError";
    this.key = opts.key;
    this.location = opts.location;
  }
}

/** An HTTP answer whose status is neither a success nor one that means "missing". */
export class HttpStatusError extends StorageError {
  /** The HTTP status code. */
  readonly status: number;
  /** The requested URL. */
  readonly url: string;

  constructor(message: string, opts: { status: number; url: string; key?: string; location?: string }) {
    super(message, { tag: "HttpStatus", key: opts.key, location: opts.location });
    this.name = "HttpStatusError";
    this.status = opts.status;
    this.url = opts.url;
  }
}

/** Every attempt of a retried read failed; `causes` holds the error of each attempt, in order. */
export class RetriesExhaustedError extends StorageError {
  /** How many attempts were made (all failed). */
  readonly attempts: number;
  /** The error of each failed attempt, oldest first. */
  readonly causes: readonly unknown[];

  constructor(
    message: string,
    opts: { attempts: number; causes: unknown[]; key?: string; location?: string },
  ) {
    super(message, {
      tag: "RetriesExhausted",
      key: opts.key,
      location: opts.location,
      cause: opts.causes[opts.causes.length - 1],
    });
    this.name = "RetriesExhaustedError";
    this.attempts = opts.attempts;
    this.causes = opts.causes;
  }
}

/** The `Changed` error: `key` was modified at `changed`, after `since`. */
export function changedError(
  key: string,
  location: string,
  object: string,
  changed: number,
  since: number,
): StorageError {
  return new StorageError(
    `${object} was modified at ${new Date(changed).toISOString()}, after ${new Date(since).toISOString()}, when its reader started: it was rewritten since`,
    { tag: "Changed", key, location },
  );
}

/** True when `err` is a {@link StorageError}, optionally of the given tag. */
export function isStorageError(err: unknown, tag?: StorageErrorTag): err is StorageError {
  return err instanceof StorageError && (tag === undefined || err._tag === tag);
}

/**
 * True when a read that failed with `err` may succeed if simply tried again: server errors
 * (5xx), throttling (429), network failures, truncated bodies and attempt timeouts. Client errors
 * (other 4xx), invalid keys and unsatisfiable ranges are permanent and never retried.
 */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof StorageError)) return false;
  if (err instanceof HttpStatusError) return err.status >= 500 || err.status === 429;
  return err._tag === "Network" || err._tag === "Timeout";
}
