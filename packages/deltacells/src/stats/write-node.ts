/**
 * A dataset's statistics written as the commands write them (`deltacells stats`, and
 * `convert --sporadik`, `append --sporadik` and an atlas at their end): one decode pass over the
 * tiles on a pool of worker threads, the objects compressed with native zstd. Node-only.
 */
import type { Store } from "@deltacells/storage";
import { localPath, openStore, type StatsStore, withStats } from "@deltacells/storage/node";
import { createTilePool } from "../codec/pool/pool.js";
import { zstdCompressor } from "../dataset/node.js";
import { openDataset } from "../dataset/open.js";
import type { OpenTargetOptions } from "../target/target.js";
import { acquireWriterLock } from "../target/writer-lock.js";
import { type WriteStatsResult, writeStats } from "./write.js";

/** zstd level of the statistics' objects: they are small, read whole and written once. */
const STATS_ZSTD_LEVEL = 9;

/** Options of {@link writeDatasetStats}. */
export interface WriteDatasetStatsOptions {
  /** Decoding threads (default: the pool's default, the number of cores). */
  threads?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Called as tiles are summed. */
  onProgress?: ((tilesDone: number, nTiles: number) => void) | undefined;
}

/**
 * Computes the statistics of the dataset in `store` and writes them beside it (`writeStats`: the
 * objects, the index, the manifest naming them, in that order). The caller holds the dataset's
 * writer lock ({@link writeStatsAt} takes it).
 */
export async function writeDatasetStats(
  store: Store,
  options: WriteDatasetStatsOptions = {},
): Promise<WriteStatsResult> {
  const { threads, signal, onProgress } = options;
  const pool = createTilePool(threads === undefined ? {} : { threads });
  try {
    const ds = await openDataset(store, { decoder: pool, ...(signal && { signal }) });
    return await writeStats(ds, store, {
      compress: zstdCompressor(STATS_ZSTD_LEVEL),
      prefetch: pool.threads + 1,
      ...(signal && { signal }),
      ...(onProgress && { onProgress }),
    });
  } finally {
    await pool.close();
  }
}

/** Options of {@link writeStatsAt}: the pass's, and how the dataset's lock is taken. */
export interface WriteStatsAtOptions
  extends WriteDatasetStatsOptions,
    Pick<OpenTargetOptions, "breakLock" | "open" | "writer" | "optionNames" | "releaseOnSignal"> {}

/**
 * {@link writeDatasetStats} of the dataset at `location` (a local path or URL), holding its writer
 * lock (refused while another writer holds it; `breakLock` deletes a stale one first). The dataset
 * is opened before the lock is taken: a location without one is refused before anything is written.
 */
export async function writeStatsAt(
  location: string,
  options: WriteStatsAtOptions = {},
): Promise<WriteStatsResult & { store: StatsStore }> {
  const {
    breakLock,
    open = (l: string) => withStats(openStore(l)),
    writer = "deltacells",
    optionNames,
    releaseOnSignal,
    ...pass
  } = options;
  const store = open(location);
  await openDataset(store, pass.signal ? { signal: pass.signal } : {});
  const lock = await acquireWriterLock(store, location, {
    folder: localPath(location),
    breakLock,
    writer,
    breakLockName: optionNames?.breakLock,
    releaseOnSignal,
  });
  try {
    return { ...(await writeDatasetStats(store, pass)), store };
  } finally {
    await lock.release();
  }
}
