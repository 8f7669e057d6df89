import { StorageError } from "./errors.js";
import { HttpStore, type HttpStoreOptions } from "./http.js";
import type { FetchLike } from "./http-read.js";
import { parseLocation } from "./location.js";
import { MemoryStore } from "./memory.js";
import { withRetries } from "./retry.js";
import { parseS3Url, S3Store, type S3StoreOptions } from "./s3.js";
import type { Store } from "./types.js";

/** Retries of a failed read (after the first attempt) of a store opened from an http(s) or s3 URL. */
export const DEFAULT_RETRIES = 3;
/** Seconds without a byte after which a request of such a store fails (and is retried). */
export const DEFAULT_TIMEOUT_SECONDS = 15;

/** Options of {@link openStore}; each backend takes the part that concerns it. */
export interface OpenStoreOptions {
  /**
   * The fetch used by HTTP and S3 stores. Default: the global one, except for reads in Node,
   * which go over node:http(s) (see {@link HttpStoreOptions.fetch}).
   */
  fetch?: FetchLike;
  /** HTTP(S) options (headers, missing statuses, the cap on ignored ranges). */
  http?: Omit<HttpStoreOptions, "fetch" | "timeoutMs">;
  /**
   * S3 options (credentials, region, endpoint, multipart and paging settings). In the browser
   * nothing is read from the environment: pass credentials here, or none for a public bucket.
   */
  s3?: Omit<S3StoreOptions, "bucket" | "prefix" | "fetch" | "timeoutMs">;
  /**
   * HTTP(S) and S3: how many times a read that failed for a transient reason (5xx, 429, a reset
   * connection, a cut body, a stall) is tried again, with exponential backoff and jitter (default
   * {@link DEFAULT_RETRIES}; 0 for none). Writes are never repeated.
   */
  retries?: number;
  /**
   * HTTP(S) and S3: a request that receives nothing for this many milliseconds (no answer, or a
   * body that stops) fails with a transient `Timeout` error (default
   * {@link DEFAULT_TIMEOUT_SECONDS} s; 0 for none). A slow transfer that keeps moving never does.
   */
  timeoutMs?: number;
}

/** What a remote store is given: the caller's fetch (if any) and the stall timeout. */
interface Client {
  fetch?: FetchLike;
  timeoutMs: number;
}

/** The network defaults over a remote store: a stall timeout on its requests, retries around it. */
function remote(opts: OpenStoreOptions, make: (client: Client) => Store): Store {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_SECONDS * 1000;
  const retries = opts.retries ?? DEFAULT_RETRIES;
  if (!(timeoutMs >= 0) || !(retries >= 0) || !Number.isInteger(retries)) {
    throw new StorageError(
      `openStore: retries must be a whole number >= 0 and timeoutMs a number >= 0, got ${retries} and ${timeoutMs}`,
    );
  }
  const store = make({ ...(opts.fetch ? { fetch: opts.fetch } : {}), timeoutMs });
  return retries > 0 ? withRetries(store, { attempts: retries + 1 }) : store;
}

/**
 * Opens a store from a URL: `http://` and `https://` (read-only), `s3://bucket/prefix` and
 * `memory://name`. Remote stores come with the network defaults a user of a cloud bucket
 * expects: transient read failures are retried and stalled requests time out (`retries`,
 * `timeoutMs`); the answer is then a `RetryStore` over the HTTP or S3 store. Browser-safe; `@deltacells/storage/node` has an `openStore` that also opens
 * local paths and `file://` URLs and reads S3 settings from the AWS environment variables.
 */
export function openStore(url: string, opts: OpenStoreOptions = {}): Store {
  const location = parseLocation(url);
  const scheme = location.kind === "url" ? location.scheme : undefined;
  switch (scheme) {
    case "http":
    case "https":
      return remote(opts, (client) => new HttpStore(url, { ...opts.http, ...client }));
    case "s3":
      return remote(opts, (client) => new S3Store({ ...opts.s3, ...parseS3Url(url), ...client }));
    case "memory":
      return new MemoryStore(url);
    default:
      throw new StorageError(
        `cannot open ${JSON.stringify(url)}: expected an http(s)://, s3://bucket/prefix or memory:// URL${scheme === "file" || scheme === undefined ? " (local paths and file:// URLs open with openStore from @deltacells/storage/node)" : ""}`,
        { tag: "UnsupportedUrl", object: url },
      );
  }
}
