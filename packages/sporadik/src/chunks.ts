/**
 * Reading elements of one 1-D array: exact byte ranges when the array is byte-addressable and the
 * store serves ranges, otherwise whole chunks, decoded once and kept in a shared cache for reuse.
 */
import { constructorOf, type NumericArray } from "./dtypes.js";
import { IncompleteError } from "./errors.js";
import { keyOf, type ReadableStore } from "./store.js";
import {
  type ArrayInfo,
  chunkCount,
  type Decompressors,
  decodeChunk,
  isByteAddressable,
  typedView,
} from "./zarr.js";

/** Runs at most `limit` tasks at once; the rest wait their turn in order. */
export class Limiter {
  #active = 0;
  // A queue read from `#head` rather than shifted: a wave of thousands would make every shift O(n).
  #waiting: ((() => void) | undefined)[] = [];
  #head = 0;
  constructor(readonly limit = 64) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active < this.limit) this.#active++;
    // A finishing task hands its slot straight to the next in line, so `#active` stays put.
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #release(): void {
    if (this.#head === this.#waiting.length) {
      this.#active--;
      return;
    }
    const next = this.#waiting[this.#head] as () => void;
    this.#waiting[this.#head++] = undefined;
    if (this.#head === this.#waiting.length) {
      this.#waiting = [];
      this.#head = 0;
    }
    next();
  }
}

interface Entry {
  chunk: Promise<NumericArray>;
  bytes: number;
  /** Readers copying from the chunk right now; its buffer is not reused while any are. */
  users: number;
  /** Dropped from the cache (past the budget, or cleared). */
  evicted: boolean;
  /** Handed out by {@link ChunkCache.get}: someone outside may keep it, so it is never reused. */
  escaped: boolean;
  /** The buffer the cache lent the loader and the chunk was decoded into, reusable once dropped. */
  lent?: ArrayBuffer | undefined;
}

/**
 * Decoded chunks kept for reuse, least recently used dropped first past a byte budget. A dropped
 * chunk's buffer is decoded into again once nothing reads from it, so a batch touching far more
 * chunks than the budget holds allocates (and the garbage collector reclaims) almost nothing per
 * chunk. Only buffers the cache lent itself are reused; a chunk handed out by {@link get} never is.
 */
export class ChunkCache {
  readonly #entries = new Map<string, Entry>();
  readonly #spares = new Map<number, ArrayBuffer[]>();
  // Spares are outside the budget, so they get a quarter of it on top (at least 1 MiB): 16 MiB by
  // default, enough for the chunks a wave has in flight.
  #spareBytes = 0;
  #bytes = 0;
  /** @param budget bytes of decoded chunks to keep (default 64 MiB). */
  constructor(readonly budget = 64 * 1024 * 1024) {}

  /** The chunk under `key`, loading it once even when asked for concurrently. */
  get(key: string, bytes: number, load: () => Promise<NumericArray>): Promise<NumericArray> {
    const entry = this.#entry(key, bytes, () => load());
    entry.escaped = true;
    return entry.chunk;
  }

  /**
   * Run `read` on the chunk under `key` (loading it once, as {@link get}), synchronously, while the
   * chunk's buffer is guaranteed not to be reused. `load` may decode into `into(bytes)`, a buffer
   * the cache lends and takes back when the chunk is dropped and no `read` is running on it.
   */
  async use(
    key: string,
    bytes: number,
    load: (into: (bytes: number) => Uint8Array) => Promise<NumericArray>,
    read: (chunk: NumericArray) => void,
  ): Promise<void> {
    const entry = this.#entry(key, bytes, load);
    entry.users++;
    try {
      read(await entry.chunk);
    } finally {
      entry.users--;
      this.#recycle(entry);
    }
  }

  #entry(
    key: string,
    bytes: number,
    load: (into: (bytes: number) => Uint8Array) => Promise<NumericArray>,
  ): Entry {
    const hit = this.#entries.get(key);
    if (hit !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    let lent: ArrayBuffer | undefined;
    const into = (size: number) => {
      const spare = this.#spares.get(size)?.pop();
      if (spare !== undefined) this.#spareBytes -= size;
      // A spare holds an old chunk's bytes; the loader overwrites all of them or fails.
      lent = spare ?? new ArrayBuffer(size);
      return new Uint8Array(lent);
    };
    const entry: Entry = { chunk: load(into), bytes, users: 0, evicted: false, escaped: false };
    entry.chunk.then(
      (chunk) => {
        if (lent !== undefined && chunk.buffer === lent) {
          entry.lent = lent;
          this.#recycle(entry);
        }
      },
      () => {
        if (this.#entries.get(key) === entry) {
          this.#entries.delete(key);
          this.#bytes -= bytes;
        }
      },
    );
    this.#entries.set(key, entry);
    this.#bytes += bytes;
    while (this.#bytes > this.budget && this.#entries.size > 1) {
      const [oldest, dropped] = this.#entries.entries().next().value as [string, Entry];
      this.#entries.delete(oldest);
      this.#bytes -= dropped.bytes;
      dropped.evicted = true;
      this.#recycle(dropped);
    }
    return entry;
  }

  /** Take back a dropped chunk's buffer once nothing can read from it any more. */
  #recycle(entry: Entry): void {
    const buffer = entry.lent;
    if (buffer === undefined || !entry.evicted || entry.users > 0 || entry.escaped) return;
    entry.lent = undefined;
    if (this.#spareBytes + buffer.byteLength > Math.max(this.budget / 4, 1 << 20)) return;
    let list = this.#spares.get(buffer.byteLength);
    if (list === undefined) this.#spares.set(buffer.byteLength, (list = []));
    list.push(buffer);
    this.#spareBytes += buffer.byteLength;
  }

  /** Forget every chunk. */
  clear(): void {
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    this.#bytes = 0;
    for (const entry of entries) {
      entry.evicted = true;
      this.#recycle(entry);
    }
  }
}

