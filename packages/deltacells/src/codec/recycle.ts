/**
 * Decoded tiles whose arrays are lent, not given: {@link RecycledTile}. Allocating a tile's output
 * anew costs more than decoding it (fresh memory is page-faulted in: 0.39-0.62x of zstd-only,
 * docs/deltacells-format.md), so the pool and the dataset reader decode into buffers they keep and
 * hand out views of them; `release()` gives a buffer back for the next tile. Nothing is reused
 * before the caller releases it, and a released tile refuses to be read.
 */
import { DeltacellsError } from "../errors.js";
import type { DecodedTile } from "./decode.js";

/**
 * A decoded tile whose arrays belong to a pool or a dataset reader until released. Valid until
 * `release()` (or the end of a `using` block, where the runtime has `Symbol.dispose`); then its
 * buffers decode later tiles, reading `indptr`, `indices` or `data` through the tile throws
 * `InvalidState`, and views of arrays the reader owns are detached (length 0; copying from them
 * throws). Keep data past `release()` by copying it (`tile.indices.slice()`). Not releasing is
 * always correct: the buffers are then garbage-collected, and the next tile gets new ones (slower).
 * A tile decoded into the caller's own `out` arrays stays the caller's: `release()` does nothing.
 */
export interface RecycledTile extends DecodedTile {
  /** Gives the arrays back for reuse; idempotent. */
  release(): void;
  /** Whether `release()` was called. */
  readonly released: boolean;
  /** `release()`, for `using tile = ...` (TypeScript 5.2+; present where the runtime has `Symbol.dispose`). */
  [Symbol.dispose](): void;
}

/** What a released tile answers when read. */
function releasedError(field: string, object: string | undefined): DeltacellsError {
  return new DeltacellsError(
    `tile${object ? ` ${object}` : ""} was released and its ${field} now holds another tile's data: copy what you keep (e.g. .slice()) before release()`,
    { tag: "InvalidState", object, field, expected: "a tile not yet released", found: "released" },
  );
}

const disposeKey = (Symbol as { dispose?: symbol }).dispose;

/** `tile` as a {@link RecycledTile} whose `release()` calls `giveBack` once, then refuses reads. */
export function recycledTile(tile: DecodedTile, giveBack: () => void, object?: string): RecycledTile {
  let { indptr, indices, data } = tile;
  let released = false;
  const t = {
    nCells: tile.nCells,
    nGenes: tile.nGenes,
    nnz: tile.nnz,
    get indptr(): Float64Array {
      if (released) throw releasedError("indptr", object);
      return indptr;
    },
    get indices(): Int32Array {
      if (released) throw releasedError("indices", object);
      return indices;
    },
    get data(): Int32Array | Float32Array {
      if (released) throw releasedError("data", object);
      return data;
    },
    get released() {
      return released;
    },
    release() {
      if (released) return;
      released = true;
      // Drop the views so that this object no longer keeps the buffers alive.
      indptr = EMPTY_F64;
      indices = data = EMPTY_I32;
      giveBack();
    },
  };
  if (disposeKey !== undefined) (t as Record<symbol, unknown>)[disposeKey] = t.release;
  return t as RecycledTile;
}

const EMPTY_F64 = new Float64Array(0);
const EMPTY_I32 = new Int32Array(0);

/** A tile decoded into the caller's own arrays: `release()` only sets `released`; the arrays stay readable. */
export function ownedTile(tile: DecodedTile): RecycledTile {
  let released = false;
  const t = {
    ...tile,
    get released() {
      return released;
    },
    release() {
      released = true;
    },
  };
  if (disposeKey !== undefined) (t as Record<symbol, unknown>)[disposeKey] = t.release;
  return t as RecycledTile;
}

/**
 * Buffers kept for reuse, up to a byte budget that follows the work: the larger of `minBudget`
 * and the most bytes ever lent at once (counted up to `maxBudget`), so a loop with N tiles in
 * flight reuses N buffers instead of allocating on every turn, while tiles kept unreleased and
 * then released all at once do not leave more than `maxBudget` pinned.
 */
export class BufferRecycler<B extends ArrayBuffer | SharedArrayBuffer> {
  private free: B[] = [];
  private freeBytes = 0;
  private lent = 0;
  private peak = 0;
  /**
   * `allocate` makes new buffers. With `detach`, a released (non-shared) buffer is moved to a new
   * handle (a transfer, O(1)), so every view still held on it, e.g. a released tile's `indices`
   * kept by mistake, is detached: it reads as empty and copying from it throws, instead of
   * silently showing the next tile's numbers. Shared memory cannot be detached.
   */
  constructor(
    private readonly allocate: (size: number) => B,
    private readonly detach = false,
    private readonly minBudget = 64 * 1024 * 1024,
    private readonly maxBudget = 256 * 1024 * 1024,
  ) {}

