/**
 * A pool of workers that decode (and encode) tiles in parallel: worker_threads under Node, module
 * Web Workers in browsers, one API. A tile's chunks are split between the idle workers; with
 * SharedArrayBuffer (always in Node, in cross-origin-isolated pages) they write straight into
 * the output arrays, otherwise each returns its part as transferred buffers that are copied in.
 * The pool also spreads the tile's CRC over the workers (parts combined with `crc32Combine`).
 */
import { DeltacellsError } from "../../errors.js";
import { crc32Combine } from "../crc32.js";
import {
  allocateOutput,
  cellRange,
  type DecodeOptions,
  fillIndptr,
  indptrScratch,
  valuesOf,
} from "../decode.js";
import {
  assembleTile,
  type ChunkFrames,
  type CsrRows,
  type EncodeOptions,
  levelOf,
  prepareTile,
} from "../encode.js";
import { corrupt, HEADER_SIZE } from "../format.js";
import { checksum, inspectTile } from "../layout.js";
import {
  BufferRecycler,
  canShareMemory,
  outputBytes,
  outputViews,
  ownedTile,
  type RecycledTile,
  recycledTile,
} from "../recycle.js";
import { type CompressRequest, type DecodeRequest, deserializeError, type Response } from "./protocol.js";

/** Parallel encoding and decoding of tiles; see {@link createTilePool}. */
export interface TilePool {
  /** Encodes a tile, compressing its chunks' streams on the workers. */
  encode(rows: CsrRows, opts?: EncodeOptions): Promise<Uint8Array>;
  /**
   * Decodes a tile (or a cell range), its chunks split across idle workers. Same checks as
   * `decodeTile`. Where the output goes decides the speed:
   *
   * - no `out` (the fast path, nothing to manage): the arrays are views of shared buffers the
   *   pool keeps; `release()` the tile (or `using tile = await pool.decode(bytes)`) when done
   *   and the next decode reuses them. Valid until released; a released tile throws when read.
   *   Never released, they are garbage-collected and each decode allocates anew (slower).
   * - `out` arrays on `SharedArrayBuffer`: the workers write straight into them.
   * - plain `out` arrays: the workers decode into the pool's shared buffers, copied once into
   *   `out` on the calling thread (workers cannot write into memory that is not shared): 8
   *   bytes per nonzero, the slow path (figures in bench/RESULTS.md), said once per process by
   *   a warning. `release()` does nothing.
   */
  decode(bytes: Uint8Array, opts?: DecodeOptions): Promise<RecycledTile>;
  /** Stops the workers; pending work is rejected. */
  close(): Promise<void>;
  /** Number of workers. */
  readonly threads: number;
}

interface WorkerLike {
  postMessage(m: unknown, transfer: Transferable[]): void;
  terminate(): unknown;
  ref?(): void;
  unref?(): void;
}

interface Slot {
  worker: WorkerLike;
  busy: number;
  /** Ids of the jobs this worker is running. */
  jobs: Set<number>;
  /** Incremented when a crashed worker is replaced. */
  generation: number;
}

type Job = {
  req: DecodeRequest | CompressRequest;
  transfer: Transferable[];
  resolve: (r: Response) => void;
  reject: (e: Error) => void;
};

function hardwareThreads(): number {
  const nav = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator;
  return Math.max(1, nav?.hardwareConcurrency ?? 2);
}

function isNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === "string";
}

/** Workers run the same module flavour as this file: `.ts` under tsx, `.js` from dist. */
function workerUrl(): URL {
  const ext = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
  return new URL(`./worker${ext}`, import.meta.url);
}

