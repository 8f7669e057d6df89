/**
 * A pool of workers that decode (and encode) tiles in parallel: worker_threads under Node, module
 * Web Workers in browsers, one API. A tile's chunks are split between the idle workers; with
 * SharedArrayBuffer (always in Node, in cross-origin-isolated pages) they write straight into
 * the output arrays, otherwise each returns its part as transferred buffers that are copied in.
 * The pool also spreads the tile's CRC over the workers (parts combined with `crc32Combine`).
 * It checks each tile once (the workers decode from that layout), splits it (plan.ts) and runs the
 * parts on its workers (host.ts).
 */
import { DeltacellsError } from "../../errors.js";
import { checkColumns } from "../columns.js";
import { copyRange } from "../copy.js";
import { crc32Combine } from "../crc32.js";
import {
  allocateOutput,
  cellRange,
  type DecodedTile,
  type DecodeOptions,
  fillIndptr,
  indptrScratch,
  valuesOf,
} from "../decode.js";
import {
  assembleTile,
  type ChunkFrames,
  type EncodeOptions,
  levelOf,
  prepareTile,
  type TileRows,
} from "../encode.js";
import { corrupt, HEADER_SIZE, hex32 } from "../format.js";
import { checksum, inspectTile, type TileLayout } from "../layout.js";
import { describeMapped } from "../mapped.js";
import { loadNativeKernel } from "../native.js";
import {
  BufferRecycler,
  canShareMemory,
  outputBytes,
  outputViews,
  ownedTile,
  type RecycledTile,
  recycledTile,
} from "../recycle.js";
import type { ScatterJob, ScatterTarget } from "../scatter.js";
import { startWorkerHost, type WorkerHost } from "./host.js";
import { type DecodePart, planDecode } from "./plan.js";
import type { DecodeRequest, PostedTarget, Response } from "./protocol.js";

/** Parallel encoding and decoding of tiles; see {@link createTilePool}. */
export interface TilePool {
  /** Encodes a tile, compressing its chunks' streams on the workers. */
  encode(rows: TileRows, opts?: EncodeOptions): Promise<Uint8Array>;
  /**
   * Decodes a tile (or a cell range), its chunks split across idle workers. Same checks as
   * `decodeTile`. `bytes` in shared memory reach the workers as they are; other bytes are copied
   * into the pool's shared buffers first (small next to the output). `columns` renumbers on the
   * workers; each map reaches each worker once (keep passing the same array). Where the output goes
   * decides the speed:
   *
   * - no `out` (the fast path): the arrays are views of shared buffers the pool keeps;
   *   `release()` the tile (or `using tile = await pool.decode(bytes)`) when done and the next
   *   decode reuses them. Valid until released; a released tile throws when read.
   *   Never released, they are garbage-collected and each decode allocates anew (slower).
   * - `out` arrays on `SharedArrayBuffer`: the workers write straight into them.
   * - plain `out` arrays, the slow path: the workers decode into the pool's shared buffers and
   *   each part is copied into `out` on the calling thread as soon as it is decoded (workers
   *   cannot write into memory that is not shared). That copy, 8 bytes per nonzero (a memcpy in
   *   the native kernel under Node), costs the calling thread c = 0.3-0.4 of what decoding costs
   *   a worker (d), and needs a core too: on 2 cores the pool then decodes at most 2d/(d+c),
   *   1.45-1.55x as fast as one thread (measured 1.0-1.1x), where shared outputs approach 2x
   *   (bench/codec.ts prints c, d and the bound; the figures are in bench/RESULTS.md). A warning
   *   says so once per process. When the decode
   *   fails, `out` may hold part of the tile. `release()` does nothing.
   */
  decode(bytes: Uint8Array, opts?: DecodeOptions): Promise<RecycledTile>;
  /**
   * Decodes a whole tile on one worker and writes its rows to their slots (see
   * `scatterTileSync`); the targets must be shared memory (or CSR arrays over a mapped shared batch
   * file, which each worker maps itself). `layout` is the tile's layout as
   * `inspectTile(bytes, { skipCrc: true })` returned it (the worker checks the CRC).
   */
  scatter(bytes: Uint8Array, layout: TileLayout, job: ScatterJob): Promise<void>;
  /**
   * Starts the workers now instead of with the first job, so that their start-up (a thread each,
   * then the codec's modules and zstd) overlaps what the caller does before its first tile.
   */
  start(): void;
  /** Stops the workers; pending work is rejected. */
  close(): Promise<void>;
  /** Number of workers. */
  readonly threads: number;
  /** `decode` applies its `columns` option on the workers (see the dataset reader's `TileDecoder`). */
  readonly renumbers: true;
}

