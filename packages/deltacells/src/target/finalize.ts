/**
 * `finalizeAtlas` of the atlas at a location, as `deltacells finalize` runs it: under the writer
 * lock, the output checked as an atlas step's (see {@link openAtlasTarget}), and a folder's records
 * of the build removed whole once the manifest is written.
 */
import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import type { StatsStore } from "@deltacells/storage";
import { type FinalizeOptions, type FinalizeResult, finalizeAtlas } from "../atlas/finalize.js";
import { ATLAS_PREFIX } from "../atlas/layout.js";
import { type OpenAtlasTargetOptions, openAtlasTarget } from "./atlas-target.js";
import { abortStaleUploads } from "./writer-lock.js";

/** Options of {@link finalizeAtlasAt}: finalize's, and how the output's lock is taken. */
export interface FinalizeAtlasAtOptions
  extends FinalizeOptions,
    Pick<OpenAtlasTargetOptions, "breakLock" | "open" | "optionNames" | "releaseOnSignal"> {
  /** The step, as the lock records it. Default "deltacells". */
  writer?: string | undefined;
  /**
   * Runs once the dataset is complete, before the lock is released, whether this run wrote its
   * manifest or found it written: what else is written under the same lock (the sporadik
   * companion, its statistics and rows), so that a finalize cut after the manifest completes them
   * when run again. A failure fails the finalize; the dataset stays complete.
   */
  afterFinalize?: ((store: StatsStore, done: FinalizeResult) => Promise<void>) | undefined;
}

/** What {@link finalizeAtlasAt} wrote, and where. */
export interface FinalizeAtlasAtResult extends FinalizeResult {
  /** The output, counting every request of the step. */
  store: StatsStore;
  /**
   * What killed writers left in the output, removed once the lock was taken: temporary files (a
   * folder), and unfinished multipart uploads aborted once the atlas is complete (S3).
   */
  removedTempFiles: string[];
}

/**
 * Finalize the atlas built at `output` (see `finalizeAtlas`), holding its writer lock. Run again on
 * a finalized dataset, it changes nothing (`finalized: false`).
 */
export async function finalizeAtlasAt(
  output: string,
  options: FinalizeAtlasAtOptions = {},
): Promise<FinalizeAtlasAtResult> {
  const {
    breakLock,
    open,
    optionNames,
    releaseOnSignal,
    writer = "deltacells",
    afterFinalize,
    ...finalize
  } = options;
  const target = await openAtlasTarget(output, {
    lock: true,
    allowFinalized: true,
    breakLock,
    open,
    optionNames,
    releaseOnSignal,
    writer,
  });
  try {
    const done = await finalizeAtlas(target.store, finalize);
    // A folder keeps the empty directories a key-by-key delete leaves.
    if (target.outPath !== undefined)
      await rm(resolve(target.outPath, ATLAS_PREFIX), { recursive: true, force: true });
    // Every task is done: an upload still unfinished under the output is a killed task's (or a
    // straggling duplicate's, whose object is there already), never one the atlas waits for.
    const aborted = done.finalized ? await abortStaleUploads(target.store, target.lock!.taken) : [];
    await afterFinalize?.(target.store, done);
    return { ...done, store: target.store, removedTempFiles: [...target.removedTempFiles, ...aborted] };
  } finally {
    await target.lock?.release();
  }
}
