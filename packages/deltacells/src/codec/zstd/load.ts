/**
 * Lazy selection of the zstd implementation: the native binding under Node, WASM elsewhere (and
 * under Node when the native one failed to build). Loaded once, on first use.
 */
import { DeltacellsError } from "../../errors.js";
import { loadNativeKernel } from "../native.js";
import type { ZstdBackend } from "./types.js";

let loading: Promise<ZstdBackend> | undefined;
let loaded: ZstdBackend | undefined;

function isNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === "string";
}

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
  let nativeFailure: string | undefined;
  if (isNode()) {
    await loadNativeKernel();
    try {
      return await (await import("./napi.js")).loadNapiZstd();
    } catch (err) {
      // The native build is missing: WASM still decodes, only slower (and cannot encode).
      nativeFailure = err instanceof Error ? err.message : String(err);
    }
  }
  const wasm = await (await import("./wasm.js")).loadWasmZstd();
  return nativeFailure === undefined
    ? wasm
    : { ...wasm, name: `${wasm.name} (zstd-napi failed to load: ${nativeFailure})` };
}
