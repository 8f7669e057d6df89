import { StorageError } from "./errors.js";
import { Slots } from "./slots.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";
import {
  type AnyStore,
  type GetInto,
  locationOf,
  optionalMethods,
  type PartsWrite,
  writeMethod,
} from "./wrap.js";

/**
 * Caps the number of calls in flight on the inner store (a semaphore); further calls wait in
 * FIFO order. A call whose signal aborts while it waits leaves the queue and rejects at once.
 * The inner store's `getInto` and `setParts`, when it has them, pass through, each call taking a slot.
 */
export class ConcurrencyLimitStore implements Store {
  readonly url: string;
  readonly inner: AnyStore;
  readonly limit: number;
  private readonly slots: Slots;
  readonly set: Store["set"];
  readonly delete: Store["delete"];
  readonly list: Store["list"];
  /** The inner store's `getInto`, limited like `get`; absent when it has none. */
  readonly getInto?: GetInto;
  /** The inner store's `setParts`, holding a slot until the object is written; absent when it has none. */
  readonly setParts?: PartsWrite;

  constructor(inner: AnyStore, limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new StorageError(`a concurrency limit must be a positive integer, got ${limit}`, {
        tag: "InvalidArgument",
        object: locationOf(inner),
        expected: "a positive integer",
        found: limit,
      });
    }
    this.inner = inner;
    this.url = locationOf(inner);
    this.limit = limit;
    this.slots = new Slots(limit);
    const set = writeMethod(inner, "set");
    const del = writeMethod(inner, "delete");
    const list = writeMethod(inner, "list");
    this.set = (key, value, opts) => this.run(() => set(key, value, opts), opts);
    this.delete = (key, opts) => this.run(() => del(key, opts), opts);
    this.list = (prefix, opts) => this.run(() => list(prefix, opts), opts);
    const { getInto, setParts } = optionalMethods(inner);
    if (getInto !== undefined)
      this.getInto = (key, allocate, opts) => this.run(() => getInto(key, allocate, opts), opts);
    if (setParts !== undefined)
      this.setParts = (key, byteLength, parts, opts) =>
        this.run(() => setParts(key, byteLength, parts, opts), opts);
  }

  /** Calls running on the inner store now. */
  get inFlight(): number {
    return this.slots.taken;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.slots.queued;
  }

  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.run(() => this.inner.get(key, opts), opts);
  }

  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.run(() => this.inner.getRange(key, range, opts), opts);
  }

  private async run<T>(call: () => Promise<T>, opts: StoreOptions | undefined): Promise<T> {
    opts?.signal?.throwIfAborted();
    await this.slots.take(opts?.signal);
    try {
      return await call();
    } finally {
      this.slots.give();
    }
  }
}

/** Wraps a store so that at most `limit` calls run on it at once. */
export function withConcurrencyLimit(store: AnyStore, limit: number): ConcurrencyLimitStore {
  return new ConcurrencyLimitStore(store, limit);
}
