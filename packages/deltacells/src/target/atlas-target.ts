/**
 * The output of an atlas built in steps (`plan`, its tasks, `finalize`): the steps write straight
 * into it, since many machines share it (no staging). It may hold an unfinished build (scan and
 * task records, tiles, obs shards, gene files) and nothing else: a complete dataset there is
 * refused (appended to with `append`, replaced with `convert --overwrite`), and so are objects that
 * belong to no dataset. Steps that must run alone (the merge, finalize) take the writer lock; the
 * steps many machines run at once (scans, tasks) take none: each writes objects of its own, the
 * same bytes however often it runs.
 */
import type { StatsStore } from "@deltacells/storage";
import { localPath, openStore, withStats } from "@deltacells/storage/node";
import { KNOWN_KEY, type OpenTargetOptions, TargetError } from "./target.js";
import { acquireWriterLock, LOCK_KEY, removeStaleTempFiles, type WriterLock } from "./writer-lock.js";

/** An atlas step's output, opened by {@link openAtlasTarget}. */
export interface AtlasTarget {
  store: StatsStore;
  /** The output as a local path, when it is one. */
  outPath: string | undefined;
  /** Held by the steps that must run alone; release it in a `finally`. */
  lock: WriterLock | undefined;
  /** Temporary files of killed writers removed (a folder, under the lock). */
  removedTempFiles: string[];
}

/** Options of {@link openAtlasTarget}. */
export interface OpenAtlasTargetOptions
  extends Pick<OpenTargetOptions, "breakLock" | "open" | "optionNames" | "releaseOnSignal"> {
  /** Take the writer lock first (the steps that must run alone). Default false. */
  lock?: boolean | undefined;
  /** The step, as the lock records it. */
  writer: string;
  /** Accept a complete dataset there (finalize, run again). Default false. */
  allowFinalized?: boolean | undefined;
  /**
   * What the refusal of a complete dataset there suggests instead. Default: appending to it
   * (`appendToDataset`), building the atlas elsewhere, or replacing it (`convertToDataset` with
   * `overwrite`).
   */
  finalizedHint?: string | undefined;
}

/**
 * Open `output` for an atlas step: refused when it holds objects of no dataset, or (unless
 * `allowFinalized`) a complete dataset. With `lock`, the writer lock is taken first (`writer`
 * names the step in it).
 */
export async function openAtlasTarget(output: string, opts: OpenAtlasTargetOptions): Promise<AtlasTarget> {
  const outPath = localPath(output);
  const store = (opts.open ?? ((location: string) => withStats(openStore(location))))(output);
  const lock = opts.lock
    ? await acquireWriterLock(store, output, {
        folder: outPath,
        breakLock: opts.breakLock,
        writer: opts.writer,
        breakLockName: opts.optionNames?.breakLock,
        releaseOnSignal: opts.releaseOnSignal,
      })
    : undefined;
  try {
    const keys = (await store.list()).filter((k) => k !== LOCK_KEY);
    const unknown = keys.filter((k) => !KNOWN_KEY.test(k));
    if (unknown.length > 0) {
      throw new TargetError(
        `${store.url} holds ${unknown.length} ${unknown.length === 1 ? "object that belongs" : "objects that belong"} to no deltacells dataset (${unknown.slice(0, 3).join(", ")}${unknown.length > 3 ? ", ..." : ""}); an atlas is built into a new or empty folder or prefix. Nothing was written`,
        { tag: "TargetNotEmpty", object: store.url, found: unknown.slice(0, 5) },
      );
    }
    if (!opts.allowFinalized && keys.includes("manifest.json")) {
      throw new TargetError(
        `${store.url} already holds a complete deltacells dataset. Nothing was written: ${opts.finalizedHint ?? "append to it (appendToDataset), build the atlas elsewhere, or replace it (convertToDataset with overwrite: true)"}`,
        { tag: "TargetNotEmpty", object: store.url, found: ["manifest.json"] },
      );
    }
    const removedTempFiles =
      lock && outPath !== undefined ? await removeStaleTempFiles(outPath, lock.taken) : [];
    return { store, outPath, lock, removedTempFiles };
  } catch (err) {
    await lock?.release();
    throw err;
  }
}
