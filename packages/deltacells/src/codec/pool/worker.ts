/**
 * The script a {@link TilePool} worker runs, in Node (worker_threads) and in browsers (module Web
 * Workers): decode chunks of a tile or compress a chunk's streams, on request.
 */
import { serveRequests } from "#threads";
import { chunkContext, decodeChunksInto } from "../decode.js";
import { checksum } from "../layout.js";
import { viewOfMapped } from "../mapped.js";
import { type ScatterTarget, scatterTileSync } from "../scatter.js";
import { loadZstd } from "../zstd/load.js";
import {
  CLAIM_STARTED,
  CLAIM_WAITING,
  type DecodeRequest,
  type PostedTarget,
  type Request,
  type Response,
  type ScatterRequest,
  serializeError,
  WorkerColumnMaps,
} from "./protocol.js";

type Reply = (r: Response, transfer: ArrayBuffer[]) => void;

// zstd (and the native kernel) start loading with the worker, not with its first job: a pool
// started ahead of its first tile (`pool.start()`) is then ready for it.
const zstdLoaded = loadZstd();
zstdLoaded.catch(() => {}); // a failure is each job's answer, not this worker's crash
// The encoder only when the pool compresses: a decoding worker never loads it.
let encoder: Promise<typeof import("../encode.js")> | undefined;

/** The column maps the pool sent this worker, by id (it sends each once). */
const columnMaps = new WorkerColumnMaps();

/** Keeps a column map that came with `req`: before anything can fail, as the pool counts it as sent. */
function keepColumnMap(req: Request): void {
  if (req.op !== "compress" && req.columns?.map !== undefined)
    columnMaps.add(req.columns.id, req.columns.map);
}

function columnsOf(req: DecodeRequest | ScatterRequest): Int32Array | undefined {
  if (req.columns === undefined) return undefined;
  const held = columnMaps.get(req.columns.id);
  if (held === undefined) throw new Error(`column map ${req.columns.id} was never sent to this worker`);
  return held;
}

/** A posted scatter target as arrays of this thread: a mapped file's through this thread's mapping. */
function targetOf(t: PostedTarget): ScatterTarget {
  if (!("mapped" in t)) return t;
  const indices = viewOfMapped(t.mapped.indices);
  if (!(indices instanceof Int32Array)) throw new Error("a mapped scatter target's indices are not int32");
  return { indices, data: viewOfMapped(t.mapped.data) };
}

async function handle(req: Request, answer: Reply): Promise<void> {
  keepColumnMap(req);
  // Every answer gives the claim cell back, the recalled job's too.
  const claim = req.claim;
  const reply: Reply = claim === undefined ? answer : (r, t) => answer({ ...r, claim: claim.at }, t);
  try {
    const zstd = await zstdLoaded;
    // Claimed as it starts, after the jobs ahead of it (each waits for zstd first): the host may
    // have given it to a worker left idle meanwhile (host.ts, `steal`).
    if (
      claim !== undefined &&
      Atomics.compareExchange(claim.cells, claim.at, CLAIM_WAITING, CLAIM_STARTED) !== CLAIM_WAITING
    ) {
      reply({ id: req.id, ok: true, recalled: true }, []);
      return;
    }
    if (req.op === "compress") {
      encoder ??= import("../encode.js");
      const f = (await encoder).compressChunk(req.chunk, zstd, req.level);
      const transfer = [f.gaps, f.vals, f.vexc, f.gexc].flatMap((b) => (b ? [b.buffer as ArrayBuffer] : []));
      reply({ id: req.id, ok: true, frames: f }, transfer);
      return;
    }
    if (req.op === "scatter") {
      const { bytes, layout, values, slots, targets, object } = req;
      const into = targets.map(targetOf);
      scatterTileSync(bytes, layout, zstd, { values, slots, targets: into, columns: columnsOf(req), object });
      reply({ id: req.id, ok: true }, []);
      return;
    }
    reply(...decode(req, zstd));
  } catch (err) {
    reply({ id: req.id, ok: false, error: serializeError(err) }, []);
  }
}

function decode(req: DecodeRequest, zstd: Awaited<ReturnType<typeof loadZstd>>): [Response, ArrayBuffer[]] {
  const { bytes, layout, k0, k1, c0, c1, object } = req;
  const columns = columnsOf(req);
  const crc = req.crcTo > req.crcFrom ? checksum(bytes.subarray(req.crcFrom, req.crcTo)) : 0;
  let { indices, data, base } = req;
  const owned = indices === undefined || data === undefined;
  if (owned) {
    const lo = Math.max(c0, layout.chunks[k0]?.cellLo ?? c0);
    const hi = Math.min(c1, layout.chunks[k1 - 1]?.cellHi ?? c0);
    base = layout.indptr[lo]!;
    const n = hi > lo ? layout.indptr[hi]! - base : 0;
    indices = new Int32Array(n);
    data = req.values === "float32" ? new Float32Array(n) : new Int32Array(n);
  }
  decodeChunksInto(
    chunkContext({ bytes, layout, c0, c1, indices: indices!, data: data!, base, zstd, object }),
    k0,
    k1,
    columns,
  );
  if (!owned) return [{ id: req.id, ok: true, crc }, []];
  return [
    { id: req.id, ok: true, crc, indices, data },
    [indices!.buffer as ArrayBuffer, data!.buffer as ArrayBuffer],
  ];
}

serveRequests((req, reply) => void handle(req, reply));