function hardwareThreads(): number {
  const nav = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator;
  return Math.max(1, nav?.hardwareConcurrency ?? 2);
}

let warnedPlainOut = false;

/** Says once per process why plain `out` arrays make a pool slower than it could be. */
function warnPlainOut(): void {
  if (warnedPlainOut) return;
  warnedPlainOut = true;
  console.warn(
    "deltacells: pool.decode(bytes, { out }) with plain (unshared) arrays: workers cannot write into them, so every tile is copied in on this thread, at about a third of the cost of decoding it (on 2 cores the pool then decodes about as fast as one thread, against 1.4-1.9x with shared outputs). For the fast path pass no `out` and release() each tile, or `out` arrays on SharedArrayBuffer (see createTilePool's TSDoc).",
  );
}

function isShared(a: ArrayBufferView): boolean {
  return a.buffer instanceof SharedArrayBuffer;
}

/**
 * A scatter target as a worker gets it: shared memory as it is, a mapped file's arrays as
 * descriptions of them (the worker writes through its own mapping); anything else is refused, as
 * the worker's writes would land in a copy.
 */
function postedTarget(t: ScatterTarget): PostedTarget {
  if (t.dense !== undefined ? isShared(t.dense) : isShared(t.indices) && isShared(t.data)) return t;
  if (t.dense === undefined) {
    const indices = describeMapped(t.indices);
    const data = describeMapped(t.data);
    if (indices !== undefined && data !== undefined) return { mapped: { indices, data } };
  }
  throw new DeltacellsError(
    "pool.scatter writes into shared memory only: its targets must be on SharedArrayBuffer (or a mapped shared batch file)",
    { tag: "InvalidInput", field: "targets", expected: "SharedArrayBuffer", found: "ArrayBuffer" },
  );
}

/**
 * Starts a pool of `threads` workers (default: the number of cores). Workers start lazily on
 * first use (or when `start()` is called); call `close()` when done (idle workers do not keep a Node process alive).
 *
 * In a browser the workers are module Web Workers created with
 * `new Worker(new URL("./worker.js", import.meta.url), { type: "module" })`. Bundlers that
 * understand that form emit the worker on their own (webpack 5; Vite once `@deltacells/core` is
 * in `optimizeDeps.exclude`, as pre-bundling loses the file). esbuild leaves it as is: bundle the
 * worker script as a second entry named `worker` into the directory of the bundle that contains
 * the pool, `entryPoints: { app: "src/app.ts", worker: "@deltacells/core/worker" }`, ESM output
 * (what packages/deltacells/test/browser.test.ts does). Without cross-origin isolation (COOP/COEP headers) pages have no
 * SharedArrayBuffer, and workers return their parts by transfer instead of writing in place.
 */
