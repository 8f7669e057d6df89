/**
 * Reading elements of one 1-D array: exact byte ranges when the array is byte-addressable and the
 * store serves ranges, otherwise whole chunks, decoded once and kept in a shared cache for reuse.
 */
import { constructorOf, type NumericArray } from "./dtypes.js";
import { IncompleteError } from "./errors.js";
import { keyOf, type ReadableStore } from "./store.js";
import { type ArrayInfo, chunkCount, decodeChunk, isByteAddressable, typedView } from "./zarr.js";

/** Elements fetched by {@link ArrayReader.ranges}, read back by their index in the whole array. */
export interface Fetched {
  /** Element `i` (which must lie in one of the ranges fetched). */
  at(i: number): number | bigint;
}

/** The index of the last entry of ascending `starts` that is `<= value`. */
function lastAtOrBefore(starts: readonly number[], value: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] as number) <= value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Runs at most `limit` tasks at once; the rest wait their turn in order. */
export class Limiter {
  #active = 0;
  readonly #queue: (() => void)[] = [];
  constructor(readonly limit = 64) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.limit) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#active++;
    try {
      return await task();
    } finally {
      this.#active--;
      this.#queue.shift()?.();
    }
  }
}

/** Decoded chunks kept for reuse, least recently used dropped first past a byte budget. */
export class ChunkCache {
  readonly #entries = new Map<string, { chunk: Promise<NumericArray>; bytes: number }>();
  #bytes = 0;
  /** @param budget bytes of decoded chunks to keep (default 64 MiB). */
  constructor(readonly budget = 64 * 1024 * 1024) {}

  /** The chunk under `key`, loading it once even when asked for concurrently. */
  get(key: string, bytes: number, load: () => Promise<NumericArray>): Promise<NumericArray> {
    const hit = this.#entries.get(key);
    if (hit !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit.chunk;
    }
    const chunk = load();
    const entry = { chunk, bytes };
    this.#entries.set(key, entry);
    this.#bytes += bytes;
    chunk.catch(() => {
      if (this.#entries.get(key) === entry) {
        this.#entries.delete(key);
        this.#bytes -= bytes;
      }
    });
    while (this.#bytes > this.budget && this.#entries.size > 1) {
      const [oldest, value] = this.#entries.entries().next().value as [string, { bytes: number }];
      this.#entries.delete(oldest);
      this.#bytes -= value.bytes;
    }
    return chunk;
  }

  /** Forget every chunk. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/** Reads elements of one array from a store. */
export class ArrayReader {
  readonly #ranged: boolean;
  constructor(
    readonly store: ReadableStore,
    readonly root: string,
    readonly info: ArrayInfo,
    readonly cache: ChunkCache,
    /** Bounds the requests in flight, so a wave of thousands does not exhaust sockets or file handles. */
    readonly limiter: Limiter = new Limiter(),
  ) {
    this.#ranged = isByteAddressable(info) && typeof store.getRange === "function";
  }

  /** Whether reads go to exact byte ranges rather than whole chunks. */
  get ranged(): boolean {
    return this.#ranged;
  }

  #key(index: number): string {
    return keyOf(this.root, `${this.info.path}/${this.info.chunkKey(index)}`);
  }

  /** Chunk `index`, decoded, from the cache or the store (a missing chunk is the fill value, as in zarr). */
  chunk(index: number, signal?: AbortSignal): Promise<NumericArray> {
    const key = this.#key(index);
    const Ctor = constructorOf(this.info.dtype);
    return this.cache.get(key, this.info.chunk * Ctor.BYTES_PER_ELEMENT, async () => {
      const stored = await this.limiter.run(() => this.store.get(key, signal ? { signal } : undefined));
      if (stored === undefined) {
        const filled = new Ctor(this.info.chunk);
        if (this.info.fillValue !== 0)
          filled.fill(
            (typeof filled[0] === "bigint" ? BigInt(this.info.fillValue) : this.info.fillValue) as never,
          );
        return filled;
      }
      return decodeChunk(stored, this.info, index);
    });
  }

  /** The chunk indices elements `[start, end)` fall in. */
  chunksOf(start: number, end: number): number[] {
    if (end <= start) return [];
    const out: number[] = [];
    for (let c = Math.floor(start / this.info.chunk); c <= Math.floor((end - 1) / this.info.chunk); c++)
      out.push(c);
    return out;
  }

