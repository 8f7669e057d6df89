/**
 * What sporadik refuses. Every message names the silent failure the check prevents: a sparse store
 * is a pile of integers, and read along the wrong axis, unraveled in the wrong order or read after a
 * torn upload it returns real numbers from the wrong cells, or the right count of zeros.
 */

/** The kinds of refusal, as the `_tag` of each error class. */
export type SporadikErrorTag =
  | "SporadikError"
  | "SpecError"
  | "IncompleteError"
  | "LayoutError"
  | "DecodeWorkerError";

/** Base of every refusal: the store or the input says nothing coherent. */
export class SporadikError extends Error {
  readonly _tag: SporadikErrorTag = "SporadikError";
  /** The store location or object the refusal is about, when there is one. */
  readonly where: string | undefined;
  constructor(message: string, options: { where?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SporadikError";
    this.where = options.where;
  }
}

/** The store declares a spec version this package cannot read; reading it anyway would be a guess. */
export class SpecError extends SporadikError {
  override readonly _tag = "SpecError";
  /** The version the store declared. */
  readonly declared: string;
  constructor(message: string, declared: string, options: { where?: string; cause?: unknown } = {}) {
    super(message, options);
    this.name = "SpecError";
    this.declared = declared;
  }
}

/**
 * The store did not finish: no block, `complete` not true, or a named object missing. Zarr fills a
 * missing chunk with zeros, so without this refusal a torn upload reads back as silent zeros.
 */
export class IncompleteError extends SporadikError {
  override readonly _tag = "IncompleteError";
  constructor(message: string, options: { where?: string; cause?: unknown } = {}) {
    super(message, options);
    this.name = "IncompleteError";
  }
}

/** A layout contradicts itself or the store around it (path, axis, order, shape, lengths). */
export class LayoutError extends SporadikError {
  override readonly _tag = "LayoutError";
  constructor(message: string, options: { where?: string; cause?: unknown } = {}) {
    super(message, options);
    this.name = "LayoutError";
  }
}

/**
 * A decode worker thread could not start or stopped: a fault of this process (its Node options, its
 * installation), never of the data. The Node reader then decodes on its own thread instead.
 */
export class DecodeWorkerError extends SporadikError {
  override readonly _tag = "DecodeWorkerError";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "DecodeWorkerError";
  }
}

/** A position outside the compressed axis. A `RangeError`, tagged like the others. */
export class PositionError extends RangeError {
  readonly _tag = "PositionError";
  /** The position asked for. */
  readonly position: number;
  /** The length of the axis it was asked along. */
  readonly length: number;
  constructor(position: number, axis: number, length: number, shape: readonly number[]) {
    super(
      `${position} is not a position along axis ${axis} of shape [${shape.join(", ")}]: that axis has ` +
        `${length} positions (0 to ${length - 1}). Ask for a position inside it.`,
    );
    this.name = "PositionError";
    this.position = position;
    this.length = length;
  }
}

/** Whether `error` is one of sporadik's refusals (any tag). */
export function isSporadikError(error: unknown): error is SporadikError {
  return error instanceof SporadikError;
}
