/**
 * A working lzf filter for h5wasm. Node-only (it patches how h5wasm instantiates the plugin).
 *
 * h5wasm-plugins 0.2.1 ships HDF Group's H5Zlzf, whose decompressor does not retry when the
 * output is larger than the size recorded at write time (cd_values[2]); h5py records the
 * in-memory size of a variable-length string (not the larger stored heap references), so every
 * lzf-compressed string dataset of an h5ad fails, and a failed read aborts the h5wasm module.
 * (The plugin also calls `__errno_location`, which h5wasm does not export.)
 *
 * When the plugin's WebAssembly module is instantiated (HDF5 loads it on the first lzf dataset),
 * its filter function's slot in the shared function table is replaced by a tiny WebAssembly
 * trampoline into {@link lzfFilter}, a JavaScript implementation with a growing output buffer.
 * The rest of the plugin (registration, set_local) is untouched. The constructor wrapper is
 * removed once the plugin has been patched.
 */

import { AnndataError } from "./errors.js";
import { lzfDecompress } from "./lzf.js";

interface H5Module {
  _malloc(size: number): number;
  _free(ptr: number): void;
}

const H5Z_FLAG_REVERSE = 0x0100;

/** (module (type (func (param i32 x6) (result i32))) (import "env" "f" (func (type 0))) (export "f" (func 0))) */
const TRAMPOLINE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0b, 0x01, 0x60, 0x06, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
  0x7f, 0x01, 0x7f, 0x02, 0x09, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x01, 0x66, 0x00, 0x00, 0x07, 0x05, 0x01, 0x01,
  0x66, 0x00, 0x00,
]);

let state: "idle" | "waiting" | "patched" | "failed" = "idle";

/**
 * Whether lzf datasets of any type decode: the fix is installed and either waiting for HDF5 to
 * load the plugin or applied. False when it was never installed or could not be applied.
 */
export function lzfFixed(): boolean {
  return state === "waiting" || state === "patched";
}

/** Arranges for the lzf plugin to be patched when HDF5 loads it. Call before any lzf read. */
export function installLzfFix(module: H5Module): void {
  if (state !== "idle") return;
  state = "waiting";
  const Original = WebAssembly.Instance;
  function PatchingInstance(
    this: unknown,
    wasmModule: WebAssembly.Module,
    imports?: WebAssembly.Imports,
  ): WebAssembly.Instance {
    const instance = new Original(wasmModule, imports);
    const names = WebAssembly.Module.exports(wasmModule).map((e) => e.name);
    if (names.includes("H5Z_LZF") && names.includes("lzf_decompress") && imports) {
      // never throw from here: this runs inside HDF5's plugin loading
      try {
        patchPlugin(module, imports.env as Record<string, unknown>);
        state = "patched";
      } catch {
        state = "failed";
      } finally {
        WebAssembly.Instance = Original;
      }
    }
    return instance;
  }
  PatchingInstance.prototype = Original.prototype;
  WebAssembly.Instance = PatchingInstance as unknown as typeof WebAssembly.Instance;
}

function numberOf(v: unknown): number {
  return v instanceof WebAssembly.Global ? Number(v.value) : Number(v);
}

function patchPlugin(module: H5Module, env: Record<string, unknown>): void {
  const table = env.__indirect_function_table as WebAssembly.Table;
  const memory = env.memory as WebAssembly.Memory;
  const tableBase = numberOf(env.__table_base);
  // the plugin's functions sit at [tableBase, ...); the filter is the one taking 6 arguments
  let slot = -1;
  for (let i = tableBase; i < Math.min(table.length, tableBase + 16); i++) {
    const f = table.get(i) as ((...args: number[]) => number) | null;
    if (f && f.length === 6) {
      slot = i;
      break;
    }
  }
  if (slot < 0) {
    throw new AnndataError("h5wasm lzf plugin: filter function not found in its table slots", {
      tag: "Unsupported",
    });
  }
  const filter = (
    flags: number,
    nCd: number,
    cdPtr: number,
    nbytes: number,
    bufSizePtr: number,
    bufPtrPtr: number,
  ) => lzfFilter(module, memory, flags, nCd, cdPtr, nbytes, bufSizePtr, bufPtrPtr);
  const trampoline = new WebAssembly.Instance(new WebAssembly.Module(TRAMPOLINE), { env: { f: filter } });
  table.set(slot, trampoline.exports.f as WebAssembly.ExportValue as never);
}

/** The H5Z filter callback (size_t (*)(unsigned, size_t, const unsigned[], size_t, size_t*, void**)). */
function lzfFilter(
  module: H5Module,
  memory: WebAssembly.Memory,
  flags: number,
  nCd: number,
  cdPtr: number,
  nbytes: number,
  bufSizePtr: number,
  bufPtrPtr: number,
): number {
  let view = new DataView(memory.buffer);
  const bufPtr = view.getUint32(bufPtrPtr, true);
  const input = new Uint8Array(memory.buffer, bufPtr, nbytes).slice();
  let out: Uint8Array;
  if (flags & H5Z_FLAG_REVERSE) {
    const hint = nCd >= 3 ? view.getUint32(cdPtr + 8, true) : view.getUint32(bufSizePtr, true);
    try {
      out = lzfDecompress(input, hint);
    } catch {
      return 0; // HDF5 reports a filter failure
    }
  } else {
    out = lzfLiterals(input);
  }
  const outPtr = module._malloc(Math.max(1, out.length));
  if (outPtr === 0) return 0;
  new Uint8Array(memory.buffer, outPtr, out.length).set(out);
  module._free(bufPtr);
  view = new DataView(memory.buffer); // malloc may have grown the memory
  view.setUint32(bufPtrPtr, outPtr, true);
  view.setUint32(bufSizePtr, out.length, true);
  return out.length;
}

/** A valid LZF stream of literal runs only (used if h5wasm ever writes with lzf). */
function lzfLiterals(input: Uint8Array): Uint8Array {
  const out = new Uint8Array(input.length + Math.ceil(input.length / 32));
  let op = 0;
  for (let ip = 0; ip < input.length; ip += 32) {
    const len = Math.min(32, input.length - ip);
    out[op++] = len - 1;
    out.set(input.subarray(ip, ip + len), op);
    op += len;
  }
  return out.subarray(0, op);
}
