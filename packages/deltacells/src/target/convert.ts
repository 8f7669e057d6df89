/**
 * A conversion into a dataset at a location, as `deltacells convert` makes it: the target's writer
 * lock taken and the target checked before the input is opened, the dataset written under the
 * staging prefix and moved into place once its manifest is there, the staging dropped after a
 * failure (an old dataset stays as it was), and the lock released however it ends.
 */
import type { StatsStore } from "@deltacells/storage";
import { MANIFEST_KEY } from "../dataset/manifest.js";
import type { DatasetSource } from "../dataset/source.js";
import type { WriteDatasetOptions, WriteDatasetResult } from "../dataset/writer.js";
import { writeDataset } from "../dataset/writer.js";
import { type OpenTargetOptions, openTarget } from "./target.js";

/** A source the conversion opens, once its target is known to be writable, and closes. */
export type ClosableSource = DatasetSource & { close(): Promise<void> };

/** Options of {@link convertToDataset}: the writer's, and the target's. */
export interface ConvertToDatasetOptions extends WriteDatasetOptions, OpenTargetOptions {
  /**
   * Runs once the dataset is in place, before the lock is released: what else goes into the
   * dataset under the same lock (its sporadik companion). A failure fails the conversion; the
   * dataset stays in place.
   */
  afterCommit?: (store: StatsStore) => Promise<void>;
}

/** What {@link convertToDataset} wrote, and where. */
export interface ConvertToDatasetResult<S> extends WriteDatasetResult {
  /** The target, counting every request of the conversion (the staging writes and moves included). */
  store: StatsStore;
  /** The source, closed. */
  source: S;
  /** Temporary files of killed writers removed from the target (a folder) once the lock was taken. */
  removedTempFiles: string[];
}

/**
 * Convert the source `open` opens into a dataset at `output` (a local path or URL), with the
 * target's checks and staging of {@link openTarget}: refused before `open` is called when the
 * target cannot be written; written under the staging prefix and moved into place, manifest last;
 * the staging removed after a failure. The source is closed and the lock released however it ends.
 *
 *     const { manifest } = await convertToDataset("s3://bucket/pbmc", () => openInput("pbmc.h5ad"), {
 *       input: "pbmc.h5ad",
 *       encoder: pool,
 *       compress: zstdCompressor(),
 *     });
 */
export async function convertToDataset<S extends ClosableSource>(
  output: string,
  open: () => Promise<S>,
  options: ConvertToDatasetOptions,
): Promise<ConvertToDatasetResult<S>> {
  const {
    input,
    overwrite,
    breakLock,
    open: openLocation,
    writer,
    optionNames,
    releaseOnSignal,
    afterCommit,
    ...write
  } = options;
  const target = await openTarget(output, {
    input,
    overwrite,
    breakLock,
    open: openLocation,
    writer,
    optionNames,
    releaseOnSignal,
  });
  try {
    let source: S;
    try {
      source = await open();
    } catch (err) {
      await target.abandon().catch(() => undefined);
      throw err;
    }
    try {
      const result = await writeDataset(source, target.staging, write);
      await target.commit(MANIFEST_KEY);
      await afterCommit?.(target.store);
      return { ...result, store: target.store, source, removedTempFiles: target.removedTempFiles };
    } catch (err) {
      await target.abandon().catch(() => undefined);
      throw err;
    } finally {
      await source.close();
    }
  } finally {
    await target.lock.release();
  }
}
