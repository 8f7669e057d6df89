/**
 * One 1-D zarr array written as its elements arrive, a chunk at a time, so no array is ever held
 * whole. The bytes are those {@link writeStore} writes for the same elements: the same chunk length
 * (capped at a short array's length, as zarr-python does), the same padding, the same skipped
 * all-zero chunks, the same metadata text. A byte-addressable array (one uncompressed chunk) is
 * spooled to temporary space and copied out once its length is known.
 *
 * @module
 */
import { constructorOf, type DataType, type NumericArray } from "./dtypes.js";
import { SporadikError } from "./errors.js";
import type { SpillFile, SpillSpace } from "./spill.js";
import { keyOf, type WritableStore } from "./store.js";
import { chunkFor } from "./writer.js";
import { arrayMetadataText, type CodecMetadata, compressorFor, encodeChunk } from "./zarr.js";

/**
 * Turns one chunk's raw little-endian bytes into its stored bytes. It may take ownership of `raw`
 * (move it to a worker thread, say): the caller never touches it again. `allocate`, when present,
 * hands out memory for the next chunks (buffers it took before and is done with, old bytes in
 * them), so a writer does not allocate a buffer per chunk. `toFile`, when present, stores the
 * chunk in the file at `path` itself (created or truncated) and resolves to the bytes written,
 * for a store whose objects are files ({@link FileWritableStore}): a worker thread that
 * compressed a chunk writes it, and its bytes never come back to the writer's thread.
 */
export type ChunkEncoder = ((
  raw: Uint8Array,
  compressors: readonly CodecMetadata[],
) => Promise<Uint8Array>) & {
  allocate?: (byteLength: number) => ArrayBuffer;
  toFile?: (raw: Uint8Array, compressors: readonly CodecMetadata[], path: string) => Promise<number>;
};

/** The WebAssembly encoder of {@link writeStore}: runs anywhere, on the calling thread. */
export const wasmEncoder: ChunkEncoder = (raw, compressors) =>
  encodeChunk(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength), compressors);

/**
 * A store that can take one object as a sequence of parts of known total length, without the
 * whole object in memory (a file written piece by piece, an S3 multipart upload). It is done with
 * a part (written, or copied) when it asks for the next one: the writer reuses its memory then.
 */
export interface PartsWritableStore extends WritableStore {
  setParts(key: string, byteLength: number, parts: AsyncIterable<Uint8Array>): Promise<void>;
}

/**
 * A store whose objects are files on this machine (a folder written with deferred syncs): `setFile`
 * hands `write` the path of `key`'s file (its folder made) to write the object there itself, and
 * resolves once the store has taken the file as written (`write`'s count of bytes) or, when
 * `write` failed, with the store's error for the object.
 */
export interface FileWritableStore extends WritableStore {
  setFile(key: string, write: (path: string) => Promise<number>): Promise<void>;
}

function hasSetFile(store: WritableStore): store is FileWritableStore {
  return typeof (store as Partial<FileWritableStore>).setFile === "function";
}

function hasSetParts(store: WritableStore): store is PartsWritableStore {
  return typeof (store as Partial<PartsWritableStore>).setParts === "function";
}

/** Writes in flight, at most `limit`: a new one waits for room, and the first failure is kept. */
export class InFlight {
  readonly #running = new Set<Promise<void>>();
  /**
   * Submitters waiting for room, woken (all of them: each checks again) when a write ends. Not a
   * `Promise.race` over the writes running: that adds a reaction to each of them per chunk
   * (32 x 2,500 for a 20 M-nonzero store), all kept until the write ends.
   */
  #waiting: (() => void)[] = [];
  #error: { cause: unknown } | undefined;
  constructor(readonly limit: number) {}

  #check(): void {
    if (this.#error !== undefined) throw this.#error.cause;
  }

