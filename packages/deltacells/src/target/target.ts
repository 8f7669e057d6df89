/**
 * Where `convert` writes: a folder or bucket prefix that may already hold a dataset or a store.
 *
 * Both formats fix their object names (`tiles/tile_000000.dct`, `layouts/axis0/...`), so new
 * objects cannot be written beside the old ones under other names. The new dataset or store is
 * written whole under a staging prefix inside the target (`.deltacells-staging-<id>/`); only once
 * its own manifest or block is there is it moved into place: the old manifest and block are
 * deleted (from then on the target reads as unfinished, never as old metadata over new objects),
 * the staged objects are copied over, the new manifest or block last, and finally the old objects
 * the new one does not use and the staging prefix are deleted. A conversion that fails or is
 * killed before that leaves the old dataset exactly as it was; one killed while moving leaves the
 * complete new one under the staging prefix. See docs/deltacells-dataset.md.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdir, rename, rm, rmdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { StatsStore, Store } from "@deltacells/storage";
import { joinLocation } from "@deltacells/storage";
import { localPath, openStore, withStats } from "@deltacells/storage/node";
import { PrefixStore } from "../atlas/prefix-store.js";
import { DeltacellsError } from "../errors.js";
import {
  abortStaleUploads,
  acquireWriterLock,
  LOCK_KEY,
  removeStaleTempFiles,
  type WriterLock,
  type WriterLockOptions,
} from "./writer-lock.js";

/** The prefix of staging folders inside a target. */
export const STAGING_PREFIX = ".deltacells-staging-";

/**
 * Keys a deltacells dataset (with its companion, its rows in embedding order and its statistics)
 * or a sporadik store may hold, or what its writers leave when killed: a staging prefix, an atlas
 * build's records, an append's staging, a sporadik transposition's temporary folder (removed by
 * the next such write there).
 */
export const KNOWN_KEY =
  /^(manifest\.json|gene_order\.npy|var_names\.txt|var\.parquet|tiles\/.+|obs\/.+|sporadik\/.+|sporadik-rows\/.+|stats\/.+|zarr\.json|layouts\/.+|\.deltacells-staging-[0-9a-f]+\/.+|\.deltacells-atlas\/.+|\.deltacells-append-[0-9a-z]+\/.+|\.sporadik-spill-[^/]+\/.+)$/;

/** Staged objects moved into place at once (renames in a folder, copies in a bucket). */
const MOVES_AT_ONCE = 16;

/** The objects that say "this prefix is complete": deleted first when a target is replaced. */
const COMPLETION_KEYS = ["manifest.json", "zarr.json"];

/** The target of a conversion cannot be written (not empty, or the input itself). */
export class TargetError extends DeltacellsError {
  declare readonly _tag: "TargetNotEmpty" | "TargetIsInput" | "TargetNotAFolder";
  /** Up to five of the objects found there. */
  declare readonly found: string[];
  constructor(message: string, options: { tag: TargetError["_tag"]; object: string; found?: string[] }) {
    super(message, { ...options, found: options.found ?? [] });
    this.name = "TargetError";
  }
}

function describe(keys: string[]): string {
  const has = (k: string) => keys.includes(k);
  if (has("manifest.json")) return "a deltacells dataset";
  if (has("zarr.json")) return "a sporadik store";
  return "an unfinished dataset or store";
}

export interface ConversionTarget {
  /** The target, counting every request (the staging writes included) for `--stats`. */
  store: StatsStore;
  /** Where the writer writes: the staging prefix. */
  staging: Store;
  /** The staging prefix as a location (a local path or URL), for writers that open their own store. */
  stagingLocation: string;
  /** Whether the target held anything (then replaced, with `overwrite`). */
  replacing: string | undefined;
  /** Move the staged objects into place, `last` (the manifest or the root zarr.json) last; returns their bytes. */
  commit(last: string): Promise<number>;
  /** Delete what was staged (after a failure); the target stays as it was. */
  abandon(): Promise<void>;
  /** The target's writer lock, held from {@link openTarget} until `lock.release()` (call it in a `finally`). */
  lock: WriterLock;
  /**
   * What killed writers left in the target: temporary files (a folder) removed once the lock was
   * taken, and unfinished multipart uploads (S3) aborted by `commit`.
   */
  removedTempFiles: string[];
}