export function createTilePool(opts: { threads?: number } = {}): TilePool {
  const threads = opts.threads ?? hardwareThreads();
  if (!Number.isInteger(threads) || threads < 1) {
    throw new DeltacellsError(`threads must be an integer >= 1, got ${threads}`, {
      tag: "InvalidInput",
      field: "threads",
      expected: ">= 1",
      found: threads,
    });
  }
  const host = startWorkerHost(threads);
  // This thread copies tile bytes into shared memory (and parts out of it for plain outputs): with
  // the kernel's memcpy, not `TypedArray#set`'s atomics (loading it is synchronous under Node).
  void loadNativeKernel();
  const memory = new PoolMemory();
  const ids = { next: 1 };
  return {
    threads,
    renumbers: true,
    decode: (bytes, o) => decodeOnPool(host, memory, ids, bytes, o),
    scatter: (bytes, layout, job) => scatterOnPool(host, memory, ids, bytes, layout, job),
    encode: (rows, o) => encodeOnPool(host, ids, rows, o),
    start: () => host.start(),
    close: () => host.close(),
  };
}

/** Request ids of one pool, shared by its operations. */
interface RequestIds {
  next: number;
}

/**
 * The shared memory a pool keeps for reuse: tile bytes, outputs and column maps. Shared memory is
 * slow to allocate (~0.1 ms per 100 KB here) and slow to fault in.
 */
class PoolMemory {
  readonly inputs = new BufferRecycler((n) => new SharedArrayBuffer(n));
  readonly outputs = new BufferRecycler((n) => new SharedArrayBuffer(n));
  // Column maps (`columns`) by the caller's array: an id, and the copy the workers get (shared
  // memory where there is some, so each worker's copy is the same memory).
  private readonly columnMaps = new WeakMap<Int32Array, { id: number; map: Int32Array }>();
  private nextMapId = 1;

  /** The workers' copy of the column map `columns` (checked against `nGenes` on every call). */
  columnMap(
    columns: Int32Array,
    nGenes: number,
    object: string | undefined,
  ): { id: number; map: Int32Array } {
    checkColumns(columns, nGenes, object);
    let m = this.columnMaps.get(columns);
    if (m === undefined) {
      const copy = canShareMemory()
        ? new Int32Array(new SharedArrayBuffer(columns.byteLength))
        : new Int32Array(columns.length);
      copy.set(columns);
      m = { id: this.nextMapId++, map: copy };
      this.columnMaps.set(columns, m);
    }
    return m;
  }

  /**
   * `bytes` as the workers read them: themselves when in shared memory, else copied into a
   * recycled shared buffer, `input`, which `releaseInput` gives back.
   */
  sharedInput(bytes: Uint8Array): { src: Uint8Array; input: SharedArrayBuffer | undefined } {
    if (bytes.buffer instanceof SharedArrayBuffer) return { src: bytes, input: undefined };
    const input = this.inputs.acquire(bytes.length);
    const src = new Uint8Array(input, 0, bytes.length);
    copyRange(src, 0, bytes, 0, bytes.length);
    return { src, input };
  }

  releaseInput(input: SharedArrayBuffer | undefined): void {
    if (input) this.inputs.release(input);
  }
}

type OutputArrays = ReturnType<typeof outputViews>;

/**
 * Where one decode's parts go. The caller's arrays (checked; any not given are allocated) when
 * `out` is given: the result is theirs. The workers write in place into the caller's arrays when
 * they are shared memory, else into a shared buffer of the pool's (then lent to the caller, or
 * copied into their plain arrays), taken only when a worker starts on the tile: with several
 * tiles queued, the buffer released last (still in cache) is then the one written next, instead of
 * one per tile in the queue. Without shared memory (pages that are not cross-origin isolated)
 * workers return their parts, copied into `owned`.
 */
class DecodeOutput {
  readonly given: OutputArrays | undefined;
  private readonly leased: boolean;
  private lease: SharedArrayBuffer | undefined;
  private targetArrays: OutputArrays | undefined;
  private readonly owned: OutputArrays | undefined;

  constructor(
    private readonly outputs: BufferRecycler<SharedArrayBuffer>,
    private readonly nCells: number,
    private readonly nnz: number,
    private readonly values: "int32" | "float32",
    o: DecodeOptions,
  ) {
    const shared = canShareMemory();
    this.given = o.out !== undefined ? allocateOutput(nCells, nnz, o) : undefined;
    const given = this.given;
    const inPlace = shared && given && isShared(given.indices) && isShared(given.data) ? given : undefined;
    this.leased = shared && inPlace === undefined;
    if (this.leased && given) warnPlainOut();
    this.targetArrays = inPlace;
    this.owned = shared ? undefined : (given ?? allocateOutput(nCells, nnz, o));
  }