  /** Elements `[start, end)` as a fresh array: one byte range, or the chunks holding them. */
  async range(start: number, end: number, signal?: AbortSignal): Promise<NumericArray> {
    const Ctor = constructorOf(this.info.dtype);
    if (end <= start) return new Ctor(0);
    if (this.#ranged) {
      const width = Ctor.BYTES_PER_ELEMENT;
      const key = this.#key(0);
      const getRange = this.store.getRange as NonNullable<ReadableStore["getRange"]>;
      let bytes: Uint8Array | undefined;
      try {
        bytes = await this.limiter.run(() =>
          getRange.call(
            this.store,
            key,
            { offset: start * width, length: (end - start) * width },
            signal ? { signal } : undefined,
          ),
        );
      } catch (cause) {
        // A store saying the range runs past the object (HTTP 416): the object is shorter than the
        // array its metadata declares, which is damage, not a transient failure.
        if ((cause as { _tag?: unknown } | null)?._tag !== "RangeNotSatisfiable") throw cause;
        throw new IncompleteError(
          `${key} is shorter than elements [${start}, ${end}) of its ${this.info.length}-element ${this.info.dtype} array: the object is truncated. Rewrite the store.`,
          { where: key, cause },
        );
      }
      if (bytes === undefined) {
        throw new IncompleteError(
          `${key} is missing, though the store's block says it is complete: the object was removed after the store was written. Rewrite the store.`,
          { where: key },
        );
      }
      if (bytes.byteLength !== (end - start) * width) {
        throw new IncompleteError(
          `${key} answered ${bytes.byteLength} bytes for elements [${start}, ${end}) of ${this.info.dtype}, not ${(end - start) * width}: the object is shorter than its metadata says. Rewrite the store.`,
          { where: key },
        );
      }
      return typedView(bytes, Ctor);
    }
    const chunks = this.chunksOf(start, end);
    const decoded = await Promise.all(chunks.map((c) => this.chunk(c, signal)));
    const out = new Ctor(end - start);
    const size = this.info.chunk;
    decoded.forEach((values, k) => {
      const base = (chunks[k] as number) * size;
      const lo = Math.max(start, base) - base;
      const hi = Math.min(end, base + size) - base;
      out.set(values.subarray(lo, hi) as never, base + lo - start);
    });
    return out;
  }

  /**
   * Several element ranges `[lo, hi)` in one wave, kept for lookups by index (small ones: the
   * `indptr` brackets of a batch). With exact byte ranges, one request per range (the caller merges
   * touching ones); otherwise every chunk any range touches, each fetched once.
   */
  async ranges(runs: readonly (readonly [number, number])[], signal?: AbortSignal): Promise<Fetched> {
    const live = runs.filter(([lo, hi]) => hi > lo);
    if (this.#ranged) {
      const buffers = await Promise.all(live.map(([lo, hi]) => this.range(lo, hi, signal)));
      const starts = live.map(([lo]) => lo);
      return {
        at: (i) => {
          const k = lastAtOrBefore(starts, i);
          return (buffers[k] as NumericArray)[i - (starts[k] as number)] as number | bigint;
        },
      };
    }
    const wanted = new Set<number>();
    for (const [lo, hi] of live) for (const c of this.chunksOf(lo, hi)) wanted.add(c);
    const indices = [...wanted];
    const decoded = await Promise.all(indices.map((c) => this.chunk(c, signal)));
    const chunks = new Map(indices.map((c, k) => [c, decoded[k] as NumericArray]));
    const size = this.info.chunk;
    return { at: (i) => (chunks.get(Math.floor(i / size)) as NumericArray)[i % size] as number | bigint };
  }

  /**
   * Copy many element ranges into `out` in one wave: `segments[k] = [lo, hi, at]` puts elements
   * `[lo, hi)` at `out[at]`. Touching ranges are fetched as one; each chunk is fetched once and
   * copied from as soon as it arrives, so a batch never holds more than its answer plus the chunks
   * in flight (and the cache's budget).
   */
  async gather(
    segments: readonly (readonly [number, number, number])[],
    out: NumericArray,
    signal?: AbortSignal,
  ): Promise<void> {
    const live = segments.filter(([lo, hi]) => hi > lo);
    if (this.#ranged) {
      const order = [...live].sort((a, b) => a[0] - b[0]);
      const runs: { lo: number; hi: number; members: (readonly [number, number, number])[] }[] = [];
      for (const segment of order) {
        const last = runs.at(-1);
        if (last !== undefined && segment[0] <= last.hi) {
          last.hi = Math.max(last.hi, segment[1]);
          last.members.push(segment);
        } else {
          runs.push({ lo: segment[0], hi: segment[1], members: [segment] });
        }
      }
      await Promise.all(
        runs.map(async (run) => {
          const buffer = await this.range(run.lo, run.hi, signal);
          for (const [lo, hi, at] of run.members)
            out.set(buffer.subarray(lo - run.lo, hi - run.lo) as never, at);
        }),
      );
      return;
    }
    const size = this.info.chunk;
    const pieces = new Map<number, [number, number, number][]>();
    for (const [lo, hi, at] of live) {
      for (let c = Math.floor(lo / size); c * size < hi; c++) {
        const start = Math.max(lo, c * size);
        const end = Math.min(hi, (c + 1) * size);
        let list = pieces.get(c);
        if (list === undefined) pieces.set(c, (list = []));
        list.push([start - c * size, end - c * size, at + start - lo]);
      }
    }
    await Promise.all(
      [...pieces].map(async ([c, list]) => {
        const chunk = await this.chunk(c, signal);
        for (const [start, end, at] of list) out.set(chunk.subarray(start, end) as never, at);
      }),
    );
  }

  /** The whole array. */
  all(signal?: AbortSignal): Promise<NumericArray> {
    return this.range(0, this.info.length, signal);
  }

  /** How many chunks the array has. */
  get chunkCount(): number {
    return chunkCount(this.info);
  }
}
