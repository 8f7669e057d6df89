/**
 * The browser's zstd: `zstddec` (zstd's decoder compiled to WASM, embedded as base64, ESM, about
 * 29 KB gzipped, no bundler configuration, runs in pages and workers alike). Chosen over
 * `@foxglove/wasm-zstd` (faster, ~600 vs ~375 MB/s, and it compresses) because that one is
 * CommonJS, needs a bundler loader for its 400 KB `.wasm` and Node's `Buffer`. We reach into the
 * instance to check zstd's own error codes (zstddec's `decode` does not) and to avoid its
 * per-call allocations. Decode only: encoding tiles is a Node job here.
 */
import { ZSTDDecoder } from "zstddec";
import type { ZstdBackend } from "./types.js";

interface ZstdWasmExports {
  memory: WebAssembly.Memory;
  malloc(size: number): number;
  free(ptr: number): void;
  ZSTD_decompress(dst: number, dstCap: number, src: number, srcSize: number): number;
  ZSTD_isError(code: number): number;
}

export async function loadWasmZstd(): Promise<ZstdBackend> {
  let exports: ZstdWasmExports | undefined;
  class Capturing extends ZSTDDecoder {
    override _init(result: WebAssembly.WebAssemblyInstantiatedSource): void {
      exports = result.instance.exports as unknown as ZstdWasmExports;
      super._init(result);
    }
  }
  const decoder = new Capturing();
  await decoder.init();
  if (exports === undefined) {
    // zstddec was already initialised by someone else: its instance is private, so fall back.
    return {
      name: "zstddec",
      decompressInto(src, dst) {
        const out = decoder.decode(src, dst.length);
        if (out.length !== dst.length) throw new Error(`zstd frame decompressed to ${out.length} bytes`);
        dst.set(out);
        return out.length;
      },
    };
  }
  const x = exports;
  let srcPtr = 0;
  let srcCap = 0;
  let dstPtr = 0;
  let dstCap = 0;
  return {
    name: "zstddec",
    decompressInto(src, dst) {
      // Allocate on first use even for an empty frame or output: a null pointer means "no heap".
      if (src.length > srcCap || srcPtr === 0) {
        if (srcPtr) x.free(srcPtr);
        srcCap = Math.max(src.length, srcCap * 2, 1 << 16);
        srcPtr = x.malloc(srcCap);
      }
      if (dst.length > dstCap || dstPtr === 0) {
        if (dstPtr) x.free(dstPtr);
        dstCap = Math.max(dst.length, dstCap * 2, 1 << 16);
        dstPtr = x.malloc(dstCap);
      }
      if (!srcPtr || !dstPtr) throw new Error("zstd WASM heap exhausted");
      new Uint8Array(x.memory.buffer, srcPtr, src.length).set(src);
      const n = x.ZSTD_decompress(dstPtr, dst.length, srcPtr, src.length);
      if (x.ZSTD_isError(n)) throw new Error(`zstd error code ${n >>> 0}`);
      dst.set(new Uint8Array(x.memory.buffer, dstPtr, n));
      return n;
    },
  };
}
