import { objectAt, StorageError } from "./errors.js";
import type { ReadableStore, StoreOptions, WritableStore } from "./types.js";

/**
 * What the wrappers accept: any readable store (ours, or a zarrita store with `get` and maybe
 * `getRange`), with or without the write side.
 */
export type AnyStore = ReadableStore & Partial<WritableStore> & { readonly url?: string };

/** `getInto` of the stores that have it (a folder): a whole object read into the caller's memory. */
export type GetInto = NonNullable<ReadableStore["getInto"]>;

/** `setParts` of the stores that have it (S3, a folder with sporadik's `withFileParts`): one object written from parts as they come. */
export type PartsWrite = (
  key: string,
  byteLength: number,
  parts: AsyncIterable<Uint8Array>,
  opts?: StoreOptions,
) => Promise<void>;

/**
 * `setFile` of a folder written by sporadik's `withFileParts` with deferred syncs: `write` puts
 * the object in the file at `path` itself (a compression worker) and resolves to its byte count.
 */
export type FileWrite = (key: string, write: (path: string) => Promise<number>) => Promise<void>;

/**
 * The inner store's optional methods, bound, or `undefined` where it lacks them: a wrapper has
 * `getInto` and `setParts` exactly when its inner store does, so callers that test for them (the
 * dataset reader for `getInto`, sporadik's writer for `setParts`) still find them through any
 * stack of wrappers. `setFile` is passed on by `withStats` only: the limit, retry and coalescing
 * wrappers would have to count or retry a write they never see, so behind them sporadik's writer
 * falls back to `set` (the same bytes, written from the main thread).
 */
export function optionalMethods(store: AnyStore): {
  getInto?: GetInto;
  setParts?: PartsWrite;
  setFile?: FileWrite;
} {
  const { getInto, setParts, setFile } = store as {
    getInto?: GetInto;
    setParts?: PartsWrite;
    setFile?: FileWrite;
  };
  return { getInto: getInto?.bind(store), setParts: setParts?.bind(store), setFile: setFile?.bind(store) };
}

/** The location of a wrapped store for messages. */
export function locationOf(store: AnyStore): string {
  return store.url ?? "(store)";
}

/** The inner store's write method, or a function that throws a clear `ReadOnly` error. */
export function writeMethod<K extends keyof WritableStore>(store: AnyStore, name: K): WritableStore[K] {
  const method = store[name];
  if (method !== undefined) return method.bind(store) as WritableStore[K];
  return (async (key?: string, _v?: unknown, _o?: StoreOptions) => {
    throw new StorageError(
      `${name}${typeof key === "string" ? ` ${key}` : ""} is not possible on ${locationOf(store)}: it is read-only`,
      {
        tag: "ReadOnly",
        object: objectAt(locationOf(store), typeof key === "string" ? key : undefined),
      },
    );
  }) as unknown as WritableStore[K];
}