/** `values` set to the array's fill value throughout. */
function fillWith(values: NumericArray, info: ArrayInfo): NumericArray {
  const big = values instanceof BigInt64Array || values instanceof BigUint64Array;
  return values.fill((big ? BigInt(info.fillValue) : info.fillValue) as never);
}

/** How an {@link ArrayReader} reaches its store and decodes its chunks. */
export interface ArrayReaderOptions {
  /** Decoded chunks kept for reuse; default a 64 MiB cache of its own. */
  cache?: ChunkCache;
  /** Bounds the requests in flight, so a wave of thousands does not exhaust sockets or file handles. */
  limiter?: Limiter;
  /** Decoders used instead of zarrita's registry for the codecs they name. */
  decompressors?: Decompressors;
  /**
   * Called when chunk `index` is not in the store, before it is read as the fill value (zarr's
   * rule for a complete store); throws to refuse where the fill value cannot be what was written.
   */
  onMissing?: (index: number, key: string, signal?: AbortSignal) => Promise<void>;
  /**
   * Called with every chunk this reader decodes, once per decode (reads served from the cache are
   * not checked again); throws to refuse a chunk whose elements cannot be what was written.
   */
  onDecoded?: (chunk: NumericArray, index: number, key: string) => void;
}

/**
 * Segments to gather: triples `lo, hi, at` one after another, each putting elements `[lo, hi)` of
 * the array at `out[at]`.
 */
export type Segments = Float64Array;

/** Reads elements of one array from a store. */
export class ArrayReader {
  readonly cache: ChunkCache;
  readonly limiter: Limiter;
  readonly #ranged: boolean;
  readonly #decompressors: Decompressors | undefined;
  readonly #width: number;
  readonly #onMissing: ArrayReaderOptions["onMissing"];
  readonly #onDecoded: ArrayReaderOptions["onDecoded"];
  readonly #missing = new Set<number>();

  constructor(
    readonly store: ReadableStore,
    readonly root: string,
    readonly info: ArrayInfo,
    options: ArrayReaderOptions = {},
  ) {
    this.cache = options.cache ?? new ChunkCache();
    this.limiter = options.limiter ?? new Limiter();
    this.#decompressors = options.decompressors;
    this.#onMissing = options.onMissing;
    this.#onDecoded = options.onDecoded;
    this.#ranged = isByteAddressable(info) && typeof store.getRange === "function";
    this.#width = constructorOf(info.dtype).BYTES_PER_ELEMENT;
  }

  /** Whether reads go to exact byte ranges rather than whole chunks. */
  get ranged(): boolean {
    return this.#ranged;
  }

