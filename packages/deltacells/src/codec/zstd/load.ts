/**
 * Lazy loading of the zstd implementation `#zstd` resolves to for this environment (see
 * package.json): the native binding under Node (WASM when it failed to build), WASM elsewhere.
 * Loaded once, on first use, together with the native kernel where there is one.
 */
import { loadPlatformZstd } from "#zstd";
import { DeltacellsError } from "../../errors.js";
import { loadNativeKernel } from "../native.js";
import type { ZstdBackend } from "./types.js";

let loading: Promise<ZstdBackend> | undefined;
let loaded: ZstdBackend | undefined;

/** Loads zstd (once) and returns it. */
export function loadZstd(): Promise<ZstdBackend> {
  loading ??= pick().then((z) => {
    loaded = z;
    return z;
  });
  return loading;
}

/** The loaded zstd, for synchronous hot loops; throws if {@link loadZstd} has not finished. */
export function zstdSync(): ZstdBackend {
  if (loaded === undefined) {
    throw new DeltacellsError(
      "zstd is not loaded yet: `await loadZstd()` (or use the async decodeTile/encodeTile) first",
      { tag: "InvalidState", field: "zstd", expected: "loaded", found: "not loaded" },
    );
  }
  return loaded;
}

/** Replaces the backend (benchmarks compare implementations; tests force the WASM path). */
export function setZstdBackend(z: ZstdBackend): void {
  loaded = z;
  loading = Promise.resolve(z);
}

async function pick(): Promise<ZstdBackend> {
  await loadNativeKernel();
  return loadPlatformZstd();
}
