import { isStorageError } from "./errors.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";
import {
  type AnyStore,
  type FileWrite,
  type GetInto,
  locationOf,
  optionalMethods,
  type PartsWrite,
  writeMethod,
} from "./wrap.js";

/** The operations a store offers. */
export type StoreOperation = "get" | "getRange" | "set" | "delete" | "list";

/** What {@link StatsStore} has counted since it was created or last reset. */
export interface StoreStats {
  /**
   * Calls per operation (each call counts once, whether it succeeded, found nothing or failed),
   * except those a read-only store refuses without a request (a listing over plain HTTP).
   */
  requests: Record<StoreOperation, number>;
  /** Bytes returned by `get`, `getRange` and `getInto`. */
  bytesRead: number;
  /** Bytes passed to `set` and `setParts`. */
  bytesWritten: number;
  /** Reads that found no object (`undefined`). */
  missing: number;
  /** Calls that threw (aborts included). */
  errors: number;
}

function emptyStats(): StoreStats {
  return {
    requests: { get: 0, getRange: 0, set: 0, delete: 0, list: 0 },
    bytesRead: 0,
    bytesWritten: 0,
    missing: 0,
    errors: 0,
  };
}

/** Formats a byte count for humans (binary units). */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

/**
 * Counts calls and bytes through a store. Placed outside a retry wrapper it counts logical
 * requests; placed inside (`withRetries(withStats(s))`) it counts every attempt, i.e. what the
 * server saw. The inner store's `getInto` (a read into the caller's memory, counted as a `get`)
 * and `setParts` (an object written in parts, counted as a `set`) pass through when it has them,
 * and so does `flush` (which makes deferred writes durable, sporadik's `withFileParts`; no request).
 */
export class StatsStore implements Store {
  readonly url: string;
  readonly inner: AnyStore;
  private current: StoreStats = emptyStats();
  readonly set: Store["set"];
  readonly delete: Store["delete"];
  readonly list: Store["list"];
  /** The inner store's `getInto`, counted as a `get`; absent when it has none. */
  readonly getInto?: GetInto;
  /** The inner store's `setParts`, counted as a `set` of `byteLength` bytes; absent when it has none. */
  readonly setParts?: PartsWrite;
  /** The inner store's `setFile`, counted as a `set` of the bytes written; absent when it has none. */
  readonly setFile?: FileWrite;
  /**
   * The inner store's server-side `copy`, when it has one: counted as a `set` (it is one write
   * request), its bytes not as written (they never pass through).
   */
  readonly copy?: Store["copy"];
  /** The inner store's `flush` (deferred writes made durable), not counted; absent when it has none. */
  readonly flush?: () => Promise<void>;

  constructor(inner: AnyStore) {
    this.inner = inner;
    this.url = locationOf(inner);
    const set = writeMethod(inner, "set");
    const del = writeMethod(inner, "delete");
    const list = writeMethod(inner, "list");
    this.set = (key, value, opts) => {
      this.current.requests.set++;
      this.current.bytesWritten += value.length;
      return this.track(set(key, value, opts), "set");
    };
    this.delete = (key, opts) => {
      this.current.requests.delete++;
      return this.track(del(key, opts), "delete");
    };
    this.list = (prefix, opts) => {
      this.current.requests.list++;
      return this.track(list(prefix, opts), "list");
    };
    const { getInto, setParts, setFile } = optionalMethods(inner);
    if (getInto !== undefined)
      this.getInto = (key, allocate, opts) => {
        this.current.requests.get++;
        return this.read(getInto(key, allocate, opts), "get");
      };
    if (setParts !== undefined)
      this.setParts = (key, byteLength, parts, opts) => {
        this.current.requests.set++;
        this.current.bytesWritten += byteLength;
        return this.track(setParts(key, byteLength, parts, opts), "set");
      };
    if (setFile !== undefined)
      this.setFile = (key, write) => {
        this.current.requests.set++;
        return this.track(
          setFile(key, async (path) => {
            const written = await write(path);
            this.current.bytesWritten += written;
            return written;
          }),
          "set",
        );
      };
    const { flush } = inner as { flush?: () => Promise<void> };
    if (flush !== undefined) this.flush = () => flush.call(inner);
    const copy = inner.copy?.bind(inner);
    if (copy !== undefined) {
      this.copy = (from, to, opts) => {
        this.current.requests.set++;
        return this.track(copy(from, to, opts), "set");
      };
    }
  }

  /** A copy of the counters. */
  get stats(): StoreStats {
    return { ...this.current, requests: { ...this.current.requests } };
  }

  /** Total calls of every operation. */
  get totalRequests(): number {
    return Object.values(this.current.requests).reduce((a, b) => a + b, 0);
  }

  /** Sets every counter back to zero. */
  reset(): void {
    this.current = emptyStats();
  }

  /** One line for `--stats`, e.g. `12 requests (getRange 10, get 2), read 1.21 MiB, written 0 B, 1 missing, 0 errors`. */
  format(): string {
    const s = this.current;
    const ops = (Object.entries(s.requests) as [StoreOperation, number][])
      .filter(([, n]) => n > 0)
      .map(([op, n]) => `${op} ${n}`)
      .join(", ");
    return `${this.totalRequests} requests${ops ? ` (${ops})` : ""}, read ${formatBytes(s.bytesRead)}, written ${formatBytes(s.bytesWritten)}, ${s.missing} missing, ${s.errors} errors`;
  }

  private async track<T>(p: Promise<T>, op: StoreOperation): Promise<T> {
    try {
      return await p;
    } catch (err) {
      // A store that cannot do this at all (listing or writing over plain HTTP) sent no request.
      if (isStorageError(err, "ReadOnly")) this.current.requests[op]--;
      else this.current.errors++;
      throw err;
    }
  }

  private async read(
    p: Promise<Uint8Array | undefined>,
    op: StoreOperation,
  ): Promise<Uint8Array | undefined> {
    const bytes = await this.track(p, op);
    if (bytes === undefined) this.current.missing++;
    else this.current.bytesRead += bytes.length;
    return bytes;
  }

  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    this.current.requests.get++;
    return this.read(this.inner.get(key, opts), "get");
  }

  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    this.current.requests.getRange++;
    return this.read(this.inner.getRange(key, range, opts), "getRange");
  }
}

/** Wraps a store to count calls per operation and bytes read and written. */
export function withStats(store: AnyStore): StatsStore {
  return new StatsStore(store);
}
