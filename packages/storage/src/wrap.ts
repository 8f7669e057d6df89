import { objectAt, StorageError } from "./errors.js";
import type { ReadableStore, StoreOptions, WritableStore } from "./types.js";

/**
 * What the wrappers accept: any readable store (ours, or a zarrita store with `get` and maybe
 * `getRange`), with or without the write side.
 */
export type AnyStore = ReadableStore & Partial<WritableStore> & { readonly url?: string };

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
