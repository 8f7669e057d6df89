/**
 * The store contract sporadik reads and writes through: zarrita's, so any zarrita store (FetchStore,
 * FileSystemStore) or any store of `@deltacells/storage` works. Keys start with `/`. The shapes are
 * `@deltacells/storage`'s (`ZarrReadable`, `ZarrWritable`), types only.
 */
import type { ZarrReadable, ZarrWritable } from "@deltacells/storage";

/** What the reader needs: whole objects, and byte ranges when the store can serve them. */
export type ReadableStore = ZarrReadable;

/**
 * What the writer needs: whole-object writes, and deletes when the store has them; `flush`, where
 * the store defers durability, is called before the block, so a crash never leaves a block over
 * chunks that were not on disk yet.
 */
export type WritableStore = ZarrWritable;

/** The store key of `path` under `prefix` (both without leading `/`). */
export function keyOf(prefix: string, path: string): string {
  const parts = [prefix, path].filter((part) => part.length > 0);
  return `/${parts.join("/")}`;
}

/** A prefix as the store sees it: no leading or trailing `/`. */
export function normalizePrefix(prefix: string | undefined): string {
  return (prefix ?? "").replace(/^\/+|\/+$/g, "");
}