  /** The arrays the workers write into (leased on first call), or undefined when they return parts. */
  target(): OutputArrays | undefined {
    if (this.leased && this.lease === undefined) {
      this.lease = this.outputs.acquire(outputBytes(this.nCells, this.nnz));
      this.targetArrays = outputViews(this.lease, this.nCells, this.nnz, this.values);
    }
    return this.targetArrays;
  }

  /**
   * Plain arrays of the caller's: workers cannot write into unshared memory, so each part is
   * copied in on this thread as soon as it is decoded, while the other parts still decode.
   */
  copyPart(from: number, to: number): void {
    if (this.given === undefined || !this.leased) return;
    copyRange(this.given.indices, from, this.targetArrays!.indices, from, to);
    copyRange(this.given.data, from, this.targetArrays!.data, from, to);
  }

  /** The arrays of the result, the parts workers returned copied in. */
  collect(results: Response[], plan: DecodePart[]): OutputArrays {
    const owned = this.owned;
    if (owned !== undefined) {
      results.forEach((r, i) => {
        if (!r.ok || r.indices === undefined || r.data === undefined) return;
        owned.indices.set(r.indices, plan[i]!.at);
        (owned.data as Int32Array).set(r.data as Int32Array, plan[i]!.at);
      });
    }
    return this.given ?? owned ?? this.target()!;
  }

  /** Gives the leased buffer back after a failure. */
  fail(): void {
    if (this.lease) this.outputs.release(this.lease);
  }

  /** The tile handed to the caller: lent (released by the caller) only when it is the pool's buffer. */
  finish(tile: DecodedTile, object: string | undefined): RecycledTile {
    const lease = this.lease;
    if (lease === undefined) return ownedTile(tile);
    if (this.given !== undefined) {
      this.outputs.release(lease);
      return ownedTile(tile);
    }
    return recycledTile(tile, () => this.outputs.release(lease), object);
  }
}

/**
 * The parts' answers, in order, once the tile's CRC (combined from the parts) is checked. A worker
 * stopped at damage in its part before the tile's CRC could be compared: the CRC is reported first
 * when it is wrong, as decodeTile does, so both paths name the same fault.
 */
function checkedParts(
  settled: PromiseSettledResult<Response>[],
  plan: DecodePart[],
  src: Uint8Array,
  layout: TileLayout,
  object: string | undefined,
): Response[] {
  const expectedCrc = layout.header.crc32;
  const results = settled.map((r) => {
    if (r.status !== "rejected") return r.value;
    const crc = checksum(src.subarray(HEADER_SIZE, layout.header.totalSize));
    if (crc !== expectedCrc) {
      throw corrupt(object, "crc32", hex32(crc), hex32(expectedCrc), "the bytes are damaged");
    }
    throw r.reason;
  });
  let crc = 0;
  results.forEach((r, i) => {
    if (r.ok) crc = crc32Combine(crc, r.crc ?? 0, plan[i]!.crcTo - plan[i]!.crcFrom);
  });
  if (crc !== expectedCrc) {
    throw corrupt(object, "crc32", hex32(crc), hex32(expectedCrc), "the bytes are damaged");
  }
  return results;
}

