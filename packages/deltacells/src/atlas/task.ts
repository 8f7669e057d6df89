/**
 * One task of an atlas: the tiles of its range and their obs shards, written from the inputs its
 * cells come from (opened one at a time, only those), then a completion record with the size and
 * checksums of every object it wrote, written last. Every object is a function of the plan and the
 * inputs alone, and written whole (a store's `set` is atomic), so a task run twice, killed and run
 * again, or run by two machines at once writes the same bytes: harmless, never mixed.
 */
import type { ReadableStore, WritableStore } from "@deltacells/storage";
import { readTileHeader } from "../codec/format.js";
import { MANIFEST_KEY, tileKey } from "../dataset/manifest.js";
import { remapColumns } from "../dataset/row-blocks.js";
import type { CanonicalRowBlock, DatasetSource } from "../dataset/source.js";
import type { TileEncoder } from "../dataset/tiling.js";
import type { Compress } from "../dataset/var-table.js";
import { DeltacellsError } from "../errors.js";
import { sha256Hex } from "../obs/fingerprint.js";
import { ObsShardWriter, type WrittenShard } from "../obs/write.js";
import { TileCutter } from "./cutter.js";
import { geneKeys } from "./keys.js";
import { taskKey } from "./layout.js";
import { InputObs, ObsTileRows } from "./obs-rows.js";
import type { AtlasPlan, PlanInput } from "./plan.js";
import { rowRange } from "./rows.js";
import { invalidInput, keysDigest } from "./scan.js";
import type { RowSink } from "./second-output.js";
import { positions } from "./values.js";

export const TASK_FORMAT = "deltacells-atlas-task";
export const TASK_VERSION = 1;

/** A tile a task wrote. */
export interface WrittenTile {
  index: number;
  cells: number;
  nnz: number;
  bytes: number;
  crc32: number;
  sha256: string;
}

/** What a task leaves when it is done: checked by `finalize` against the objects. */
export interface TaskRecord {
  format: typeof TASK_FORMAT;
  version: typeof TASK_VERSION;
  plan: string;
  task: number;
  tiles: WrittenTile[];
  shards: WrittenShard[];
  /** Nonzeros and counts written, checked against the plan's share of each input. */
  nnz: number;
  total: number;
  seconds: number;
}

/** An input opened for a task, and how to let it go. */
export interface OpenedSource {
  source: DatasetSource;
  release(): Promise<void>;
}

/** Where a task is: cells of its range done, tiles written. */
export interface TaskProgress {
  cellsDone: number;
  nCells: number;
  tilesWritten: number;
  bytesWritten: number;
}

export interface TaskOptions {
  /** Opens input `index` of the plan (checking it is the input the plan was made of). */
  open(input: PlanInput, index: number): Promise<OpenedSource>;
  encoder: TileEncoder;
  /** zstd compressor of the obs shards. */
  compress: Compress;
  /** Tiles encoded or being written at once (default 4), and obs row groups waiting. */
  inFlight?: number;
  blockCells?: number;
  signal?: AbortSignal;
  onProgress?: (p: TaskProgress) => void;
  /** Called with each object's key and size as it is written. */
  onWrite?: (key: string, bytes: number) => void;
  /**
   * Given each block of the task's cells as its tiles are cut from it (global cell indices,
   * columns in the dataset's source gene order: see {@link sourceColumns}); the next block is read
   * only once it is returned. What a build's second output reads.
   */
  rows?: RowSink;
}

/** The output column of each gene of an input, or -1 for a gene the atlas does not keep. */
async function geneMap(plan: AtlasPlan, input: PlanInput, source: DatasetSource): Promise<Int32Array> {
  const table = await source.var();
  const keys = geneKeys(table, plan.var_key ?? undefined, source.location);
  if ((await keysDigest(keys)) !== input.keys_sha256) {
    throw invalidInput(
      source.location,
      "its genes are not those it had when the plan was made (their keys differ); the input changed: make the plan again",
      { field: "keys_sha256", expected: input.keys_sha256 },
    );
  }
  const rank = new Int32Array(plan.n_genes);
  plan.genes.order.forEach((u, j) => {
    rank[u] = j;
  });
  if (!plan.genes.matched) return Int32Array.from(keys, (_, g) => rank[g]!);
  const where = positions(plan.genes.keys);
  return Int32Array.from(keys, (k) => {
    const u = where.get(k);
    return u === undefined ? -1 : rank[u]!;
  });
}