async function spawn(onMessage: (m: Response) => void, onError: (e: Error) => void): Promise<WorkerLike> {
  if (isNode()) {
    const specifier = ["node", "worker_threads"].join(":");
    const { Worker } = (await import(/* @vite-ignore */ specifier)) as {
      Worker: new (
        src: URL | string,
        o?: { eval?: boolean },
      ) => WorkerLike & { on(ev: string, cb: (x: never) => void): void };
    };
    const url = workerUrl();
    let w: InstanceType<typeof Worker>;
    if (url.pathname.endsWith(".ts")) {
      // Running from TypeScript sources under tsx: Node 20 does not apply `--import tsx` to
      // workers, so the worker registers tsx's loader itself before importing the script.
      const tsx = import.meta.resolve("tsx/esm/api");
      const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`;
      w = new Worker(boot, { eval: true });
    } else {
      w = new Worker(url);
    }
    w.on("message", onMessage);
    w.on("error", onError);
    w.on("exit", (code: number) => {
      if (code !== 0) onError(new Error(`tile worker exited with code ${code}`));
    });
    w.unref?.();
    return w;
  }
  if (typeof Worker === "undefined") {
    throw new DeltacellsError(
      "UnsupportedHost",
      "this host has neither worker_threads nor Web Workers: use decodeTile",
      {
        field: "Worker",
        expected: "worker_threads or Web Workers",
        found: "none",
      },
    );
  }
  // The literal `new Worker(new URL("./worker.js", import.meta.url))` form is what bundlers (Vite,
  // webpack, esbuild) recognise to emit the worker as its own chunk; sources (.ts) load as they are.
  const w = import.meta.url.endsWith(".ts")
    ? new Worker(workerUrl(), { type: "module" })
    : new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  w.onmessage = (e: MessageEvent<Response>) => onMessage(e.data);
  w.onerror = (e: ErrorEvent) => onError(new Error(`tile worker failed: ${e.message || "unknown error"}`));
  return w;
}

let warnedPlainOut = false;

/** Says once per process why plain `out` arrays make a pool slower than it could be. */
function warnPlainOut(): void {
  if (warnedPlainOut) return;
  warnedPlainOut = true;
  console.warn(
    "deltacells: pool.decode(bytes, { out }) with plain (unshared) arrays: workers cannot write into them, so every tile is copied in on this thread. For the fast path pass no `out` and release() each tile, or `out` arrays on SharedArrayBuffer (see createTilePool's TSDoc).",
  );
}

function isShared(a: ArrayBufferView): boolean {
  return a.buffer instanceof SharedArrayBuffer;
}

/**
 * Starts a pool of `threads` workers (default: the number of cores). Workers start lazily on
 * first use; call `close()` when done (idle workers do not keep a Node process alive).
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
    throw new DeltacellsError("InvalidInput", `threads must be an integer >= 1, got ${threads}`, {
      field: "threads",
      expected: ">= 1",
      found: threads,
    });
  }
  let slots: Promise<Slot[]> | undefined;
  // Shared memory is slow to allocate (~0.1 ms per 100 KB here) and slow to fault in: tile bytes
  // and outputs go through buffers kept for reuse.
  const inputs = new BufferRecycler((n) => new SharedArrayBuffer(n));
  const outputs = new BufferRecycler((n) => new SharedArrayBuffer(n));
  const pending = new Map<number, Job>();
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  const fail = (err: Error) => {
    for (const job of pending.values()) job.reject(err);
    pending.clear();
    keepAlive();
  };
  // Workers stay unref'd, so that an idle pool does not keep a Node process alive; while jobs are
  // pending a timer does. (Toggling the workers' own ref() per job stalled replies here: a reply
  // already posted by a worker sat undelivered until the pool was closed.)
  let alive: ReturnType<typeof setInterval> | undefined;
  const keepAlive = () => {
    if (pending.size > 0 && alive === undefined) alive = setInterval(() => {}, 1 << 30);
    else if (pending.size === 0 && alive !== undefined) {
      clearInterval(alive);
      alive = undefined;
    }
  };
  /** Starts (or restarts, after a crash) the worker of a slot; its in-flight jobs are rejected. */
  const launch = async (slot: Slot): Promise<void> => {
    const generation = ++slot.generation;
    slot.jobs.clear();
    slot.worker = await spawn(
      (m) => {
        const job = pending.get(m.id);
        pending.delete(m.id);
        slot.jobs.delete(m.id);
        slot.busy--;
        keepAlive();
        job?.resolve(m);
        pump();
      },
      (err) => {
        // Ignore the exit of a worker already replaced (or of all of them, on close).
        if (closed || generation !== slot.generation) return;
        slot.busy = Number.POSITIVE_INFINITY;
        for (const id of slot.jobs) {
          pending.get(id)?.reject(err);
          pending.delete(id);
        }
        void slot.worker.terminate();
        void launch(slot).then(pump);
      },
    );
    slot.busy = 0;
  };
  const start = () =>
    (slots ??= Promise.all(
      Array.from({ length: threads }, async () => {
        const slot: Slot = {
          worker: undefined as unknown as WorkerLike,
          busy: Number.POSITIVE_INFINITY,
          jobs: new Set(),
          generation: 0,
        };
        await launch(slot);
        return slot;
      }),
    ));
  let ready: Slot[] = [];
  const pump = () => {
    while (queue.length > 0) {
      const slot = ready.find((s) => s.busy === 0);
      if (slot === undefined) return;
      const job = queue.shift()!;
      slot.busy++;
      slot.jobs.add(job.req.id);
      pending.set(job.req.id, job);
      keepAlive();
      slot.worker.postMessage(job.req, job.transfer);
    }
  };
  const run = async (req: DecodeRequest | CompressRequest, transfer: Transferable[]): Promise<Response> => {
    if (closed)
      throw new DeltacellsError("InvalidInput", "the tile pool is closed", {
        field: "pool",
        found: "closed",
      });
    ready = await start();
    const res = await new Promise<Response>((resolve, reject) => {
      queue.push({ req, transfer, resolve, reject });
      pump();
    });
    if (!res.ok) throw deserializeError(res.error);
    return res;
  };

  async function decode(bytes: Uint8Array, o: DecodeOptions = {}): Promise<RecycledTile> {
    const object = o.object;
    // The layout's indptr lives in a reused buffer: it is only read before the first await.
    const layout = inspectTile(bytes, { object, skipCrc: true, indptrBuffer: indptrScratch(bytes) });
    const { nCells, nGenes, totalSize } = layout.header;
    const [c0, c1] = cellRange(o.cells, nCells, object);
    const base = layout.indptr[c0]!;
    const nnz = layout.indptr[c1]! - base;
    const full = c0 === 0 && c1 === nCells;
    const ks: number[] = [];
    layout.chunks.forEach((ch, k) => {
      if (full || (ch.cellLo < c1 && ch.cellHi > c0)) ks.push(k);
    });
    const shared = canShareMemory();
    const values = valuesOf(o);
    // The caller's arrays (checked; any not given are allocated) when `out` is given: the result is theirs.
    const given = o.out !== undefined ? allocateOutput(c1 - c0, nnz, o) : undefined;
    // Where the workers write in place: the caller's arrays when they are shared memory, else a
    // shared buffer of the pool's (then lent to the caller, or copied into their plain arrays).
    let lease: SharedArrayBuffer | undefined;
    let target: ReturnType<typeof outputViews> | undefined;
    if (shared) {
      if (given && isShared(given.indices) && isShared(given.data)) target = given;
      else {
        if (given) warnPlainOut();
        lease = outputs.acquire(outputBytes(c1 - c0, nnz));
        target = outputViews(lease, c1 - c0, nnz, values);
      }
    }
    // Without shared memory (pages that are not cross-origin isolated) workers return their parts.
    const result = given ?? target ?? allocateOutput(c1 - c0, nnz, o);
    fillIndptr(layout.indptr, c0, c1, result.indptr);
    let src = bytes;
    let input: SharedArrayBuffer | undefined;
    if (shared && !(bytes.buffer instanceof SharedArrayBuffer)) {
      // Allocating shared memory is slow (~0.1 ms per 100 KB here): reuse it across decodes.
      input = inputs.acquire(bytes.length);
      src = new Uint8Array(input, 0, bytes.length);
      src.set(bytes);
    }
    // Split the chunks into contiguous groups of similar nonzero counts, one per worker.
    // When other work already keeps every worker busy, one task per tile is cheapest.
    const busy = pending.size + queue.length >= threads;
    const groups = splitChunks(layout, ks, busy ? 1 : Math.max(1, Math.min(threads, ks.length)));
    const crcSpan = totalSize - HEADER_SIZE;
    const parts = Math.max(1, groups.length);
    const crcCuts = Array.from(
      { length: parts + 1 },
      (_, i) => HEADER_SIZE + Math.floor((crcSpan * i) / parts),
    );
    const reqs = (groups.length > 0 ? groups : [[]]).map(
      (g, i): DecodeRequest => ({
        op: "decode",
        id: nextId++,
        bytes: src,
        k0: g[0] ?? 0,
        k1: g.length > 0 ? g[g.length - 1]! + 1 : 0,
        c0,
        c1,
        base,
        values,
        indices: target?.indices,
        data: target?.data,
        crcFrom: crcCuts[i]!,
        crcTo: crcCuts[i + 1]!,
        object,
      }),
    );
    // Where each worker's part goes when it is returned rather than written in place.
    const copyAt = reqs.map((r) => {
      const ch = layout.chunks[r.k0];
      return layout.indptr[Math.max(c0, ch?.cellLo ?? c0)]! - base;
    });
    const expectedCrc = layout.header.crc32;
    // Wait for every part, even after a failure, so that no worker still uses the leased buffers.
    const settled = await Promise.allSettled(reqs.map((r) => run(r, [])));
    try {
      const results = settled.map((r) => {
        if (r.status !== "rejected") return r.value;
        // A worker stopped at damage in its part before the tile's CRC could be compared: report
        // the CRC first when it is wrong, as decodeTile does, so both paths name the same fault.
        const crc = checksum(src.subarray(HEADER_SIZE, totalSize));
        if (crc !== expectedCrc) {
          throw corrupt(object, "crc32", hex32(crc), hex32(expectedCrc), "the bytes are damaged");
        }
        throw r.reason;
      });
      let crc = 0;
      results.forEach((r, i) => {
        if (r.ok) crc = crc32Combine(crc, r.crc ?? 0, reqs[i]!.crcTo - reqs[i]!.crcFrom);
      });
      if (crc !== expectedCrc) {
        throw corrupt(object, "crc32", hex32(crc), hex32(expectedCrc), "the bytes are damaged");
      }
      if (target === undefined) {
        results.forEach((r, i) => {
          if (!r.ok || r.indices === undefined || r.data === undefined) return;
          result.indices.set(r.indices, copyAt[i]!);
          (result.data as Int32Array).set(r.data as Int32Array, copyAt[i]!);
        });
      } else if (given !== undefined && target !== given) {
        // Plain arrays of the caller's: one copy (workers cannot write into unshared memory).
        given.indices.set(target.indices);
        (given.data as Int32Array).set(target.data as Int32Array);
      }
    } catch (err) {
      if (lease) outputs.release(lease);
      throw err;
    } finally {
      if (input) inputs.release(input);
    }
    const tile = { nCells: c1 - c0, nGenes, nnz, ...result };
    if (lease === undefined) return ownedTile(tile);
    if (given !== undefined) {
      outputs.release(lease);
      return ownedTile(tile);
    }
    const lent = lease;
    return recycledTile(tile, () => outputs.release(lent), object);
  }

  async function encode(rows: CsrRows, o: EncodeOptions = {}): Promise<Uint8Array> {
    const level = levelOf(o);
    const p = prepareTile(rows, o);
    // Largest chunks first so that the last worker to finish has a small one.
    const order = p.chunks
      .map((_, k) => k)
      .sort((a, b) => p.chunks[b]!.gaps.length - p.chunks[a]!.gaps.length);
    const frames: ChunkFrames[] = new Array(p.chunks.length);
    await Promise.all(
      order.map(async (k) => {
        const chunk = p.chunks[k]!;
        // The raw streams are not needed here any more: move them instead of copying.
        const transfer = [chunk.gaps, chunk.vals, chunk.vexc, chunk.gexc].flatMap((b) =>
          b ? [b.buffer] : [],
        );
        const res = await run({ op: "compress", id: nextId++, chunk, level }, transfer);
        if (res.ok) frames[k] = res.frames as ChunkFrames;
      }),
    );
    return assembleTile(p, frames);
  }

  return {
    threads,
    decode,
    encode,
    async close() {
      closed = true;
      const s = slots ? await slots : [];
      fail(
        new DeltacellsError("InvalidInput", "the tile pool was closed", { field: "pool", found: "closed" }),
      );
      // Workers are unref'd: without ref() an event loop with nothing else to do could end while
      // `await pool.close()` still waits for them to exit.
      await Promise.all(
        s.map((x) => {
          x.worker.ref?.();
          return x.worker.terminate();
        }),
      );
    },
  };
}

/** Contiguous groups of chunk indices with roughly equal nonzeros. */
function splitChunks(layout: ReturnType<typeof inspectTile>, ks: number[], parts: number): number[][] {
  if (ks.length === 0) return [];
  const weight = (k: number) => {
    const ch = layout.chunks[k]!;
    return ch.nnzHi - ch.nnzLo + 1;
  };
  const total = ks.reduce((a, k) => a + weight(k), 0);
  const groups: number[][] = [];
  let acc = 0;
  let cur: number[] = [];
  for (const k of ks) {
    cur.push(k);
    acc += weight(k);
    if (acc >= (total * (groups.length + 1)) / parts && groups.length < parts - 1) {
      groups.push(cur);
      cur = [];
    }
  }
  if (cur.length > 0) groups.push(cur);
  return groups;
}

function hex32(v: number): string {
  return `0x${v.toString(16).padStart(8, "0")}`;
}
