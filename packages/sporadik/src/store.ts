/**
 * The store contract sporadik reads and writes through: zarrita's, so any zarrita store (FetchStore,
 * FileSystemStore) or any store of `@deltacells/storage` works. Keys start with `/`.
 */

/** A byte range: `length` bytes from `offset`. */
export interface ByteRange {
  offset: number;
  length: number;
}

/** What the reader needs: whole objects, and byte ranges when the store can serve them. */
export interface ReadableStore {
  get(key: string, options?: { signal?: AbortSignal }): Promise<Uint8Array | undefined>;
  getRange?(
    key: string,
    range: ByteRange | { suffixLength: number },
    options?: { signal?: AbortSignal },
  ): Promise<Uint8Array | undefined>;
}

/** What the writer needs: whole-object writes, and deletes when the store has them. */
export interface WritableStore extends ReadableStore {
  set(key: string, value: Uint8Array): Promise<void>;
  delete?(key: string): Promise<unknown>;
  /**
   * Make every object written so far durable, for stores that defer it (a folder written with
   * deferred syncs): the writer calls it before it writes the block, so a crash never leaves a
   * block over chunks that were not on disk yet.
   */
  flush?(): Promise<void>;
}

/** The store key of `path` under `prefix` (both without leading `/`). */
export function keyOf(prefix: string, path: string): string {
  const parts = [prefix, path].filter((part) => part.length > 0);
  return `/${parts.join("/")}`;
}

/** A prefix as the store sees it: no leading or trailing `/`. */
export function normalizePrefix(prefix: string | undefined): string {
  return (prefix ?? "").replace(/^\/+|\/+$/g, "");
}
