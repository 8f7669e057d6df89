import { objectAt, StorageError } from "./errors.js";

/**
 * Normalizes a store key: zarrita passes absolute keys (`/zarr.json`), our own code relative ones
 * (`tiles/tile_000000.dct`); both name the same object. Keys that could escape the root of a
 * folder or bucket prefix (`..` segments, empty segments, backslashes, NUL) are refused, so a
 * crafted manifest can never make a reader touch a file outside the dataset.
 */
export function normalizeKey(key: string, location?: string): string {
  const k = key.startsWith("/") ? key.slice(1) : key;
  const bad =
    k.length === 0 ||
    k.includes("\\") ||
    k.includes("\0") ||
    k.split("/").some((seg) => seg === "" || seg === "." || seg === "..");
  if (bad) {
    throw new StorageError(
      `invalid key ${JSON.stringify(key)}: keys are relative paths of non-empty segments without "..", "." or "\\"`,
      { tag: "InvalidKey", object: objectAt(location, key) },
    );
  }
  return k;
}

/** Normalizes a listing prefix: like a key, but empty (everything) and a trailing `/` are allowed. */
export function normalizePrefix(prefix: string | undefined, location?: string): string {
  if (prefix === undefined || prefix === "" || prefix === "/") return "";
  const trimmed = prefix.startsWith("/") ? prefix.slice(1) : prefix;
  const trailing = trimmed.endsWith("/");
  const k = normalizeKey(trailing ? trimmed.slice(0, -1) : trimmed, location);
  return trailing ? `${k}/` : k;
}