  #key(index: number): string {
    return keyOf(this.root, `${this.info.path}/${this.info.chunkKey(index)}`);
  }

  /** The store key of chunk `index`. */
  keyOf(index: number): string {
    return this.#key(index);
  }

  /** Whether chunk `index` was found missing (and read as the fill value) by a read so far. */
  wasMissing(index: number): boolean {
    return this.#missing.has(index);
  }

  /** Whether any chunk was found missing (and read as the fill value) by a read so far. */
  get anyMissing(): boolean {
    return this.#missing.size > 0;
  }

  /** The chunk holding element `i`. */
  chunkOf(i: number): number {
    return Math.floor(i / this.info.chunk);
  }

  async #missingChunk(index: number, key: string, signal: AbortSignal | undefined): Promise<void> {
    await this.#onMissing?.(index, key, signal);
    this.#missing.add(index);
  }

  /**
   * Run `read` on chunk `index`, decoded, from the cache or the store (a missing chunk is the fill
   * value, as in zarr). The chunk is only valid during `read`: its buffer may be reused after.
   * `wave` is how many chunks the read it belongs to needs (told to the decompressor).
   */
  #withChunk(
    index: number,
    read: (chunk: NumericArray) => void,
    signal: AbortSignal | undefined,
    wave: number,
  ): Promise<void> {
    const key = this.#key(index);
    const Ctor = constructorOf(this.info.dtype);
    return this.cache.use(
      key,
      this.info.chunk * this.#width,
      async (into) => {
        const stored = await this.limiter.run(() => this.store.get(key, signal ? { signal } : undefined));
        if (stored === undefined) {
          await this.#missingChunk(index, key, signal);
          return fillWith(
            new Ctor(into(this.info.chunk * this.#width).buffer, 0, this.info.chunk),
            this.info,
          );
        }
        const chunk = await decodeChunk(stored, this.info, index, this.#decompressors, into, wave);
        this.#onDecoded?.(chunk, index, key);
        return chunk;
      },
      read,
    );
  }

  /** Bytes `[start, end)` of the elements, as one exact range request. */
  async #bytes(start: number, end: number, signal?: AbortSignal): Promise<Uint8Array> {
    const width = this.#width;
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
        { object: key, cause },
      );
    }
    if (bytes === undefined) {
      // zarr's rule: a chunk not stored is the fill value (zarr-python leaves out all-zero chunks).
      await this.#missingChunk(0, key, signal);
      const filled = fillWith(new (constructorOf(this.info.dtype))(end - start), this.info);
      return new Uint8Array(filled.buffer);
    }
    if (bytes.byteLength !== (end - start) * width) {
      throw new IncompleteError(
        `${key} answered ${bytes.byteLength} bytes for elements [${start}, ${end}) of ${this.info.dtype}, not ${(end - start) * width}: the object is shorter than its metadata says. Rewrite the store.`,
        { object: key },
      );
    }
    return bytes;
  }

  /** Elements `[start, end)` as a fresh array: one byte range, or the chunks holding them. */
  async range(start: number, end: number, signal?: AbortSignal): Promise<NumericArray> {
    const Ctor = constructorOf(this.info.dtype);
    // One exact range is already the answer: no copy (unless the store's bytes are misaligned).
    if (this.#ranged && end > start) return typedView(await this.#bytes(start, end, signal), Ctor);
    const out = new Ctor(Math.max(0, end - start));
    await this.gather(Float64Array.of(start, end, 0), out, signal);
    return out;
  }

  /**
   * Copy many element ranges into `out` in one wave (see {@link Segments}). With exact byte ranges,
   * touching or overlapping ranges are fetched as one and nothing else is merged; otherwise each
   * chunk any range touches is fetched once and copied from as soon as it arrives, so a batch never
   * holds more than its answer plus the chunks in flight (and the cache's budget).
   */
  async gather(segments: Segments, out: NumericArray, signal?: AbortSignal): Promise<void> {
    if (this.#ranged) return this.#gatherRanges(segments, out, signal);
    const size = this.info.chunk;
    // Pieces per chunk, as flat triples (offset in the chunk, end in the chunk, place in out).
    const pieces = new Map<number, number[]>();
    for (let s = 0; s < segments.length; s += 3) {
      const lo = segments[s] as number;
      const hi = segments[s + 1] as number;
      const at = segments[s + 2] as number;
      if (hi <= lo) continue;
      for (let c = Math.floor(lo / size); c * size < hi; c++) {
        const base = c * size;
        let list = pieces.get(c);
        if (list === undefined) pieces.set(c, (list = []));
        list.push(Math.max(lo, base) - base, Math.min(hi, base + size) - base, at + Math.max(lo, base) - lo);
      }
    }
    const copies: Promise<void>[] = [];
    for (const [c, list] of pieces) {
      copies.push(
        this.#withChunk(
          c,
          (chunk) => {
            for (let k = 0; k < list.length; k += 3)
              out.set(
                chunk.subarray(list[k] as number, list[k + 1] as number) as never,
                list[k + 2] as number,
              );
          },
          signal,
          pieces.size,
        ),
      );
    }
    await Promise.all(copies);
  }

  async #gatherRanges(segments: Segments, out: NumericArray, signal?: AbortSignal): Promise<void> {
    const count = segments.length / 3;
    const order = new Uint32Array(count);
    let live = 0;
    for (let k = 0; k < count; k++)
      if ((segments[3 * k + 1] as number) > (segments[3 * k] as number)) order[live++] = k;
    const sorted = order
      .subarray(0, live)
      .sort((a, b) => (segments[3 * a] as number) - (segments[3 * b] as number));
    const width = this.#width;
    const target = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
    const reads: Promise<void>[] = [];
    // Runs of segments whose ranges touch or overlap, each one request; copied in place as it lands.
    for (let first = 0; first < live; ) {
      const runLo = segments[3 * (sorted[first] as number)] as number;
      let runHi = segments[3 * (sorted[first] as number) + 1] as number;
      let last = first + 1;
      while (last < live && (segments[3 * (sorted[last] as number)] as number) <= runHi) {
        runHi = Math.max(runHi, segments[3 * (sorted[last] as number) + 1] as number);
        last++;
      }
      const members = sorted.subarray(first, last);
      reads.push(
        this.#bytes(runLo, runHi, signal).then((bytes) => {
          for (const k of members) {
            const lo = segments[3 * k] as number;
            const hi = segments[3 * k + 1] as number;
            const at = segments[3 * k + 2] as number;
            target.set(bytes.subarray((lo - runLo) * width, (hi - runLo) * width), at * width);
          }
        }),
      );
      first = last;
    }
    await Promise.all(reads);
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
