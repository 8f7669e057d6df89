/**
 * A conversion into a dataset at a location, as `deltacells convert` makes it: the target's writer
 * lock taken and the target checked before any input is opened, the dataset written under the
 * staging prefix and moved into place once its manifest is there, the staging dropped after a
 * failure (an old dataset stays as it was), and the lock released however it ends. One input
 * ({@link convertToDataset}) or several, an atlas built in this process ({@link buildAtlasAt}).
 */
import type { StatsStore, Store } from "@deltacells/storage";
import { localPath } from "@deltacells/storage/node";
import {
  type AtlasInputRef,
  type BuildAtlasOptions,
  type BuildAtlasResult,
  buildAtlas,
} from "../atlas/build.js";
import { MANIFEST_KEY } from "../dataset/manifest.js";
import type { DatasetSource } from "../dataset/source.js";
import type { WriteDatasetOptions, WriteDatasetResult } from "../dataset/writer.js";
import { writeDataset } from "../dataset/writer.js";
import { type OpenTargetOptions, openTarget, TargetError } from "./target.js";

/** A source the conversion opens, once its target is known to be writable, and closes. */
export type ClosableSource = DatasetSource & { close(): Promise<void> };

/** What runs once the dataset is in place, before the lock is released. */
interface AfterCommit {
  /**
   * Runs once the dataset is in place, before the lock is released: what else goes into the
   * dataset under the same lock (its sporadik companion). A failure fails the conversion; the
   * dataset stays in place.
   */
  afterCommit?: (store: StatsStore) => Promise<void>;
}

/** Options of {@link convertToDataset}: the writer's, and the target's. */
export interface ConvertToDatasetOptions extends WriteDatasetOptions, OpenTargetOptions, AfterCommit {}

/** What {@link convertToDataset} wrote, and where. */
export interface ConvertToDatasetResult<S> extends WriteDatasetResult {
  /** The target, counting every request of the conversion (the staging writes and moves included). */
  store: StatsStore;
  /** The source, closed. */
  source: S;
  /** Temporary files of killed writers removed from the target (a folder) once the lock was taken. */
  removedTempFiles: string[];
}

/** Options of {@link buildAtlasAt}: the build's, and the target's (every input is refused as the target). */
export interface BuildAtlasAtOptions
  extends BuildAtlasOptions,
    Omit<OpenTargetOptions, "input">,
    AfterCommit {}

/** What {@link buildAtlasAt} wrote, and where. */
export interface BuildAtlasAtResult extends BuildAtlasResult {
  /** The target, counting every request of the build (the staging writes and moves included). */
  store: StatsStore;
  /** Temporary files of killed writers removed from the target (a folder) once the lock was taken. */
  removedTempFiles: string[];
}

/**
 * `write` into the staging prefix of the target at `output`, then the manifest moved into place
 * last and `afterCommit` run; the staging removed after a failure, the lock released however it
 * ends.
 */
async function throughTarget<R>(
  output: string,
  options: OpenTargetOptions & AfterCommit,
  write: (staging: Store) => Promise<R>,
): Promise<R & { store: StatsStore; removedTempFiles: string[] }> {
  const { afterCommit, ...targetOptions } = options;
  const target = await openTarget(output, targetOptions);
  try {
    const result = await write(target.staging);
    await target.commit(MANIFEST_KEY);
    await afterCommit?.(target.store);
    return { ...result, store: target.store, removedTempFiles: target.removedTempFiles };
  } catch (err) {
    await target.abandon().catch(() => undefined);
    throw err;
  } finally {
    await target.lock.release();
  }
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
  return throughTarget(
    output,
    { input, overwrite, breakLock, open: openLocation, writer, optionNames, releaseOnSignal, afterCommit },
    async (staging) => {
      const source = await open();
      try {
        return { ...(await writeDataset(source, staging, write)), source };
      } finally {
        await source.close();
      }
    },
  );
}

/** Whether two locations name the same place (local paths resolved, URLs as given). */
function samePlace(a: string, b: string): boolean {
  const pa = localPath(a);
  const pb = localPath(b);
  if (pa !== undefined || pb !== undefined) return pa === pb;
  return a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
}

/**
 * Build the atlas of `inputs` (see `buildAtlas`) into a dataset at `output`, with the target's
 * checks and staging of {@link openTarget}, as {@link convertToDataset} writes one input: refused
 * before any input is opened when `output` is one of them or cannot be written; written under the
 * staging prefix and moved into place, manifest last; the staging removed after a failure.
 */
export async function buildAtlasAt(
  output: string,
  inputs: AtlasInputRef[],
  options: BuildAtlasAtOptions,
): Promise<BuildAtlasAtResult> {
  const { overwrite, breakLock, open, writer, optionNames, releaseOnSignal, afterCommit, ...build } = options;
  if (inputs.some((i) => samePlace(i.path, output))) {
    throw new TargetError(
      `${output} is one of the inputs: a conversion cannot replace what it reads; write to another location`,
      { tag: "TargetIsInput", object: output },
    );
  }
  return throughTarget(
    output,
    { overwrite, breakLock, open, writer, optionNames, releaseOnSignal, afterCommit },
    (staging) => buildAtlas(inputs, staging, build),
  );
}