/**
 * The column of each gene of an input in the dataset's source gene order (`gene_order.npy`'s: the
 * gene space in first-seen order), or -1 for a gene the atlas does not keep; undefined when that
 * is the input's own order (one input, its genes unmatched).
 */
function sourceColumns(plan: AtlasPlan, map: Int32Array): Int32Array | undefined {
  if (!plan.genes.matched) return undefined;
  const order = plan.genes.order;
  return map.map((j) => (j < 0 ? -1 : order[j]!));
}

/** `block` of an input as the dataset's cells: global cell indices, columns by `columns` when given. */
function datasetRows(
  block: CanonicalRowBlock,
  firstCell: number,
  nGenes: number,
  columns: Int32Array | undefined,
): CanonicalRowBlock {
  const rows = columns ? remapColumns(block, nGenes, columns) : block;
  return {
    rowStart: firstCell + block.rowStart,
    nRows: rows.nRows,
    indptr: rows.indptr,
    indices: rows.indices,
    data: rows.data,
  };
}

function checkShape(input: PlanInput, source: DatasetSource): void {
  if (source.nCells !== input.cells || source.nGenes !== input.genes) {
    throw invalidInput(
      source.location,
      `it has ${source.nCells} cells x ${source.nGenes} genes, the plan was made of ${input.cells} x ${input.genes}; the input changed: make the plan again`,
      { field: "shape", expected: [input.cells, input.genes], found: [source.nCells, source.nGenes] },
    );
  }
}

/** Refuses to write into an atlas whose manifest exists: it is finalized, and a task would rewrite it under readers. */
async function refuseFinalized(store: ReadableStore, where: string): Promise<void> {
  if ((await store.getRange(MANIFEST_KEY, { offset: 0, length: 0 })) !== undefined) {
    throw new DeltacellsError(
      `${where} is finalized already (it has a manifest.json): a task would rewrite tiles under its readers, so nothing was written`,
      { tag: "InvalidInput", object: `${where}/${MANIFEST_KEY}`, field: "manifest" },
    );
  }
}

