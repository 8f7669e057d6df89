import { StorageError } from "./errors.js";
import { HttpStore, type HttpStoreOptions } from "./http.js";
import type { FetchLike } from "./http-read.js";
import { MemoryStore } from "./memory.js";
import { parseS3Url, S3Store, type S3StoreOptions } from "./s3.js";
import type { Store } from "./types.js";

/** Options of {@link openStore}; each backend takes the part that concerns it. */
export interface OpenStoreOptions {
  /** The fetch used by HTTP and S3 stores (default: the global one). */
  fetch?: FetchLike;
  /** HTTP(S) options (headers, missing statuses, the cap on ignored ranges). */
  http?: Omit<HttpStoreOptions, "fetch">;
  /**
   * S3 options (credentials, region, endpoint, multipart and paging settings). In the browser
   * nothing is read from the environment: pass credentials here, or none for a public bucket.
   */
  s3?: Omit<S3StoreOptions, "bucket" | "prefix" | "fetch">;
}

/**
 * Opens a store from a URL: `http://` and `https://` (read-only), `s3://bucket/prefix` and
 * `memory://name`. Browser-safe; `@deltacells/storage/node` has an `openStore` that also opens
 * local paths and `file://` URLs and reads S3 settings from the AWS environment variables.
 */
export function openStore(url: string, opts: OpenStoreOptions = {}): Store {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case "http":
    case "https":
      return new HttpStore(url, { ...opts.http, ...(opts.fetch ? { fetch: opts.fetch } : {}) });
    case "s3":
      return new S3Store({ ...opts.s3, ...parseS3Url(url), ...(opts.fetch ? { fetch: opts.fetch } : {}) });
    case "memory":
      return new MemoryStore(url);
    default:
      throw new StorageError(
        `cannot open ${JSON.stringify(url)}: expected an http(s)://, s3://bucket/prefix or memory:// URL${scheme === "file" || scheme === undefined ? " (local paths and file:// URLs open with openStore from @deltacells/storage/node)" : ""}`,
        { tag: "UnsupportedUrl", object: url },
      );
  }
}