/** Options of {@link openTarget}. */
export interface OpenTargetOptions {
  /** The location the conversion reads: refused as its own target (`TargetIsInput`). */
  input?: string | undefined;
  /** Replace a dataset or store already there (staged, moved into place once complete). Default false. */
  overwrite?: boolean | undefined;
  /** Delete a writer lock left by a killed conversion first. Default false. */
  breakLock?: boolean | undefined;
  /** Opens a location as a counting store. Default: `openStore` of @deltacells/storage/node, with stats. */
  open?: ((location: string) => StatsStore) | undefined;
  /** Who writes, as the lock records it and the line printed on an interrupted run begins. Default "deltacells". */
  writer?: string | undefined;
  /** How messages name the options (a command line names its flags). Default `overwrite: true`, `breakLock: true`. */
  optionNames?: { overwrite?: string; breakLock?: string } | undefined;
  /** Also release the lock on SIGINT and SIGTERM, then end the process (see {@link WriterLockOptions}). Default false. */
  releaseOnSignal?: boolean | undefined;
}

/**
 * Check `output` before anything is read or written: refused when it is `input` itself, or holds
 * anything and `overwrite` is false, or holds objects that are neither a dataset nor a store
 * (`overwrite` never deletes what it does not recognise), or another conversion holds its writer
 * lock (see {@link acquireWriterLock}; `breakLock` deletes a stale one first). The lock is taken
 * before the target is listed, and kept (release it when done) unless this refuses.
 */