/** Run task `t` of `plan` into `store` (see the module comment); returns its completion record. */
export async function runTask(
  store: ReadableStore & WritableStore & { url?: string },
  plan: AtlasPlan,
  t: number,
  opts: TaskOptions,
): Promise<TaskRecord> {
  const started = performance.now();
  const task = plan.tasks[t];
  if (task === undefined) {
    throw new DeltacellsError(`task ${t} is not in the plan, which has tasks 0 .. ${plan.tasks.length - 1}`, {
      tag: "InvalidInput",
      field: "task",
      expected: `0 .. ${plan.tasks.length - 1}`,
      found: t,
    });
  }
  const where = store.url ?? "the atlas";
  await refuseFinalized(store, where);
  const ts = plan.tile_size;
  const [t0, t1] = task.tiles;
  const [u0] = task.obs_tiles;
  const cellsStart = u0 * ts;
  const tileCellsStart = t0 * ts;
  const cellsEnd = Math.min(plan.n_cells, t1 * ts);
  const inFlight = Math.max(1, opts.inFlight ?? 4);
  const put = async (key: string, value: Uint8Array) => {
    await store.set(key, value, { signal: opts.signal });
    bytesWritten += value.length;
    opts.onWrite?.(key, value.length);
  };
  const cutter = new TileCutter(ts, plan.n_genes);
  const columns = plan.obs?.columns;
  // A task with nothing to write (more tasks than shards) has no shard to start.
  const shards =
    plan.obs && t1 > u0
      ? new ObsShardWriter(
          columns!.map((c) => c.schema),
          put,
          opts.compress,
          plan.obs.tiles_per_file,
          u0,
        )
      : undefined;
  let obsTile = columns ? new ObsTileRows(columns, ts) : undefined;
  const tiles: WrittenTile[] = [];
  const pending: Promise<void>[] = [];
  const obsPending: Promise<void>[] = [];
  let failure: unknown;
  let bytesWritten = 0;
  let nextTile = u0;
  let cellsDone = 0;
  const progress = () =>
    opts.onProgress?.({ cellsDone, nCells: cellsEnd - cellsStart, tilesWritten: tiles.length, bytesWritten });

  /** Hands the filled obs tile to the shard writer, bounded like the tiles. */
  const emitObs = async () => {
    if (!obsTile) return;
    const rows = obsTile;
    obsTile = new ObsTileRows(columns!, ts);
    obsPending.push(shards!.addGroup(rows.count, rows.data()).catch((err) => void (failure ??= err)));
    while (obsPending.length >= inFlight) await obsPending.shift();
  };
  /** A tile before the task's first whose obs only is rewritten. */
  const emitObsOnly = async () => {
    nextTile++;
    await emitObs();
  };
  const emitTile = async () => {
    const index = nextTile++;
    const { rows, giveBack } = cutter.take();
    const cells = rows.indptr.length - 1;
    const nnz = rows.indices.length;
    const encoded = opts.encoder.encode(rows, { nChunks: plan.n_chunks, level: plan.zstd_level });
    pending.push(
      encoded
        .finally(giveBack)
        .then(async (tile) => {
          const header = readTileHeader(tile);
          const record = {
            index,
            cells,
            nnz,
            bytes: tile.length,
            crc32: header.crc32,
            sha256: await sha256Hex(tile),
          };
          await put(tileKey(index), tile);
          tiles.push(record);
        })
        .catch((err) => void (failure ??= err)),
    );
    await emitObs();
    while (pending.length >= inFlight) await pending.shift();
  };

  for (const { input: i, start, end } of task.rows) {
    if (failure !== undefined) break;
    const input = plan.inputs[i]!;
    const opened = await opts.open(input, i);
    try {
      const { source } = opened;
      checkShape(input, source);
      const inputObs = columns ? await InputObs.open(source, plan, i) : undefined;
      const tileEnd = (r: number) => (Math.floor((input.first_cell + r) / ts) + 1) * ts - input.first_cell;
      // Rows before the task's first tile whose obs it rewrites (an append's first shard): obs only.
      let r = start;
      const countsFrom = Math.max(start, Math.min(end, tileCellsStart - input.first_cell));
      while (r < countsFrom) {
        const e = Math.min(countsFrom, tileEnd(r));
        await inputObs!.fill(obsTile!, r, e);
        cellsDone += e - r;
        r = e;
        if (obsTile!.count === ts) await emitObsOnly();
      }
      if (r >= end) continue;
      const map = await geneMap(plan, input, source);
      const ownColumns = opts.rows && sourceColumns(plan, map);
      let obsFrom = r;
      // Done with each block before the next is read: the cutter copies its rows into the tile,
      // and the second output may keep a block only until it asks for the next.
      for await (const block of rowRange(source, r, end, {
        blockCells: opts.blockCells,
        signal: opts.signal,
        reuse: true,
      })) {
        await opts.rows?.give(datasetRows(block, input.first_cell, plan.n_genes, ownColumns));
        for (let k = 0; k < block.nRows; k++) {
          cutter.addRow(block, k, map, source.location);
          if (cutter.nCells === ts) {
            const row = block.rowStart + k + 1;
            if (inputObs) await inputObs.fill(obsTile!, obsFrom, row);
            obsFrom = row;
            await emitTile();
            if (failure !== undefined) break;
          }
        }
        if (failure !== undefined) break;
        await opts.rows?.returned();
        cellsDone += block.nRows;
        progress();
      }
      if (inputObs && obsFrom < end && failure === undefined) await inputObs.fill(obsTile!, obsFrom, end);
    } finally {
      await opened.release();
    }
  }
  if (failure === undefined && cutter.nCells > 0) {
    if (cellsEnd !== plan.n_cells)
      throw new DeltacellsError(
        `task ${t} ended with a partial tile of ${cutter.nCells} cells before the last tile`,
        {
          tag: "InternalError",
          field: "tiles",
        },
      );
    await emitTile();
  }
  await Promise.all([...pending, ...obsPending]);
  if (failure !== undefined) throw failure;
  const written = shards ? await shards.finish() : [];
  if (nextTile !== t1) {
    throw new DeltacellsError(
      `task ${t} wrote tiles up to ${nextTile}, its range ends at ${t1}: the inputs yielded fewer cells than the plan says`,
      {
        tag: "InvalidInput",
        field: "tiles",
        expected: t1,
        found: nextTile,
      },
    );
  }
  tiles.sort((a, b) => a.index - b.index);
  const record: TaskRecord = {
    format: TASK_FORMAT,
    version: TASK_VERSION,
    plan: plan.id,
    task: t,
    tiles,
    shards: written,
    nnz: cutter.nnzSeen,
    total: cutter.totalSeen,
    seconds: (performance.now() - started) / 1000,
  };
  cellsDone = cellsEnd - cellsStart;
  progress();
  await store.set(taskKey(t), new TextEncoder().encode(`${JSON.stringify(record)}\n`), {
    signal: opts.signal,
  });
  return record;
}