async function decodeOnPool(
  host: WorkerHost,
  memory: PoolMemory,
  ids: RequestIds,
  bytes: Uint8Array,
  o: DecodeOptions = {},
): Promise<RecycledTile> {
  const object = o.object;
  // The layout's indptr lives in a reused buffer: it is only read before the first await.
  const layout = inspectTile(bytes, { object, skipCrc: true, indptrBuffer: indptrScratch(bytes) });
  const { nCells, nGenes } = layout.header;
  const [c0, c1] = cellRange(o.cells, nCells, object);
  const base = layout.indptr[c0]!;
  const nnz = layout.indptr[c1]! - base;
  const columns = o.columns === undefined ? undefined : memory.columnMap(o.columns, nGenes, object);
  const values = valuesOf(o);
  const out = new DecodeOutput(memory.outputs, c1 - c0, nnz, values, o);
  const { src, input } = canShareMemory() ? memory.sharedInput(bytes) : { src: bytes, input: undefined };
  // Split only between workers that would otherwise idle: when the others are busy, one task
  // per tile is cheapest (it queues behind a worker's current job, see host.ts), and a part
  // queued behind a long job would hold the whole tile back.
  const plan = planDecode(layout, c0, c1, host.idle());
  // The workers decode from this checked layout instead of inspecting the tile again (its
  // indptr copied out of the reused buffer it was read into).
  const checked = { header: layout.header, chunks: layout.chunks, indptr: layout.indptr.slice() };
  const request = (part: DecodePart) => (): DecodeRequest => {
    const t = out.target();
    return {
      op: "decode",
      id: ids.next++,
      bytes: src,
      layout: checked,
      k0: part.k0,
      k1: part.k1,
      c0,
      c1,
      base,
      values,
      indices: t?.indices,
      data: t?.data,
      crcFrom: part.crcFrom,
      crcTo: part.crcTo,
      object,
      ...(columns && { columns }),
    };
  };
  // Wait for every part, even after a failure, so that no worker still uses the leased buffers.
  const settled = await Promise.allSettled(
    plan.map((part, i) =>
      host.run(request(part), []).then((res) => {
        out.copyPart(part.at, plan[i + 1]?.at ?? nnz);
        return res;
      }),
    ),
  );
  let result: OutputArrays;
  try {
    result = out.collect(checkedParts(settled, plan, src, layout, object), plan);
    fillIndptr(checked.indptr, c0, c1, result.indptr);
  } catch (err) {
    out.fail();
    throw err;
  } finally {
    memory.releaseInput(input);
  }
  return out.finish({ nCells: c1 - c0, nGenes, nnz, ...result }, object);
}

async function scatterOnPool(
  host: WorkerHost,
  memory: PoolMemory,
  ids: RequestIds,
  bytes: Uint8Array,
  layout: TileLayout,
  job: ScatterJob,
): Promise<void> {
  const object = job.object;
  const targets = job.targets.map(postedTarget);
  const columns =
    job.columns === undefined ? undefined : memory.columnMap(job.columns, layout.header.nGenes, object);
  const { src, input } = memory.sharedInput(bytes);
  try {
    await host.run(
      {
        op: "scatter",
        id: ids.next++,
        bytes: src,
        layout,
        values: job.values,
        slots: job.slots,
        targets,
        object,
        ...(columns && { columns }),
      },
      [],
    );
  } finally {
    memory.releaseInput(input);
  }
}

async function encodeOnPool(
  host: WorkerHost,
  ids: RequestIds,
  rows: TileRows,
  o: EncodeOptions = {},
): Promise<Uint8Array> {
  const level = levelOf(o);
  const p = prepareTile(rows, o);
  // Largest chunks first so that the last worker to finish has a small one.
  const order = p.chunks.map((_, k) => k).sort((a, b) => p.chunks[b]!.gaps.length - p.chunks[a]!.gaps.length);
  const frames: ChunkFrames[] = new Array(p.chunks.length);
  await Promise.all(
    order.map(async (k) => {
      const chunk = p.chunks[k]!;
      // The raw streams are not needed here any more: move them instead of copying.
      const transfer = [chunk.gaps, chunk.vals, chunk.vexc, chunk.gexc].flatMap((b) =>
        b ? [b.buffer as ArrayBuffer] : [],
      );
      const res = await host.run({ op: "compress", id: ids.next++, chunk, level }, transfer);
      if (res.ok) frames[k] = res.frames as ChunkFrames;
    }),
  );
  return assembleTile(p, frames);
}