export async function openTarget(output: string, options: OpenTargetOptions = {}): Promise<ConversionTarget> {
  const {
    input,
    overwrite = false,
    breakLock = false,
    open = (location: string) => withStats(openStore(location)),
    writer = "deltacells",
  } = options;
  const names = { overwrite: "overwrite: true", breakLock: "breakLock: true", ...options.optionNames };
  const outPath = localPath(output);
  if (
    input !== undefined &&
    ((outPath !== undefined && outPath === localPath(input)) ||
      input.replace(/\/+$/, "") === output.replace(/\/+$/, ""))
  ) {
    throw new TargetError(
      `${output} is the input itself: a conversion cannot replace what it reads; write to another location`,
      { tag: "TargetIsInput", object: output },
    );
  }
  if (outPath !== undefined) {
    const s = await stat(outPath).catch(() => undefined);
    if (s && !s.isDirectory())
      throw new TargetError(
        `${output} is a file, not a folder: a dataset is a folder of objects; choose a new or empty folder`,
        { tag: "TargetNotAFolder", object: output },
      );
  }
  const store = open(output);
  const lock = await acquireWriterLock(store, output, {
    folder: outPath,
    breakLock,
    writer,
    breakLockName: names.breakLock,
    releaseOnSignal: options.releaseOnSignal,
  });
  try {
    const removedTempFiles = outPath === undefined ? [] : await removeStaleTempFiles(outPath, lock.taken);
    return await checkedTarget(store, output, outPath, overwrite, lock, removedTempFiles, {
      writer,
      overwrite: names.overwrite,
    });
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/** {@link openTarget} once the lock is held. */
async function checkedTarget(
  store: StatsStore,
  output: string,
  outPath: string | undefined,
  overwrite: boolean,
  lock: WriterLock,
  removedTempFiles: string[],
  words: { writer: string; overwrite: string },
): Promise<ConversionTarget> {
  const existing = (await store.list()).filter((k) => k !== LOCK_KEY);
  if (existing.length > 0) {
    const unknown = existing.filter((k) => !KNOWN_KEY.test(k));
    if (unknown.length > 0) {
      throw new TargetError(
        `${store.url} holds ${existing.length} object${existing.length === 1 ? "" : "s"}, ${unknown.length} of which belong to no deltacells dataset or sporadik store (${unknown.slice(0, 3).join(", ")}${unknown.length > 3 ? ", ..." : ""}), which ${words.overwrite} never deletes. Nothing was written: choose a new or empty folder, or remove them first`,
        { tag: "TargetNotEmpty", object: store.url, found: unknown.slice(0, 5) },
      );
    }
    if (!overwrite) {
      throw new TargetError(
        `${store.url} already holds ${describe(existing)} (${existing.length} object${existing.length === 1 ? "" : "s"}). Nothing was written: choose another OUTPUT, or pass ${words.overwrite} to replace it (the old one stays readable until the new one is complete)`,
        { tag: "TargetNotEmpty", object: store.url, found: existing.slice(0, 5) },
      );
    }
  }
  const prefix = `${STAGING_PREFIX}${randomBytes(6).toString("hex")}`;
  const staging = new PrefixStore(store, prefix);
  const removeStaging = async () => {
    for (const key of await store.list(`${prefix}/`)) await store.delete(key);
    // A folder keeps the empty directories a key-by-key delete leaves.
    if (outPath !== undefined) await rm(resolve(outPath, prefix), { recursive: true, force: true });
  };
  /** Set once the staged objects start moving into place: from then on the staging prefix may hold the only complete copy. */
  let moving = false;
  /**
   * A process that ends while the conversion runs (Ctrl-C or SIGTERM: the lock's and the sporadik
   * spill's handlers end it with `process.exit`) says in one line what it left, and in a folder
   * removes the unfinished staging, which could be as large as the new data. Synchronously: `exit`
   * allows nothing else. Once moving, the staging is kept (it is the new data) and the next
   * conversion into the target removes it.
   */
  const onExit = () => {
    if (!moving && outPath !== undefined) rmSync(resolve(outPath, prefix), { recursive: true, force: true });
    const left = moving
      ? `stopped while moving the new data into ${output}: the complete new one is under ${prefix}/; run the same conversion again`
      : existing.length > 0
        ? `stopped before the new data was complete: ${output} is as it was`
        : `stopped before the new data was complete: what ${output} holds is unfinished, and readers refuse it`;
    process.stderr.write(`${words.writer}: ${left}\n`);
  };
  process.once("exit", onExit);
  return {
    store,
    staging,
    stagingLocation: outPath !== undefined ? resolve(outPath, prefix) : joinLocation(output, prefix),
    replacing: existing.length ? describe(existing) : undefined,
    async commit(last: string) {
      const staged = await staging.list();
      if (!staged.includes(last)) {
        throw new DeltacellsError(`internal: ${last} was not staged under ${staging.url}`, {
          tag: "ConcurrentChange",
          object: `${staging.url}/${last}`,
        });
      }
      moving = true;
      for (const key of COMPLETION_KEYS) if (existing.includes(key)) await store.delete(key);
      let bytes = 0;
      const move = async (key: string) => {
        if (outPath !== undefined) {
          // A folder moves each object by a rename: atomic, and never read into memory (a
          // byte-addressable array can be gigabytes).
          const to = resolve(outPath, key);
          await mkdir(dirname(to), { recursive: true });
          const from = resolve(outPath, prefix, key);
          bytes += (await stat(from)).size;
          await rename(from, to);
          return;
        }
        if (store.copy !== undefined) {
          // A bucket copies server-side (CopyObject; in parts above 5 GiB): the bytes never come here.
          bytes += await store.copy(`${prefix}/${key}`, key);
          return;
        }
        const value = await staging.get(key);
        if (value === undefined) {
          throw new DeltacellsError(`internal: staged ${key} vanished from ${staging.url}`, {
            tag: "ConcurrentChange",
            object: `${staging.url}/${key}`,
          });
        }
        await store.set(key, value);
        bytes += value.length;
      };
      // Several at once (a bucket answers each in a round trip), the completion object alone, last.
      const others = staged.filter((k) => k !== last);
      let next = 0;
      let failed = false;
      const worker = async () => {
        while (!failed && next < others.length) {
          await move(others[next++] as string).catch((error: unknown) => {
            failed = true;
            throw error;
          });
        }
      };
      // Every move settles before a failure is reported: none still runs behind the caller's back.
      const results = await Promise.allSettled(
        Array.from({ length: Math.min(MOVES_AT_ONCE, others.length) }, worker),
      );
      const failure = results.find((r) => r.status === "rejected");
      if (failure !== undefined) throw failure.reason;
      await move(last);
      const kept = new Set(staged);
      for (const key of existing) if (!kept.has(key)) await store.delete(key);
      await removeStaging();
      if (outPath !== undefined) {
        // A killed run's staging folder may still hold a half-written temporary file, which no
        // listing shows: such folders are ours by name, so they go whole.
        const stale = new Set(
          existing.filter((k) => k.startsWith(STAGING_PREFIX)).map((k) => k.split("/")[0]!),
        );
        for (const dir of stale) await rm(resolve(outPath, dir), { recursive: true, force: true });
        await removeEmptyFolders(outPath, existing);
      } else {
        // On S3 the same half-written objects are unfinished multipart uploads: begun before the
        // lock, by a writer that was killed (a conversion's staging, an atlas task's tile), they
        // belong to what this conversion just replaced.
        removedTempFiles.push(...(await abortStaleUploads(store, lock.taken, prefix)));
      }
      return bytes;
    },
    abandon: removeStaging,
    // The conversion's own release, when it ended however it ended; the signal handlers release
    // the lock itself, so that an interrupted run still says what it left.
    lock: {
      ...lock,
      release: async () => {
        process.off("exit", onExit);
        await lock.release();
      },
    },
    removedTempFiles,
  };
}

/** The folders of deleted objects that are empty now (`tiles/`, `layouts/axis1/...`), deepest first. */
async function removeEmptyFolders(root: string, deleted: string[]): Promise<void> {
  const dirs = new Set<string>();
  for (const key of deleted) {
    const parts = key.split("/");
    for (let i = parts.length - 1; i > 0; i--) dirs.add(parts.slice(0, i).join("/"));
  }
  for (const dir of [...dirs].sort((a, b) => b.length - a.length)) {
    await rmdir(resolve(root, dir)).catch(() => undefined); // not empty (still used) or gone
  }
}