  /** Start `task` once fewer than `limit` run; rejects with an earlier task's failure. */
  async submit(task: () => Promise<void>): Promise<void> {
    this.#check();
    while (this.#running.size >= this.limit) await new Promise<void>((wake) => this.#waiting.push(wake));
    this.#check();
    const running: Promise<void> = task()
      .catch((cause: unknown) => {
        this.#error ??= { cause };
      })
      .finally(() => {
        this.#running.delete(running);
        const waiting = this.#waiting;
        if (waiting.length === 0) return;
        this.#waiting = [];
        for (const wake of waiting) wake();
      });
    this.#running.add(running);
  }

  /** Wait for every write; rejects with the first failure. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running);
    this.#check();
  }
}

/** What every array of one store is written with. */
export interface ArrayContext {
  store: WritableStore;
  encoder: ChunkEncoder;
  inFlight: InFlight;
  spill: SpillSpace;
  byteAddressable: boolean;
  /** Chunks compressed with zstd's content checksum on (never with `byteAddressable`). */
  checksums?: boolean;
  /** Elements per chunk, when the caller fixed it (never capped at the array's length then). */
  chunk: number | undefined;
  /** Bytes an object written in parts parks in memory before the store opened it. Default 32 MiB. */
  parkInMemory?: number;
  /**
   * Bytes an object written in parts copies ahead of the store once it is open (written in the
   * background while the writer computes the next parts). Default 32 MiB.
   */
  writeBehind?: number;
  /**
   * Spare write-behind pieces, shared by the objects of one writer: the pieces of an object
   * closed (axis 0's) serve the next ones (axis 1's) instead of new memory.
   */
  pieces?: ArrayBuffer[];
}

const encoder = new TextEncoder();
/** Elements copied out of a spool per read. */
const SPOOL_READ = 1 << 20;

function isAllZero(values: NumericArray): boolean {
  for (let i = 0; i < values.length; i++) if (values[i] !== 0 && values[i] !== 0n) return false;
  return true;
}

function bytesOf(values: NumericArray): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** One array under `path`, written as elements are appended; {@link finish} writes its `zarr.json`. */
export class ArrayWriter {
  readonly #Ctor;
  readonly #full: number;
  #pending: NumericArray;
  #fill = 0;
  #flushed = 0;
  #spool: SpillFile | undefined;
  #spoolReady: Promise<SpillFile> | undefined;
  /** Byte-addressable with a known length into a store taking parts: bytes go straight to the object. */
  #direct: DirectObject | undefined;
  readonly #compressors: readonly CodecMetadata[];
  /**
   * A `data` array stores every chunk, all-zero ones too: every element of `data` is a stored
   * value, so a reader refuses a missing `data` chunk as damage rather than read it as zeros.
   */
  readonly #keepZeroChunks: boolean;
  /** Elements appended so far. */
  length = 0;

  /**
   * `expectedLength`, when known, lets a byte-addressable array stream straight into a store that
   * takes objects in parts (no spool); the object is refused at the end if the length differs.
   */
  constructor(
    private readonly context: ArrayContext,
    readonly path: string,
    readonly dtype: DataType,
    expectedLength?: number,
  ) {
    this.#Ctor = constructorOf(dtype);
    this.#compressors = [compressorFor(context.checksums === true)];
    this.#keepZeroChunks = path.endsWith("/data");
    const { store } = context;
    if (context.byteAddressable && expectedLength !== undefined && expectedLength > 0 && hasSetParts(store)) {
      this.#direct = new DirectObject(
        store,
        keyOf(path, "c/0"),
        expectedLength * this.#Ctor.BYTES_PER_ELEMENT,
        context.spill,
        context.parkInMemory ?? PARK_IN_MEMORY,
        context.writeBehind ?? WRITE_BEHIND,
        context.pieces ?? [],
      );
    }
    this.#full = context.chunk ?? chunkFor(dtype, Number.MAX_SAFE_INTEGER);
    this.#pending = context.byteAddressable ? new this.#Ctor(0) : this.#fresh();
  }

  /** Memory for the next chunk: the encoder's recycled buffers when it has them (old bytes in them). */
  #fresh(): NumericArray {
    const recycled = this.context.encoder.allocate?.(this.#full * this.#Ctor.BYTES_PER_ELEMENT);
    return recycled ? new this.#Ctor(recycled) : new this.#Ctor(this.#full);
  }

  /**
   * Append `values` (of this array's type). Resolves once they are copied (into a chunk, a spool,
   * or an object's write-behind queue): the caller may reuse their memory; writes may still run.
   *
   * With `release`, the caller lends `values` instead: an object written in parts queues them
   * uncopied and calls `release` once the store is done with them (written, or the object
   * failed or was dropped); any other array copies them and calls `release` before resolving.
   * `release` is called exactly once; the caller leaves `values` untouched until then.
   */
  async append(values: NumericArray, release?: () => void): Promise<void> {
    if (values.length === 0 || this.#direct === undefined || release === undefined) {
      try {
        await this.#append(values);
      } finally {
        release?.();
      }
      return;
    }
    this.length += values.length;
    return this.#direct.lend(bytesOf(values), release);
  }

  async #append(values: NumericArray): Promise<void> {
    if (values.length === 0) return;
    this.length += values.length;
    // Copied into the object's write-behind queue (or parked): the caller's memory is free on return.
    if (this.#direct) return this.#direct.push(bytesOf(values));
    if (this.context.byteAddressable) {
      this.#spoolReady ??= this.context.spill.create(this.path);
      this.#spool = await this.#spoolReady;
      await this.#spool.append([bytesOf(values)]);
      return;
    }
    let at = 0;
    while (at < values.length) {
      const take = Math.min(this.#full - this.#fill, values.length - at);
      this.#pending.set(values.subarray(at, at + take) as never, this.#fill);
      this.#fill += take;
      at += take;
      if (this.#fill === this.#full) {
        const full = this.#pending;
        this.#pending = this.#fresh();
        this.#fill = 0;
        await this.#emit(this.#flushed++, full);
      }
    }
  }

  async #emit(index: number, values: NumericArray): Promise<void> {
    const { store, encoder: encode, inFlight } = this.context;
    const key = keyOf(this.path, `c/${index}`);
    // Like zarr-python (and writeStore), an all-fill chunk is not stored (an old object there must
    // go), except in `data`.
    if (!this.#keepZeroChunks && isAllZero(values)) {
      await inFlight.submit(async () => {
        await store.delete?.(key);
      });
      return;
    }
    const toFile = encode.toFile;
    if (toFile !== undefined && hasSetFile(store)) {
      await inFlight.submit(() =>
        store.setFile(key, (path) => toFile(bytesOf(values), this.#compressors, path)),
      );
      return;
    }
    await inFlight.submit(async () => store.set(key, await encode(bytesOf(values), this.#compressors)));
  }

  /** Abandon the array: an object being written in parts is dropped, not landed. */
  async abort(): Promise<void> {
    await this.#direct?.abort();
  }

  /**
   * Close the object written in parts, if the array has one (else nothing to do before
   * {@link finish}). A writer with several such objects open closes them all, in the order they
   * were opened, before it finishes any: a store capping the writes in flight (a slot held per
   * object until it is written) starts a later object, and takes a metadata write, only once an
   * earlier object is closed.
   */
  async end(): Promise<void> {
    await this.#direct?.close();
  }

  /** Write what is left and the array's `zarr.json` (its length and chunk are known only now). */
  async finish(): Promise<void> {
    const { store } = this.context;
    if (this.context.byteAddressable) return this.#finishWhole();
    let chunk = this.#full;
    if (this.#flushed === 0 && this.context.chunk === undefined && this.length > 0) {
      // A short array is one chunk of exactly its length, as zarr-python and writeStore cut it.
      chunk = this.length;
      await this.#emit(0, this.#pending.subarray(0, this.length));
    } else if (this.#fill > 0) {
      // The edge chunk is stored whole, padded with the fill value (zeros; a recycled buffer has old bytes).
      const pending = this.#pending;
      new Uint8Array(pending.buffer, pending.byteOffset + this.#fill * pending.BYTES_PER_ELEMENT).fill(0);
      await this.#emit(this.#flushed++, pending);
    }
    this.#pending = new this.#Ctor(0);
    await store.set(
      keyOf(this.path, "zarr.json"),
      encoder.encode(arrayMetadataText(this.dtype, this.length, chunk, this.#compressors)),
    );
  }

  async #finishWhole(): Promise<void> {
    const { store, inFlight } = this.context;
    const chunk = Math.max(this.length, 1);
    await this.end();
    await store.set(
      keyOf(this.path, "zarr.json"),
      encoder.encode(arrayMetadataText(this.dtype, this.length, chunk, [])),
    );
    if (this.#direct) return;
    const spool = this.#spool;
    if (spool === undefined) return;
    const key = keyOf(this.path, "c/0");
    // Always written, zeros or not: a byte-addressable reader asks for exact ranges of this object.
    await inFlight.submit(async () => {
      const total = spool.bytes;
      if (hasSetParts(store)) {
        await store.setParts(key, total, spoolParts(spool, SPOOL_READ * 8));
      } else {
        await store.set(key, await spool.read(0, total));
      }
      await spool.remove();
    });
  }
}

/** Bytes of a parked backlog handed to the store per part. */
const BACKLOG_READ = 8 << 20;
/**
 * Bytes of parts an object parks in memory (copies) before the rest goes to temporary space. A
 * store may open an object (a file, an upload) after the writer pushed its first parts (one input
 * block's values is ~25 MB at 6 M int32 nonzeros): measured at load 6, one run in three parked two
 * or three blocks' parts before the folder had opened the files, when the arrays were started with
 * the first rows. The streaming writer now starts them when it is opened (value type declared), and
 * nothing was parked in the runs since. Only parts pushed before the store started are held, and
 * only until it asks for them.
 */
const PARK_IN_MEMORY = 32 << 20;
/**
 * Bytes of parts an object copies ahead of the store once the store is taking them (see
 * {@link DirectObject}). Waiting for the store to write each part before computing the next
 * serialised the two: in the byte-addressable bench (both layouts, 20 M nonzeros) the main thread
 * sat idle for about a third of the run. An input block's values are ~25 MB at 6 M int32
 * nonzeros, and an assembled range of axis 1 is 32 MiB per array: 32 MiB holds one while the
 * store writes the one before. At most two large objects are open at once (axis 0's `data` and
 * `indices`, then axis 1's), so this adds at most 64 MiB to the writer's memory.
 */
const WRITE_BEHIND = 32 << 20;
/**
 * Bytes per queued piece, buffers recycled from piece to piece. A store writes a piece with one
 * request and needs the JavaScript thread to start the next, which it gets only between the
 * writer's loops: large pieces keep the writes going while the writer computes.
 */
const PIECE = 16 << 20;
/** Parts below this are copied to a buffer of their own size, not to a recycled piece. */
const SMALL_PIECE = 64 << 10;

/** A part queued for an object written in parts: a piece copied (`release` undefined) or lent. */
interface Part {
  bytes: Uint8Array;
  size: number;
  release: (() => void) | undefined;
}

/**
 * One object being written in parts: {@link push} copies each part into a queue of pieces (16 MiB
 * buffers recycled once the store is done with them, at most `writeBehind` bytes queued or being
 * written) and resolves once it is copied, so the store writes while the writer computes the next
 * part; a push past the allowance waits for the store to take the pieces before it. One push at a
 * time, in order; a store failure fails the next push (or the close), and the queue is dropped.
 *
 * A store may hold an object back before it asks for its first part: one that caps the writes in
 * flight (a concurrency limit holding a slot per object until it is written) with fewer slots than
 * the writer has objects open would never start the later ones while the earlier ones wait for
 * their next parts. Parts pushed before the store asked for any are therefore parked (copied in
 * memory up to `parkInMemory` bytes, past that written to temporary space, so memory stays
 * bounded) and handed over first once it asks; from then on parts go to the write-behind queue.
 */
class DirectObject {
  #closed = false;
  #aborted = false;
  /** The store asked for a part at least once. */
  #started = false;
  /** A push is waiting: parts come one at a time, in order. */
  #pushing = false;
  #wake: (() => void) | undefined;
  /** A push waits here for room in the write-behind queue. */
  #room: (() => void) | undefined;
  #error: { cause: unknown } | undefined;
  readonly #writing: Promise<void>;
  /** Parts parked before the store started: copies in memory, then bytes in temporary space (and how many it has taken). */
  #inMemory: Uint8Array[] = [];
  #inMemoryBytes = 0;
  #backlog: Promise<SpillFile> | undefined;
  #parked = 0;
  #handed = 0;
  /**
   * Parts for the store once it started, in order: pieces copied (`release` undefined: recycled
   * once written) or parts lent by the caller; their bytes with the one being written.
   */
  readonly #queue: Part[] = [];
  /**
   * The part the store holds (yielded, not yet asked past): given back once, when the store asks
   * for the next, stops, or fails (a store may reject with its iterator left open).
   */
  #out: Part | undefined;
  #queued = 0;
  readonly #piece: number;
  /** The store stopped asking for parts (it failed, or returned early). */
  #ended = false;

  constructor(
    store: PartsWritableStore,
    readonly key: string,
    byteLength: number,
    private readonly spill: SpillSpace,
    private readonly parkInMemory: number,
    private readonly writeBehind: number,
    /** Recycled pieces (shared with the writer's other objects), each `#piece` bytes. */
    private readonly free: ArrayBuffer[],
  ) {
    this.#piece = Math.max(1, Math.min(PIECE, writeBehind));
    this.#writing = store.setParts(key, byteLength, this.#parts()).catch((cause: unknown) => {
      this.#error = { cause };
      this.#release();
      this.#giveBack();
      // The store is done with the part it held: a lent one goes back, a copy is dropped.
      const out = this.#out;
      this.#out = undefined;
      if (out !== undefined) {
        this.#queued -= out.size;
        out.release?.();
      }
    });
  }

  /** Hand the parts still queued back to their lenders: the store will not write them. */
  #giveBack(): void {
    for (const part of this.#queue.splice(0)) {
      this.#queued -= part.size;
      part.release?.();
    }
  }

  /** Let a pusher waiting for room go on: the store took a piece, ended, or failed. */
  #release(): void {
    const room = this.#room;
    this.#room = undefined;
    room?.();
  }

  async *#parts(): AsyncGenerator<Uint8Array> {
    this.#started = true;
    try {
      for (;;) {
        if (this.#aborted)
          throw new SporadikError("the write was abandoned before the object was whole", {
            tag: "StateError",
          });
        const copy = this.#inMemory.shift();
        if (copy !== undefined) {
          yield copy;
          continue;
        }
        if (this.#handed < this.#parked) {
          const n = Math.min(BACKLOG_READ, this.#parked - this.#handed);
          const bytes = await (await (this.#backlog as Promise<SpillFile>)).read(this.#handed, n);
          this.#handed += n;
          yield bytes;
          continue;
        }
        const next = this.#queue.shift();
        if (next !== undefined) {
          this.#out = next;
          try {
            yield next.bytes;
          } finally {
            // Resumed (the store asked for the next part, so this one is written or copied), or
            // stopped: the part's memory goes back either way (unless the store's failure did).
            if (this.#out === next) {
              this.#out = undefined;
              this.#queued -= next.size;
              if (next.release !== undefined) next.release();
              else if (next.size === this.#piece) this.free.push(next.bytes.buffer as ArrayBuffer);
            }
          }
          this.#release();
        } else if (this.#closed) return;
        else await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    } finally {
      this.#ended = true;
      this.#release();
      this.#giveBack();
    }
  }

  #check(): void {
    if (this.#error) throw this.#error.cause;
  }

  async push(bytes: Uint8Array): Promise<void> {
    if (this.#pushing) {
      throw new SporadikError(
        `${this.key}: a part was pushed while the previous one was still being written; await each append before the next.`,
        { tag: "StateError", object: this.key },
      );
    }
    this.#pushing = true;
    try {
      this.#check();
      if (!this.#started) {
        // Parked in order: in memory while nothing is on disk yet and there is room, else on disk.
        if (this.#parked === 0 && this.#inMemoryBytes + bytes.byteLength <= this.parkInMemory) {
          this.#inMemory.push(bytes.slice());
          this.#inMemoryBytes += bytes.byteLength;
        } else {
          this.#backlog ??= this.spill.create(`${this.key}.parked`);
          await (await this.#backlog).append([bytes]);
          this.#parked += bytes.byteLength;
        }
        this.#wake?.();
        return;
      }
      // Started: copied into pieces behind what is parked and queued; the store keeps asking
      // for parts, so a wait for room ends.
      for (let at = 0; at < bytes.byteLength; ) {
        const n = Math.min(this.#piece, bytes.byteLength - at);
        const size = n === this.#piece || n >= SMALL_PIECE ? this.#piece : n;
        // A store can fail without closing the parts it was given (the generator then never ends):
        // its error ends the wait as well.
        while (
          !this.#ended &&
          this.#error === undefined &&
          this.#queued > 0 &&
          this.#queued + size > this.writeBehind
        ) {
          await new Promise<void>((resolve) => (this.#room = resolve));
        }
        if (this.#ended || this.#error !== undefined) await this.#stopped();
        const spare = size === this.#piece ? this.free.pop() : undefined;
        const buffer = spare?.byteLength === size ? spare : new ArrayBuffer(size);
        const piece = new Uint8Array(buffer, 0, n);
        piece.set(bytes.subarray(at, at + n));
        this.#queue.push({ bytes: piece, size, release: undefined });
        this.#queued += size;
        at += n;
        this.#wake?.();
      }
    } finally {
      this.#pushing = false;
    }
  }

  /**
   * Queue `bytes` uncopied (lent: `release` is called once the store is done with them, or will
   * never write them); before the store started, they are parked as {@link push} parks them
   * (copied) and released at once. Resolves once queued: the caller may go on computing.
   */
  async lend(bytes: Uint8Array, release: () => void): Promise<void> {
    if (!this.#started || this.#pushing) {
      try {
        await this.push(bytes);
      } finally {
        release();
      }
      return;
    }
    this.#pushing = true;
    try {
      if (this.#error !== undefined) {
        release();
        this.#check();
      }
      const size = bytes.byteLength;
      while (
        !this.#ended &&
        this.#error === undefined &&
        this.#queued > 0 &&
        this.#queued + size > this.writeBehind
      ) {
        await new Promise<void>((resolve) => (this.#room = resolve));
      }
      if (this.#ended || this.#error !== undefined) {
        release();
        await this.#stopped();
      }
      this.#queue.push({ bytes, size, release });
      this.#queued += size;
      this.#wake?.();
    } finally {
      this.#pushing = false;
    }
  }

  /** The refusal of a part after the store stopped taking parts: its failure, once it is known. */
  async #stopped(): Promise<never> {
    await this.#writing;
    this.#check();
    throw new SporadikError(
      `${this.key}: the store stopped taking parts before the object was whole; nothing was landed for it. Write the store again.`,
      { tag: "StateError", object: this.key },
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#writing;
    this.#check();
    await this.#dropBacklog();
  }

  /** Stop: the store drops the partial object (its temporary file), nothing lands under the key. */
  async abort(): Promise<void> {
    this.#aborted = true;
    this.#release();
    this.#wake?.();
    await this.#writing;
    await this.#dropBacklog();
  }

  async #dropBacklog(): Promise<void> {
    const backlog = this.#backlog;
    this.#backlog = undefined;
    if (backlog !== undefined) await (await backlog).remove();
  }
}

async function* spoolParts(spool: SpillFile, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < spool.bytes; at += size) yield spool.read(at, Math.min(size, spool.bytes - at));
}

/**
 * An integer array whose width is decided only at the end (an `indices` or `indptr` whose type
 * depends on the final number of nonzeros): spooled to temporary space in a carrier type wide
 * enough for its values (int32 for `indices`, which fit while the shape does; float64 for
 * `indptr`), then written through an {@link ArrayWriter} of the width chosen.
 */
export class DeferredArray {
  #spool: Promise<SpillFile> | undefined;
  length = 0;
  constructor(
    private readonly context: ArrayContext,
    readonly path: string,
    readonly carrier: "int32" | "float64",
  ) {}

  async append(values: Int32Array | Float64Array): Promise<void> {
    if (values.length === 0) return;
    if ((values instanceof Int32Array ? "int32" : "float64") !== this.carrier) {
      throw new SporadikError(
        `${this.path} is spooled as ${this.carrier}; convert values before appending.`,
        {
          tag: "InvalidArgument",
          object: this.path,
          expected: this.carrier,
          found: values instanceof Int32Array ? "int32" : "float64",
        },
      );
    }
    this.#spool ??= this.context.spill.create(`${this.path}.deferred`);
    this.length += values.length;
    await (await this.#spool).append([bytesOf(values)]);
  }

  /** Write the array as `dtype` (int32 or int64). */
  async finish(dtype: "int32" | "int64"): Promise<void> {
    const out = new ArrayWriter(this.context, this.path, dtype);
    if (this.#spool !== undefined) {
      const spool = await this.#spool;
      const width = this.carrier === "int32" ? 4 : 8;
      for (let at = 0; at < this.length; at += SPOOL_READ) {
        const n = Math.min(SPOOL_READ, this.length - at);
        const bytes = await spool.read(at * width, n * width);
        const values =
          this.carrier === "int32"
            ? new Int32Array(bytes.buffer, bytes.byteOffset, n)
            : new Float64Array(bytes.buffer, bytes.byteOffset, n);
        await out.append(values instanceof Int32Array && dtype === "int32" ? values : narrow(values, dtype));
      }
      await spool.remove();
    }
    await out.finish();
  }
}

/** Whole numbers (held as int32 or float64) as int32 or int64. */
export function narrow(
  values: Int32Array | Float64Array,
  dtype: "int32" | "int64",
): Int32Array | BigInt64Array {
  if (dtype === "int32") return Int32Array.from(values);
  const out = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = BigInt(values[i] as number);
  return out;
}
