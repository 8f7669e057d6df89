import { objectAt, StorageError } from "./errors.js";
import { normalizeKey, normalizePrefix } from "./keys.js";
import { resolveRange, throwIfAborted } from "./range.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";

/** An in-memory store: for tests, and for building a dataset before uploading it elsewhere. */
export class MemoryStore implements Store {
  readonly url: string;
  /** The objects, by normalized key. Exposed so tests can corrupt or delete them directly. */
  readonly objects = new Map<string, Uint8Array>();

  constructor(name = "memory://") {
    this.url = name;
  }

  async get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    throwIfAborted(opts?.signal);
    const bytes = this.objects.get(normalizeKey(key, this.url));
    return bytes === undefined ? undefined : bytes.slice();
  }

  async getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    throwIfAborted(opts?.signal);
    const bytes = this.objects.get(normalizeKey(key, this.url));
    if (bytes === undefined) return undefined;
    const { start, end } = resolveRange(range, bytes.length, key, this.url);
    return bytes.slice(start, end);
  }

  async set(key: string, value: Uint8Array, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const k = normalizeKey(key, this.url);
    if (opts?.createOnly && this.objects.has(k)) {
      throw new StorageError(`${key} already exists in ${this.url}`, {
        tag: "AlreadyExists",
        object: objectAt(this.url, key),
      });
    }
    this.objects.set(k, value.slice());
  }

  async delete(key: string, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    this.objects.delete(normalizeKey(key, this.url));
  }

  async list(prefix?: string, opts?: StoreOptions): Promise<string[]> {
    throwIfAborted(opts?.signal);
    const p = normalizePrefix(prefix, this.url);
    return [...this.objects.keys()].filter((k) => k.startsWith(p)).sort();
  }
}