  /**
   * A buffer of at least `size` bytes: the smallest free one that fits and, among those, the one
   * released last (still in cache: a decode into a 7.8 MB buffer written a moment ago runs ~15%
   * faster than into one that has gone cold), else a new one.
   */
  acquire(size: number): B {
    let best = -1;
    for (let i = this.free.length - 1; i >= 0; i--) {
      const b = this.free[i]!;
      if (b.byteLength >= size && (best < 0 || b.byteLength < this.free[best]!.byteLength)) best = i;
    }
    let b: B;
    if (best >= 0) {
      b = this.free.splice(best, 1)[0]!;
      this.freeBytes -= b.byteLength;
    } else {
      b = this.allocate(roundUp(size));
    }
    this.lent += b.byteLength;
    this.peak = Math.max(this.peak, this.lent);
    return b;
  }

  /** Takes back a buffer from {@link acquire}. */
  release(b: B): void {
    this.lent -= b.byteLength;
    if (this.detach) b = structuredClone(b, { transfer: [b as ArrayBuffer] });
    this.free.push(b);
    this.freeBytes += b.byteLength;
    const budget = Math.max(this.minBudget, Math.min(this.maxBudget, this.peak));
    // Over budget: drop the smallest buffers first (large ones are the costly ones to allocate),
    // keeping the others in the order they were released.
    while (this.freeBytes > budget && this.free.length > 0) {
      let smallest = 0;
      for (let i = 1; i < this.free.length; i++)
        if (this.free[i]!.byteLength < this.free[smallest]!.byteLength) smallest = i;
      this.freeBytes -= this.free.splice(smallest, 1)[0]!.byteLength;
    }
  }
}

/**
 * Sizes in steps of 1/8 of a power of two (at least 64 KiB): tiles of similar sizes share buffers,
 * with at most 12.5% unused.
 */
function roundUp(size: number): number {
  if (size <= 1 << 16) return 1 << 16;
  const step = 2 ** (Math.floor(Math.log2(size)) - 3);
  return Math.ceil(size / step) * step;
}

/** Output arrays for `nCells` cells and `nnz` nonzeros laid out in one buffer: indptr, indices, data. */
export function outputViews(
  buffer: ArrayBuffer | SharedArrayBuffer,
  nCells: number,
  nnz: number,
  values: "int32" | "float32",
): { indptr: Float64Array; indices: Int32Array; data: Int32Array | Float32Array } {
  const indptrBytes = 8 * (nCells + 1);
  return {
    indptr: new Float64Array(buffer, 0, nCells + 1),
    indices: new Int32Array(buffer, indptrBytes, nnz),
    data:
      values === "float32"
        ? new Float32Array(buffer, indptrBytes + 4 * nnz, nnz)
        : new Int32Array(buffer, indptrBytes + 4 * nnz, nnz),
  };
}

/** Bytes {@link outputViews} needs. */
export function outputBytes(nCells: number, nnz: number): number {
  return 8 * (nCells + 1) + 8 * nnz;
}

/** Whether this context has shared memory (always in Node; in browsers, cross-origin-isolated pages only). */
export function canShareMemory(): boolean {
  if (typeof SharedArrayBuffer === "undefined") return false;
  const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated;
  return isolated !== false;
}

/** `size` bytes lent from `recycler`, with the way to give them back. */
export interface LentBytes {
  bytes: Uint8Array;
  release(): void;
}

/**
 * Where lent bytes start in their buffer. Tiles are read into them from files, and the kernel's
 * copy out of the page cache (page-aligned) runs ~3x slower on AMD EPYC (`rep movsb`) when the
 * destination lies 1 to 31 bytes past a page boundary: 0.35 against 0.12 ms per 0.72 MB tile,
 * by blocking read or on the thread pool alike. glibc places a large buffer (a mapping of its own)
 * 16 bytes past one, so reads into its first byte were that slow case, and a process's tile reads
 * ran fast or slow by where its allocator had happened to put its buffers (bench/RESULTS.md). 48
 * bytes in, such a buffer's bytes start 64 past the boundary; one placed anywhere else is no
 * likelier to be slow than before (1 in 256 of glibc's 16-byte steps).
 */
export const LENT_OFFSET = 48;

/** Lends `size` bytes of one of `recycler`'s buffers, {@link LENT_OFFSET} bytes into it. */
export function lendBytes(
  recycler: BufferRecycler<ArrayBuffer | SharedArrayBuffer>,
  size: number,
): LentBytes {
  const buffer = recycler.acquire(LENT_OFFSET + size);
  return { bytes: new Uint8Array(buffer, LENT_OFFSET, size), release: () => recycler.release(buffer) };
}
