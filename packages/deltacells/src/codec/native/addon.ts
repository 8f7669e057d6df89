/**
 * The native kernel's interface (native/kernel.c, built by node-gyp at install), shared by the
 * loaders of `#native` (addon-node.ts under Node, addon-browser.ts elsewhere).
 */

/**
 * The addon version these sources call; kernel.c exports the same number as `version`. Raise
 * both together whenever a function's arguments or results change: an addon built from older
 * sources is then refused (codecInfo() says why) and the TypeScript loops decode.
 */
export const NATIVE_KERNEL_VERSION = 4;

export interface NativeKernel {
  /** The addon's interface version: {@link NATIVE_KERNEL_VERSION} or the addon is not used. */
  readonly version: number;
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
   * the caller (one with exceptions, or one that failed a check).
   */
  chunks(
    bytes: Uint8Array,
    plan: Float64Array,
    k0: number,
    k1: number,
    indptr: Float64Array,
    indices: Int32Array,
    data: Int32Array | Float32Array,
    nGenes: number,
  ): number;
  /** `indices[i] = map[indices[i]]` for `i` in `[s, e)`: false if an index was outside the map. */
  renumber(indices: Int32Array, s: number, e: number, map: Int32Array): boolean;
  /**
   * `chunks`, each decoded chunk's indices then replaced by `map[index]` (`map`: nGenes entries)
   * while still in cache; a chunk it returns to the caller is not renumbered.
   */
  chunksRenumbered(
    bytes: Uint8Array,
    plan: Float64Array,
    k0: number,
    k1: number,
    indptr: Float64Array,
    indices: Int32Array,
    data: Int32Array | Float32Array,
    nGenes: number,
    map: Int32Array,
  ): number;
  /**
   * `dst[at ..] = src[s .. e)` (both Int32Array, both Float32Array or, since version 3, both
   * Uint8Array) by memcpy, shared memory included (where `TypedArray#set` is 1.7-3x slower);
   * false on out-of-range arguments.
   */
  copy(
    dst: Int32Array | Float32Array | Uint8Array,
    at: number,
    src: Int32Array | Float32Array | Uint8Array,
    s: number,
    e: number,
  ): boolean;
  /**
   * `dst[at + j - s] = map[src[j]]` for `j` in `[s, e)` (Int32Arrays, shared memory included): a
   * row's copy and its renumbering in one pass; false on out-of-range or overlapping arguments or
   * an index outside the map (the caller then fails).
   */
  copyMapped(dst: Int32Array, at: number, src: Int32Array, s: number, e: number, map: Int32Array): boolean;
  /**
   * One decoded chunk's rows copied to their slots (`ScatterJob.slots` from slot `q` on, rows
   * before `cellHi`; row `r` is `[indptr[r] - nnzLo, indptr[r + 1] - nnzLo)` of `indices` and
   * `data`), the indices renumbered through `map` when given: the scatter loop's two calls per row
   * in one per chunk. Returns the first slot it did not write: the first row at or past `cellHi`,
   * or the first slot with anything off (its row, target, range, an index outside the map), which
   * the caller's loop then handles with its own checks.
   */
  scatterRows(
    indices: Int32Array,
    data: Int32Array | Float32Array,
    indptr: Float64Array,
    nnzLo: number,
    slots: Float64Array,
    q: number,
    cellLo: number,
    cellHi: number,
    targetIndices: Int32Array[],
    targetData: (Int32Array | Float32Array)[],
    map?: Int32Array,
  ): number;
  /** This addon's zstd alone (benchmarks): bytes written, or -1. */
  decompress(src: Uint8Array, dst: Uint8Array): number;
  crc32(bytes: Uint8Array, crc: number): number;
  /**
   * The instruction set in use (2: AVX2 loops and a PCLMULQDQ CRC, 1: SSE2, 0: plain C), after
   * lowering it to `level` if given (tests compare the paths; never above what the CPU has;
   * process-wide: worker threads share it).
   */
  isa(level?: number): number;
  /** Copies and checks the int64 indptr at `off`: -1 if fine, else the first bad entry. */
  indptr(bytes: Uint8Array, off: number, nCells: number, nnz: number, out: Float64Array): number;
  /** Since version 4: makes the file open as `fd` at least `bytes` long. Throws with the reason. */
  reserveFile(fd: number, bytes: number): void;
  /**
   * Since version 4: bytes `[offset, offset + length)` of the file open as `fd`, mapped shared
   * (read and write) as an ArrayBuffer. The process maps each range once, for all its threads
   * (each thread's ArrayBuffer over the same memory, so that a page faults in once, not once per
   * thread; unmapped when the last is collected). Every process mapping the file sees the same
   * memory. `offset` is a multiple of the page size and the file holds the bytes already; throws
   * with the reason otherwise.
   */
  mapFile(fd: number, offset: number, length: number): ArrayBuffer;
  /**
   * Since version 4: the pages of `[offset, offset + length)` of `buffer` (`mapFile(fd, 0, ...)`)
   * allocated and mapped writable now, in one pass (Linux; nothing elsewhere), so that running out
   * of room is this call's error (code `ENOSPC`), not a SIGBUS when a page is first written.
   */
  allocateMapped(fd: number, buffer: ArrayBuffer, offset: number, length: number): void;
}

/**
 * Every function of {@link NativeKernel}. Some were added without a version change, so an addon is
 * checked for each of them too: one built before any of them is refused like a stale version.
 */
export const NATIVE_KERNEL_FUNCTIONS = [
  "gaps",
  "vals",
  "chunks",
  "renumber",
  "chunksRenumbered",
  "decompress",
  "crc32",
  "isa",
  "indptr",
  "copy",
  "copyMapped",
  "scatterRows",
  "reserveFile",
  "mapFile",
  "allocateMapped",
] as const satisfies readonly (keyof NativeKernel)[];

/**
 * The outcome of loading the addon: the kernel, or why there is none, and whether to say so on
 * stderr (`warn`: a build the user can fix by rebuilding, seen from Node's main thread, so that the
 * pool's workers, which load it too, do not repeat it).
 */
export type AddonLoad =
  | { kernel: NativeKernel; unavailable?: undefined; warn?: undefined }
  | { kernel?: undefined; unavailable: string; warn?: boolean };
