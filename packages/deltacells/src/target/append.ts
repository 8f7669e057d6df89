/**
 * An append to the dataset at a location, as `deltacells append` makes it (see `appendToDataset`):
 * under the dataset's writer lock, with the temporary files of killed writers removed first; a
 * folder's staged objects moved into place by renames and a bucket's by server-side copies, and a
 * folder's emptied staging directories removed after.
 */
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { StatsStore } from "@deltacells/storage";
import { localPath, openStore, withStats } from "@deltacells/storage/node";
import { APPEND_STAGING, type AppendOptions, type AppendResult, appendToDataset } from "../atlas/append.js";
import type { AtlasInputRef } from "../atlas/build.js";
import type { OpenTargetOptions } from "./target.js";
import { abortStaleUploads, acquireWriterLock, removeStaleTempFiles } from "./writer-lock.js";

/** Options of {@link appendToDatasetAt}: the append's, and how the dataset's lock is taken. */
export interface AppendToDatasetAtOptions
  extends AppendOptions,
    Pick<OpenTargetOptions, "breakLock" | "open" | "writer" | "optionNames" | "releaseOnSignal"> {
  /**
   * Runs once the cells are added, before the lock is released: what else is rewritten under the
   * same lock (the sporadik companion). A failure fails the append; the cells stay added.
   */
  afterAppend?: (store: StatsStore) => Promise<void>;
}

/** What {@link appendToDatasetAt} wrote, and where. */
export interface AppendToDatasetAtResult extends AppendResult {
  /** The dataset, counting every request of the append. */
  store: StatsStore;
  /**
   * What killed writers left in the dataset: temporary files (a folder) removed once the lock was
   * taken, and unfinished multipart uploads (S3) aborted once the append succeeded.
   */
  removedTempFiles: string[];
}

/**
 * Add the cells of `inputs` at the end of the dataset at `location` (a local path or URL), holding
 * its writer lock (refused while another writer holds it; `breakLock` deletes a stale one first).
 */
export async function appendToDatasetAt(
  location: string,
  inputs: AtlasInputRef[],
  options: AppendToDatasetAtOptions,
): Promise<AppendToDatasetAtResult> {
  const {
    breakLock,
    open = (l: string) => withStats(openStore(l)),
    writer = "deltacells",
    optionNames,
    releaseOnSignal,
    afterAppend,
    ...append
  } = options;
  const outPath = localPath(location);
  const store = open(location);
  const lock = await acquireWriterLock(store, location, {
    folder: outPath,
    breakLock,
    writer,
    breakLockName: optionNames?.breakLock,
    releaseOnSignal,
  });
  try {
    const removedTempFiles = outPath === undefined ? [] : await removeStaleTempFiles(outPath, lock.taken);
    const move =
      append.move ??
      (outPath !== undefined
        ? async (from: string, to: string) => {
            // A rename: atomic, and never read into memory.
            const target = resolve(outPath, to);
            await mkdir(dirname(target), { recursive: true });
            await rename(resolve(outPath, from), target);
          }
        : store.copy
          ? async (from: string, to: string) => {
              // Server-side: the bytes never come here.
              await store.copy!(from, to);
              await store.delete(from);
            }
          : undefined);
    const result = await appendToDataset(store, inputs, { ...append, ...(move ? { move } : {}) });
    if (outPath !== undefined) {
      // A folder keeps the empty directories a key-by-key delete leaves.
      for (const dir of (await readdir(outPath)).filter((x) => x.startsWith(APPEND_STAGING)))
        await rm(resolve(outPath, dir), { recursive: true, force: true });
    }
    // On S3 a killed append's half-written objects are unfinished multipart uploads, begun before
    // the lock: the append that completed the dataset no longer needs them.
    if (outPath === undefined) removedTempFiles.push(...(await abortStaleUploads(store, lock.taken)));
    await afterAppend?.(store);
    return { ...result, store, removedTempFiles };
  } finally {
    await lock.release();
  }
}
