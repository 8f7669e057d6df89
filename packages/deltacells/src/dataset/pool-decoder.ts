/**
 * A dataset decoder on a new tile pool. Its own module, light (the codec's pool and
 * nothing of the dataset reader's): a command can start the pool's workers before it loads the
 * rest of the library, so that their start-up overlaps its own.
 */
import { createTilePool } from "../codec/pool/pool.js";
import { BufferRecycler, canShareMemory, type LentBytes, lendBytes } from "../codec/recycle.js";
import type { TileDecoder } from "./tile-io.js";

/**
 * A decoder on a new pool of `threads` workers, lending shared memory to read tiles into (they
 * then reach the workers without a copy), the way to start the workers before the first tile
 * (`start`; else they start with it) and the way to stop the pool.
 */
export function poolTileDecoder(threads: number): {
  decoder: TileDecoder & { lend(size: number): LentBytes };
  start(): void;
  close(): Promise<void>;
} {
  const pool = createTilePool({ threads });
  const inputs = canShareMemory()
    ? new BufferRecycler<ArrayBuffer | SharedArrayBuffer>((n) => new SharedArrayBuffer(n))
    : new BufferRecycler<ArrayBuffer | SharedArrayBuffer>((n) => new ArrayBuffer(n));
  const decoder = {
    threads: pool.threads,
    renumbers: true,
    decode: pool.decode,
    lend: (size: number) => lendBytes(inputs, size),
    // Workers write into shared memory only: pages without it decode whole tiles instead.
    ...(canShareMemory() && { scatter: pool.scatter, scatterShared: true }),
  };
  return { decoder, start: () => pool.start(), close: () => pool.close() };
}
