/**
 * The optional native kernel (native/kernel.c, built by node-gyp at install): the decoder's hot
 * loops and the CRC in C (AVX2 and PCLMULQDQ where the CPU has them, chosen at load time; SSE2
 * otherwise), writing straight into the caller's typed arrays. Node only; browsers, and Node hosts
 * where it did not build, use the TypeScript loops in kernel.ts, which give identical results.
 * `DELTACELLS_NATIVE=0` disables it.
 */

export interface NativeKernel {
  /** Prefix sums of cells `[ca, cb)`: -1 if fine, the first bad cell, or -2 for inconsistent arguments. */
  gaps(
    planes: Uint8Array,
    n: number,
    indptr: Float64Array,
    nnzLo: number,
    ca: number,
    cb: number,
    out: Int32Array,
    shift: number,
    nGenes: number,
  ): number;
  /** Recombines count planes `[s, e)`; false if a count was 0. */
  vals(
    planes: Uint8Array,
    n: number,
    s: number,
    e: number,
    out: Int32Array | Float32Array,
    shift: number,
  ): boolean;
  /**
   * Decodes chunks `[k0, k1)` as described by `plan` (9 numbers per chunk, see
   * `decodeChunksInto`), zstd included: -1 if all were decoded, else the first chunk it left to
   * the caller (one with exceptions, or one that failed a check). Absent from older builds.
   */
  chunks?(
    bytes: Uint8Array,
    plan: Float64Array,
    k0: number,
    k1: number,
    indptr: Float64Array,
    indices: Int32Array,
    data: Int32Array | Float32Array,
    nGenes: number,
  ): number;
  /** This addon's zstd alone (benchmarks): bytes written, or -1. Absent from older builds. */
  decompress?(src: Uint8Array, dst: Uint8Array): number;
  crc32(bytes: Uint8Array, crc: number): number;
  /**
   * The instruction set in use (2: AVX2 loops and a PCLMULQDQ CRC, 1: SSE2, 0: plain C), after
   * lowering it to `level` if given (tests compare the paths; never above what the CPU has;
   * process-wide: worker threads share it).
   */
  isa(level?: number): number;
  /** Copies and checks the int64 indptr at `off`: -1 if fine, else the first bad entry. */
  indptr(bytes: Uint8Array, off: number, nCells: number, nnz: number, out: Float64Array): number;
}

let active: NativeKernel | undefined;
let loaded: NativeKernel | undefined;
/** Why the kernel is not loaded, when it was tried. */
let unavailable: string | undefined;

/** Why the native kernel is not in use (disabled, not built, failed to load), or undefined when it is. */
export function nativeKernelUnavailable(): string | undefined {
  if (active !== undefined) return undefined;
  return loaded !== undefined ? "switched off (useNativeKernel(false))" : unavailable;
}

/** The native kernel when loaded and enabled. */
export function nativeKernel(): NativeKernel | undefined {
  return active;
}

/** Switches between the native and the TypeScript loops (tests and benchmarks compare them). */
export function useNativeKernel(on: boolean): boolean {
  active = on ? loaded : undefined;
  return active !== undefined;
}

/** Loads the addon under Node; resolves to undefined (TypeScript loops) when it is unavailable. */
export async function loadNativeKernel(): Promise<NativeKernel | undefined> {
  const proc = (
    globalThis as { process?: { versions?: { node?: string }; env?: Record<string, string | undefined> } }
  ).process;
  if (typeof proc?.versions?.node !== "string") {
    unavailable = "not under Node (browsers use the TypeScript loops)";
    return undefined;
  }
  if (proc.env?.DELTACELLS_NATIVE === "0") {
    unavailable = "disabled by DELTACELLS_NATIVE=0";
    return undefined;
  }
  try {
    const specifier = ["node", "module"].join(":");
    const { createRequire } = (await import(/* @vite-ignore */ specifier)) as {
      createRequire(url: string): (id: string) => unknown;
    };
    // src/codec/ and dist/codec/ are both two levels below the package root, where build/ is.
    loaded = createRequire(import.meta.url)("../../build/Release/deltacells_kernel.node") as NativeKernel;
    active = loaded;
  } catch (err) {
    // Decoding still works, with the TypeScript loops; codecInfo() tells why (and how much slower).
    loaded = undefined;
    unavailable = `build/Release/deltacells_kernel.node did not load: ${err instanceof Error ? err.message : String(err)}`;
  }
  return active;
}
