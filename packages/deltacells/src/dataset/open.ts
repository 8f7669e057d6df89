/** `openDataset`: a dataset opened by reading its manifest, pinned to the version read. */
import { type ObjectInfo, openStore, type ReadableStore } from "@deltacells/storage";
import { DeltacellsError } from "../errors.js";
import type { ObsLocalizer } from "../obs/localize.js";
import { MANIFEST_KEY, parseManifest } from "./manifest.js";
import { poolTileDecoder } from "./pool-decoder.js";
import { Dataset, type DatasetParts, storeLocation } from "./reader.js";
import type { TileDecoder } from "./tile-io.js";

/** Options of {@link openDataset}. */
export interface OpenDatasetOptions {
  /**
   * Decode on a pool of this many workers (worker_threads, or Web Workers in a browser), started
   * on first use and stopped by `close()`. Default: decode on the calling thread.
   */
  threads?: number;
  /** Decodes tiles instead (e.g. a `TilePool` shared with other work; not closed by `close()`). */
  decoder?: TileDecoder;
  /** Where `obs()` puts columns (default: memory; the Node entry's `openDataset` uses the local cache). */
  obsLocalizer?: ObsLocalizer;
  signal?: AbortSignal;
  /**
   * When `location` is an http(s):// or s3:// URL: retries of a read that failed for a transient
   * reason, and the stall timeout in ms (defaults: `openStore`'s, 3 retries and 15 s).
   */
  retries?: number;
  timeoutMs?: number;
}

/** The network options of {@link OpenDatasetOptions}, for `openStore`. */
export function networkOptions(opts: OpenDatasetOptions): { retries?: number; timeoutMs?: number } {
  return {
    ...(opts.retries === undefined ? {} : { retries: opts.retries }),
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  };
}

/**
 * Open the dataset in a store or at an `http(s)://` or `s3://` URL (local paths: `openDataset`
 * from `@deltacells/core/node`). Reads `manifest.json` only. Refuses a prefix without it (an
 * incomplete dataset), an unknown format or version, and a manifest whose counts disagree (see
 * `parseManifest`); the optional gene files are checked when first read.
 */
export async function openDataset(
  location: string | ReadableStore,
  opts: OpenDatasetOptions = {},
): Promise<Dataset> {
  const store = typeof location === "string" ? openStore(location, networkOptions(opts)) : location;
  const url = storeLocation(store);
  let info: ObjectInfo = {};
  const bytes = await store.get(MANIFEST_KEY, { signal: opts.signal, onInfo: (i) => (info = i) });
  if (bytes === undefined) {
    throw new DeltacellsError(
      `${url} has no ${MANIFEST_KEY}: either it is not a deltacells dataset or its conversion never finished (the manifest is written last); convert it again`,
      { tag: "IncompleteDataset", object: `${url}/${MANIFEST_KEY}` },
    );
  }
  const manifest = parseManifest(bytes, `${url}/${MANIFEST_KEY}`);
  const parts: DatasetParts = {
    store,
    manifest,
    openedAt: info.readAt,
    ...(opts.obsLocalizer && { obsLocalizer: opts.obsLocalizer }),
  };
  if (opts.threads !== undefined) {
    if (opts.decoder !== undefined) {
      throw new DeltacellsError("openDataset takes either `threads` or `decoder`, not both", {
        tag: "InvalidInput",
        field: "threads",
        expected: "threads or decoder",
        found: "both",
      });
    }
    const { decoder, close } = poolTileDecoder(opts.threads);
    return new Dataset({ ...parts, decoder, onClose: close });
  }
  return new Dataset({ ...parts, ...(opts.decoder && { decoder: opts.decoder }) });
}
