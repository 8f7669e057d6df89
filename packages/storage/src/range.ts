import { objectAt, StorageError } from "./errors.js";
import type { RangeQuery } from "./types.js";

/**
 * Resolves a range against an object of `size` bytes into `[start, end)`. A range that reaches
 * past the end is an error rather than a shorter answer: a reader that asked for N bytes and
 * silently got fewer would decode garbage.
 */
export function resolveRange(
  range: RangeQuery,
  size: number,
  key: string,
  location?: string,
): { start: number; end: number } {
  if ("suffixLength" in range) {
    const n = range.suffixLength;
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new StorageError(`invalid suffix length ${n} for ${key}`, {
        tag: "InvalidKey",
        object: objectAt(location, key),
      });
    }
    if (n > size) {
      throw new StorageError(`range not satisfiable: last ${n} bytes of ${key}, which has ${size} bytes`, {
        tag: "RangeNotSatisfiable",
        object: objectAt(location, key),
      });
    }
    return { start: size - n, end: size };
  }
  const { offset, length } = range;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0) {
    throw new StorageError(`invalid range offset=${offset} length=${length} for ${key}`, {
      tag: "InvalidKey",
      object: objectAt(location, key),
    });
  }
  if (offset + length > size) {
    throw new StorageError(
      `range not satisfiable: bytes ${offset}..${offset + length} of ${key}, which has ${size} bytes`,
      { tag: "RangeNotSatisfiable", object: objectAt(location, key) },
    );
  }
  return { start: offset, end: offset + length };
}

/** Throws the signal's reason when it is already aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  signal?.throwIfAborted();
}
