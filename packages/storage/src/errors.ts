/**
 * Storage errors. They follow the convention of every deltacells package (docs/errors.md): a
 * `_tag` naming what went wrong, the `object` concerned (the address of a key, or the store
 * location), `expected` and `found` where they mean something, and the underlying `cause`. A
 * missing object is never an error (it is `undefined`); these are everything else. An aborted
 * call rejects with its signal's reason (normally a DOMException named `AbortError`), not with one
 * of these.
 */

export type StorageErrorTag =
  | "StorageError" // any other backend failure (permissions, disk, malformed answers)
  | "InvalidKey" // a key that would escape the store root or is malformed, or a malformed range
  | "InvalidArgument" // an argument or option out of its range, as in every package (a concurrency limit, maxOpenFiles ...)
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

/**
 * The brand every deltacells-family error carries (storage, core, sporadik, anndata, cli), its
 * value the package that raised it. A registered symbol, so two copies of a package (or packages
 * that do not depend on each other) recognise each other's errors.
 */
export const DELTACELLS_ERROR: unique symbol = Symbol.for("deltacells.error") as never;

/** The fields every deltacells-family error carries besides its message. */
export interface TaggedErrorFields<Tag extends string> {
  /** What went wrong, one of the package's tags. */
  readonly _tag: Tag;
  /** What the error concerns: a key's address, a URL, a file, an array or group inside an input. */
  readonly object: string | undefined;
  /** What the check wanted, where that means something. */
  readonly expected: unknown;
  /** What it found instead. */
  readonly found: unknown;
}

/** True when `err` was raised by any deltacells package (storage, core, sporadik, anndata, cli). */
export function isDeltacellsFamilyError(err: unknown): err is Error & TaggedErrorFields<string> {
  return typeof err === "object" && err !== null && DELTACELLS_ERROR in err;
}

/** What every deltacells-family error is made of besides its message and tag. */
export interface TaggedErrorOptions {
  /** What the error concerns: a key's address, a URL, a file, an array or group inside an input. */
  object?: string | undefined;
  expected?: unknown;
  found?: unknown;
  cause?: unknown;
}

/**
 * The base of every deltacells package's errors: the brand (its value the package raising it),
 * `_tag`, `object`, `expected`, `found` and `cause`. Each package derives its own family from it
 * (`StorageError`, `DeltacellsError`, `SporadikError`, `AnndataError`, `CliError`), which is what
 * `instanceof` and its guard test; `name` is the family's (see each).
 */
export class TaggedError<Tag extends string> extends Error implements TaggedErrorFields<Tag> {
  /** The package that raised it, e.g. `"@deltacells/storage"`. */
  readonly [DELTACELLS_ERROR]: string;
  readonly _tag: Tag;
  readonly object: string | undefined;
  readonly expected: unknown;
  readonly found: unknown;

  constructor(
    origin: { package: string; name: string },
    tag: Tag,
    message: string,
    options: TaggedErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this[DELTACELLS_ERROR] = origin.package;
    this.name = origin.name;
    this._tag = tag;
    this.object = options.object;
    this.expected = options.expected;
    this.found = options.found;
  }
}

/** What a {@link StorageError} is made of, besides its message. */
export interface StorageErrorOptions extends TaggedErrorOptions {
  tag?: StorageErrorTag;
  /** The address of the key concerned (see {@link objectAt}), or the store location. */
  object?: string | undefined;
}

const STORAGE = { package: "@deltacells/storage", name: "StorageError" };

/** Base of every error raised by a store or a store wrapper. */
export class StorageError extends TaggedError<StorageErrorTag> {
  constructor(message: string, opts: StorageErrorOptions = {}) {
    super(STORAGE, opts.tag ?? "StorageError", message, opts);
  }
}

/** The address of `key` in the store at `location` (either may be absent), as errors name it. */
export function objectAt(location: string | undefined, key: string | undefined): string | undefined {
  if (key === undefined) return location;
  if (location === undefined) return key;
  return `${location.replace(/\/+$/, "")}/${key}`;
}

/** An HTTP answer whose status is neither a success nor one that means "missing". */
export class HttpStatusError extends StorageError {
  /** The HTTP status code (also in `found`). */
  readonly status: number;

  /** `object` is the requested URL. */
  constructor(message: string, opts: { status: number; object: string }) {
    super(message, { tag: "HttpStatus", object: opts.object, found: opts.status });
    this.name = "HttpStatusError";
    this.status = opts.status;
  }
}

/** Every attempt of a retried read failed; `causes` holds the error of each attempt, in order. */
export class RetriesExhaustedError extends StorageError {
  /** How many attempts were made (all failed). */
  readonly attempts: number;
  /** The error of each failed attempt, oldest first. */
  readonly causes: readonly unknown[];

  constructor(message: string, opts: { attempts: number; causes: unknown[]; object?: string | undefined }) {
    super(message, {
      tag: "RetriesExhausted",
      object: opts.object,
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
    {
      tag: "Changed",
      object: objectAt(location, key),
      expected: `unchanged since ${new Date(since).toISOString()}`,
      found: new Date(changed).toISOString(),
    },
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
