/**
 * The floor a loader cannot beat, shared by run.ts (`ceiling Nt into memory`) and floor-gap.ts:
 * the codec's decode on a pool, each tile's rows written once into memory. 4 lanes, each into its
 * own batch-sized shared buffer (as a loader's batches; far larger than the caches), rows at a
 * moving offset, in tile order unless `shuffled`; `columns` renumbers them as the loader's source
 * gene order does. The codec's plain ceiling writes each tile into recycled tile-sized outputs that
 * stay in cache; a loader must write its batches out, ~8 bytes per nonzero, and this pass is what
 * that alone costs on top of decoding.
 */
import { createTilePool, type Dataset } from "@deltacells/core";

export type TileLayout = ReturnType<Dataset["tileLayout"]>;

export interface FloorOptions {
  threads: number;
  batchSize: number;
  values?: "int32" | "float32";
  /** Each tile's rows at shuffled places of its span (as rows land in shuffled batches). */
  shuffled?: boolean;
  /** Renumbers the columns (a permutation of the genes). */
  columns?: Int32Array;
}

export interface FloorPass {
  seconds: number;
  /** Seconds to the first tile written. */
  firstBatch: number;
  /** CPU seconds of this process meanwhile, every thread. */
  cpu: number;
}

/** A pseudo-random permutation of 0 .. n - 1 (xorshift from `seed`). */
export function permutation(n: number, seed: number): Int32Array {
  const p = Int32Array.from({ length: n }, (_, i) => i);
  let s = seed >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    const j = (s >>> 0) % (i + 1);
    const t = p[i]!;
    p[i] = p[j]!;
    p[j] = t;
  }
  return p;
}

/** One pass of the floor over every tile (its pool started and warmed on one tile first). */
export async function floorPass(
  tiles: Uint8Array[],
  layouts: TileLayout[],
  nCells: number,
  nnz: number,
  options: FloorOptions,
): Promise<FloorPass> {
  const pool = createTilePool({ threads: options.threads });
  const most = Math.max(...layouts.map((l) => l.indptr[l.header.nCells]!));
  const size = Math.ceil((1.1 * nnz * options.batchSize) / nCells) + most;
  const shared = () => new Int32Array(new SharedArrayBuffer(4 * size));
  const lanes = Array.from({ length: 4 }, () => ({ target: { indices: shared(), data: shared() }, at: 0 }));
  const job = (t: number, lane: (typeof lanes)[number]) => {
    const l = layouts[t]!;
    const n = l.header.nCells;
    if (lane.at + l.indptr[n]! > size) lane.at = 0;
    const slots = new Float64Array(3 * n);
    // Element by element: this runs inside the timed pass, on the thread that feeds the pool.
    const order = options.shuffled ? permutation(n, t + 1) : undefined;
    let at = lane.at;
    for (let k = 0; k < n; k++) {
      const r = order ? order[k]! : k;
      slots[3 * r] = r;
      slots[3 * r + 2] = at;
      at += l.indptr[r + 1]! - l.indptr[r]!;
    }
    lane.at += l.indptr[n]!;
    return {
      values: options.values ?? ("int32" as const),
      slots,
      targets: [lane.target],
      ...(options.columns && { columns: options.columns }),
    };
  };
  // Workers started and warm, every buffer touched once (as a reused loader's).
  for (const lane of lanes)
    for (let at = 0; at < size; at += 1024) lane.target.indices[at] = lane.target.data[at] = 0;
  await pool.scatter(tiles[0]!, layouts[0]!, job(0, lanes[0]!));
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let next = 0;
  let first = 0;
  const run = async (lane: (typeof lanes)[number]) => {
    while (next < tiles.length) {
      const t = next++;
      await pool.scatter(tiles[t]!, layouts[t]!, job(t, lane));
      if (!first) first = performance.now() - t0;
    }
  };
  await Promise.all(lanes.map(run));
  const seconds = (performance.now() - t0) / 1000;
  const u = process.cpuUsage(c0);
  await pool.close();
  return { seconds, firstBatch: first / 1000, cpu: (u.user + u.system) / 1e6 };
}
