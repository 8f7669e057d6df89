/**
 * Writing a sporadik store from row blocks in Node, in bounded memory whatever the number of
 * nonzeros: the streaming writer with chunks compressed on worker threads (native zstd) and the
 * columns' nonzeros spilled to temporary files. The conversion `deltacells convert --format
 * sporadik` is this function fed by an input reader or a dataset.
 *
 * @module
 */
import { tmpdir } from "node:os";
import { EncodePool, nativeEncoder } from "./encode-pool.js";
import { FileSpill } from "./spill-files.js";
import type { WritableStore } from "./store.js";
import {
  type RowBlock,
  type StreamWriteOptions,
  type StreamWriteResult,
  StreamWriter,
} from "./stream-writer.js";

/**
 * Bytes of the transposition {@link writeStoreFromRowBlocks} keeps in memory by default: 64 MiB,
 * about 8 M int32 nonzeros (8 bytes each), so a small matrix is transposed without a disk and a
 * large one spills the rest. The region is as large as the matrix needs up to this, so a budget
 * above what the smaller of two matrices needs makes the larger one's peak grow by the
 * difference: at 160 MiB, 13.5 M nonzeros peaked at 366 MiB and 67 M at 414 MiB; at 64 MiB, 309
 * and 329 MiB (bench/RESULTS.md, "Peak memory of a conversion"). Spilling costs CPU where writing
 * and reading files does (bench/RESULTS.md, "sporadik writes").
 */
export const TRANSPOSE_MEMORY = 64 * 2 ** 20;

/** Options of {@link writeStoreFromRowBlocks}: the streaming writer's, with Node's spill and encoder. */
export interface RowBlocksWriteOptions extends Omit<StreamWriteOptions, "spill" | "encoder"> {
  /**
   * Folder under which the temporary folder (`.sporadik-spill-*`, about
   * {@link temporaryBytesPerNonzero} bytes per nonzero) is made, and removed when done, failed or
   * not. Default: the system's temporary folder. Pick one on a disk with room.
   */
  tmpDir?: string;
  /** Threads compressing chunks. Default: one per core. */
  threads?: number;
  /**
   * Also remove the temporary folder on SIGINT and SIGTERM, then end the process as the signal
   * would. For command-line tools; a library leaves signals to its host. Default false.
   */
  removeOnSignal?: boolean;
}

/**
 * Write a sporadik store from CSR row blocks (in row order, each row's columns ascending), as
 * {@link writeStoreFromRows} does, on Node's machinery: chunks compressed by native zstd on
 * `threads` worker threads, nonzeros for axis 1 transposed in memory up to {@link TRANSPOSE_MEMORY}
 * bytes and spilled past it to files under `tmpDir`. The store gets its
 * block last, once every chunk is written; after a failure it has none (every reader refuses it) and
 * the temporary folder is gone. Chunk writes in flight default to 32 (a folder store syncs each
 * object, an S3 store waits on each PUT).
 *
 *     const input = await openInput("pbmc.h5ad");
 *     await writeStoreFromRowBlocks(new FolderStore("pbmc.zarr"), input.rowBlocks(), {
 *       shape: [input.nCells, input.nGenes],
 *       axes: [0, 1],
 *     });
 *
 * A store with `setParts` (`withFileParts`, an S3 store) gets a byte-addressable array's one large
 * object in parts, never whole in memory.
 */
export async function writeStoreFromRowBlocks(
  store: WritableStore,
  blocks: Iterable<RowBlock> | AsyncIterable<RowBlock>,
  options: RowBlocksWriteOptions,
): Promise<StreamWriteResult> {
  const { tmpDir, threads, removeOnSignal, ...writeOptions } = options;
  const spill = await FileSpill.create(tmpDir ?? tmpdir(), { removeOnSignal: removeOnSignal === true });
  const pool = new EncodePool(threads);
  let writer: StreamWriter | undefined;
  try {
    writer = await StreamWriter.open(store, {
      concurrency: 32,
      transposeMemory: TRANSPOSE_MEMORY,
      ...writeOptions,
      spill,
      encoder: nativeEncoder(pool),
    });
    for await (const block of blocks) await writer.writeRows(block);
    return await writer.finish();
  } catch (error) {
    await writer?.abort();
    throw error;
  } finally {
    await spill.dispose();
    await pool.close();
  }
}
