/** `#zstd` outside Node: zstd's decoder compiled to WASM (wasm.ts); decoding only. */
export { loadWasmZstd as loadPlatformZstd } from "./wasm.js";
