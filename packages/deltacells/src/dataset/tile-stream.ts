/**
 * `Dataset.tiles()`: a dataset's tiles in order, read and decoded ahead of the caller within
 * bounds, and everything read ahead given back when the loop is left.
 */
import { ioTurn } from "../next-task.js";
import type { DatasetTile, FetchedTile, ReadOptions, TileReader } from "./tile-io.js";

/** Options of `Dataset.tiles()`: which tiles (`start` to `end`, exclusive) and how far ahead. */
export interface TileStreamOptions extends ReadOptions {
  start?: number;
  end?: number;
  prefetch?: number;
}

/**
 * The tiles in order, each with its first cell; the next tiles' GETs and decodes start while the
 * caller works on the current one (`prefetch` tiles decoded ahead: default 0 on this thread, where
 * decoding ahead would only trade the buffer just released for a cold one; twice the workers on
 * a pool, so that each worker has a whole tile queued and no tile is split for want of work;
 * GETs run 6 tiles further ahead, none with `prefetch: 0`). Leaving the loop (break,
 * throw, or `signal` aborted, which stops it at the next tile) gives back what was read or
 * decoded ahead. Each tile is lent: `release()` it once done with it (or `using tile = ...`) and
 * the loop runs without allocating; a tile kept unreleased stays valid (see `DatasetTile`).
 *
 *     for await (const { cellStart, tile } of ds.tiles()) {
 *       train(cellStart, tile.indptr, tile.indices, tile.data);
 *       tile.release();
 *     }
 */
export async function* streamTiles(
  reader: TileReader,
  tileStart: (i: number) => number,
  opts: TileStreamOptions = {},
): AsyncGenerator<{ index: number; cellStart: number; tile: DatasetTile }> {
  const start = opts.start ?? 0;
  const end = opts.end ?? reader.nTiles;
  // On this thread a tile decoded ahead only helps a caller that awaits something else between
  // tiles, and it costs every caller a second output buffer: the decode then writes into one
  // gone cold instead of the one just released (0.7 -> 0.8x of decodeTileSync's speed with
  // one reused output, bench/RESULTS.md). So by default only the reads run ahead here.
  const ahead = Math.max(0, opts.prefetch ?? 2 * (reader.threads ?? 0));
  // GETs run further ahead than decodes: a tile's bytes are small next to its decoded arrays,
  // and a read from a folder takes several event-loop turns (open, fstat, read, stat), which
  // a busy decoding thread hands out only between tiles.
  const readAhead = opts.prefetch !== undefined && opts.prefetch <= 0 ? 0 : ahead + READ_AHEAD;
  // Tiles i, i+1, ... from the current one: each read started, its decode once within `ahead`.
  const slots: {
    read: Promise<FetchedTile>;
    /** The read has settled (its bytes are here, or it failed). */
    readSettled?: boolean;
    tile?: Promise<DatasetTile>;
    settled?: boolean;
  }[] = [];
  let nextRead = start;
  let reading = 0;
  const read = () => {
    const read = reader.fetchTile(nextRead++, opts.signal);
    reading++;
    const slot: (typeof slots)[number] = { read };
    // Observed when its turn comes; the handler also avoids an unhandled rejection meanwhile.
    const settled = () => {
      reading--;
      slot.readSettled = true;
    };
    read.then(settled, settled);
    slots.push(slot);
    return slot;
  };
  const decode = (slot: (typeof slots)[number], t: number) => {
    slot.tile = slot.read.then((fetched) => reader.decodeFetched(t, fetched, opts));
    const settled = () => void (slot.settled = true);
    slot.tile.then(settled, settled);
  };
  const fill = (i: number) => {
    while (nextRead < end && nextRead - i <= readAhead) read();
    for (let k = 0; k < slots.length && k <= ahead; k++)
      if (slots[k]!.tile === undefined) decode(slots[k]!, i + k);
  };
  // The first tiles one by one, each decode submitted before the next read starts: a read that
  // blocks (a folder's) would otherwise hold back every decode until all the reads ahead were
  // done, leaving the workers idle for ~2.5 ms (11 reads) at the start of each loop. A read
  // that completes at once settles within a few microtasks; one that waits for I/O is not
  // waited for (the next read starts after those few microtasks).
  const fillFirst = async (i: number) => {
    while (nextRead < end && nextRead - i <= ahead) {
      const slot = read();
      decode(slot, nextRead - 1);
      for (let hop = 0; hop < SETTLE_HOPS && !slot.readSettled; hop++) await undefined;
    }
  };
  try {
    for (let i = start; i < end; i++) {
      // Aborted: stop at the next tile, even one already read and decoded.
      opts.signal?.throwIfAborted();
      if (i === start) await fillFirst(i);
      // Reads still under way from earlier tiles: they wait for I/O callbacks (a read that
      // completes at once, a folder's blocking read or memory, has settled by now).
      const waiting = reading;
      fill(i);
      // An event-loop turn while reads are under way and this tile's bytes are here: the reads
      // advance one step (open, fstat, read, stat) per tile even when no tile waits for I/O
      // (awaiting a settled promise, then decoding, never lets the I/O callbacks run). A pool's
      // replies need turns too, so with workers the reads just started count; on this thread
      // a turn for reads that complete without I/O callbacks only costs (~20 us per tile).
      const slot = slots.shift()!;
      const turn = reader.threads ? reading > 0 : waiting > 0;
      if (turn && (slot.settled || slot.readSettled)) await ioTurn();
      const tile = await slot.tile!;
      yield { index: i, cellStart: tileStart(i), tile };
    }
  } finally {
    // Stopped early (break, throw): the tiles read or decoded ahead were never handed out.
    for (const slot of slots) {
      if (slot.tile !== undefined)
        slot.tile.then(
          (t) => t.release(),
          () => {},
        );
      else
        slot.read.then(
          (r) => r.done(),
          () => {},
        );
    }
  }
}

/**
 * Tiles {@link streamTiles} reads beyond those it decodes ahead: a folder's read takes four
 * steps (open, fstat, read, stat), each advanced once per tile (see `ioTurn`), so fewer than four
 * reads in flight fall behind the decodes and the thread waits for them.
 */
const READ_AHEAD = 6;

/**
 * Microtasks {@link streamTiles} waits at most for a read to settle before it starts the next
 * (a blocking read through `fetchTile` and the storage wrappers settles in fewer).
 */
const SETTLE_HOPS = 16;
