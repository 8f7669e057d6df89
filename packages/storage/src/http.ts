import { nodeGet } from "#http-get";
import { objectAt, StorageError } from "./errors.js";
import { type ChunkedAnswer, encodeKeyPath, type FetchLike, type KeyRead, readKey } from "./http-read.js";
import { normalizeKey } from "./keys.js";
import { withStallTimeout } from "./stall.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";

/** Options of {@link HttpStore}. */
export interface HttpStoreOptions {
  /**
   * The fetch to use, for auth, proxies or instrumentation. Default: in Node, node:http(s) with
   * keep-alive connections (less CPU per byte than the global fetch); elsewhere the global fetch.
   */
  fetch?: FetchLike;
  /**
   * A request that receives nothing for this many milliseconds (no answer, or a body that
   * stops) fails with a transient `Timeout` error (see {@link withStallTimeout}). Default 0:
   * none; `openStore` sets its own default.
   */
  timeoutMs?: number;
  /** Headers sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /**
   * Statuses that mean "the object does not exist" and yield `undefined` (default 404 and 410).
   * Add 403 for a public S3-style bucket that denies listing: it answers 403 for missing keys.
   * It is not the default because 403 usually means bad credentials, and a reader that took it
   * for "missing" would report a dataset as incomplete instead of telling the user to fix access.
   */
  missingStatuses?: readonly number[];
  /**
   * When a server ignores the Range header and answers 200 with the whole object, the object is
   * read and sliced only up to this many bytes (default 16 MiB); larger objects fail with a
   * `RangeUnsupported` error instead of silently downloading gigabytes for a few bytes.
   */
  maxIgnoredRangeBytes?: number;
}

/** Default cap on a whole-object answer to a range request. */
export const DEFAULT_MAX_IGNORED_RANGE_BYTES = 16 * 1024 * 1024;

/** A read by Node's client (`#http-get`) with the store's stall timeout bound. */
export type ReadGet = (
  url: string,
  method: "GET" | "HEAD",
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
) => Promise<ChunkedAnswer>;

/**
 * How an HTTP or S3 store sends: `fetch` (the given one, else the global one) under the stall
 * timeout `timeoutMs` (0 or none: no timeout), and for reads Node's client when no fetch was given
 * (none in browsers), which applies the same timeout itself.
 */
export function remoteClients(opts: { fetch?: FetchLike | undefined; timeoutMs?: number | undefined }): {
  fetch: FetchLike;
  nodeGet: ReadGet | undefined;
} {
  const timeoutMs = opts.timeoutMs ?? 0;
  const fetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const get = opts.fetch === undefined ? nodeGet : undefined;
  return {
    fetch: timeoutMs > 0 ? withStallTimeout(fetch, timeoutMs) : fetch,
    nodeGet: get && ((url, method, headers, signal) => get(url, method, headers, signal, timeoutMs)),
  };
}

/**
 * A read-only store over HTTP(S) with Range requests: `get` is a GET, `getRange` a GET with
 * `Range: bytes=a-b` (or `bytes=-N` for a suffix). Browser-safe (in Node it reads with
 * node:http(s) unless given a `fetch`, see `#http-get`). Writes and listing throw a
 * `ReadOnly` error: plain HTTP has no portable way to do them.
 */
export class HttpStore implements Store {
  readonly url: string;
  private readonly base: string;
  private readonly fetch: FetchLike;
  /** Node's client for reads, when no fetch was given (`#http-get`). */
  private readonly nodeGet: ReadGet | undefined;
  private readonly headers: Record<string, string>;
  private readonly missing: ReadonlySet<number>;
  private readonly maxIgnoredRangeBytes: number;

  constructor(url: string, opts: HttpStoreOptions = {}) {
    this.url = url;
    this.base = url.endsWith("/") ? url : `${url}/`;
    ({ fetch: this.fetch, nodeGet: this.nodeGet } = remoteClients(opts));
    this.headers = { ...opts.headers };
    this.missing = new Set(opts.missingStatuses ?? [404, 410]);
    this.maxIgnoredRangeBytes = opts.maxIgnoredRangeBytes ?? DEFAULT_MAX_IGNORED_RANGE_BYTES;
  }

  /** The URL of a key. */
  keyUrl(key: string): string {
    return this.base + encodeKeyPath(normalizeKey(key, this.url));
  }

  get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return readKey(key, undefined, opts, this.keyRead);
  }

  getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return readKey(key, range, opts, this.keyRead);
  }

  /**
   * `get` into memory from `allocate(size)`, called once the answer's Content-Length is known
   * (without one, once the whole body is in): the body's chunks are copied once, into it, and
   * nothing object-sized is allocated (a tile read into a decoder pool's shared memory).
   */
  getInto(
    key: string,
    allocate: (size: number) => Uint8Array,
    opts?: StoreOptions,
  ): Promise<Uint8Array | undefined> {
    return readKey(key, undefined, opts, this.keyRead, allocate);
  }

  /** A read of a key: a GET of its URL with the store's headers, asking for unencoded bytes. */
  private readonly keyRead = (key: string, signal: AbortSignal | undefined): KeyRead => {
    const url = this.keyUrl(key);
    return {
      send: (method, headers) => {
        const all = { ...this.headers, "accept-encoding": "identity", ...headers };
        if (this.nodeGet !== undefined) return this.nodeGet(url, method, all, signal);
        return this.fetch(url, { method, headers: all, signal: signal ?? null });
      },
      ctx: {
        url,
        key,
        location: this.url,
        missing: this.missing,
        maxIgnoredRangeBytes: this.maxIgnoredRangeBytes,
        signal,
      },
    };
  };

  private readOnly(what: string, key?: string): never {
    throw new StorageError(`${what} is not possible on ${this.url}: an HTTP store is read-only`, {
      tag: "ReadOnly",
      object: objectAt(this.url, key),
    });
  }

  async set(key: string, _value?: Uint8Array, _opts?: StoreOptions): Promise<void> {
    this.readOnly(`writing ${key}`, key);
  }

  async delete(key: string, _opts?: StoreOptions): Promise<void> {
    this.readOnly(`deleting ${key}`, key);
  }

  async list(_prefix?: string, _opts?: StoreOptions): Promise<string[]> {
    this.readOnly("listing");
  }
}
