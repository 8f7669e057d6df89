/**
 * Objects written to a folder piece by piece (Node only), so a byte-addressable array (one raw
 * object, as large as the array) never has to be held whole. Each object is written to a temporary
 * name beside its final one, synced and renamed into place, as the folder store writes objects;
 * or, with `deferSync`, written under its own name and made durable at {@link FolderParts.flush}:
 * on Linux 5.8 and later, with 64 files or more to sync, by one sync of the whole file system (a
 * large object is synced on its own in the background as soon as it is written), elsewhere one
 * file at a time, in the background as they pile up.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile as writeFileCallback } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { release } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { FileWritableStore, PartsWritableStore } from "./array-stream.js";
import { Limiter } from "./chunks.js";
import { IncompleteError, isSporadikError, SporadikError } from "./errors.js";
import type { WritableStore } from "./store.js";

/** Options of {@link withFileParts}. */
export interface FilePartsOptions {
  /**
   * Write every object (`set` too) straight under its own name, unsynced, and make them all
   * durable in {@link FolderParts.flush}: with 64 files or more to sync, by one sync of the file
   * system where it reports the write-back errors of every file (Linux 5.8 and later, `syncfs`
   * through `sync -f`), then a check that every file is still in its folder; elsewhere, or if that
   * sync fails, each file still unsynced, then each folder (synced in the background as they pile
   * up; a background sync that failed fails the flush). A file of at least 1 MiB is synced on its
   * own in the background as soon as it is written either way. Only for a
   * writer that says "complete" last and only after `flush` (the streaming writer's block): a
   * reader refuses the store while an object may be half written, a crash loses nothing that was
   * declared, and the write saves a sync, a rename and a file handle per chunk. `set`s then bypass
   * `store` (wrap the result to count them). Default false: every object synced under a temporary
   * name and renamed into place.
   */
  deferSync?: boolean;
  /**
   * With `deferSync`, make the files durable by one sync of their file system where it reports
   * every file's write-back errors (Linux 5.8 and later). It also writes back other programs'
   * unsaved data on that file system; false syncs this writer's files one by one instead (about
   * three times the CPU for thousands of small files). Default true.
   */
  syncFileSystem?: boolean;
}

/** A folder store with objects written in parts, and a flush when syncs are deferred. */
export interface FolderParts extends PartsWritableStore {
  /** Make every object written so far durable (files, then their folders). */
  flush(): Promise<void>;
  /**
   * With `deferSync` only: `key`'s file written by `write` itself (a compression worker), then
   * made durable at {@link flush} like a `set` (see {@link FileWritableStore}).
   */
  setFile?: FileWritableStore["setFile"];
}

/** The refusal of a file write that the system failed (disk full, permissions ...). */
function failed(key: string, path: string, cause: unknown): SporadikError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new SporadikError(
    `writing ${key} to ${path} failed: ${why}. Free space or fix the folder's permissions, then write the store again.`,
    {
      object: key,
      cause,
    },
  );
}

/** Files synced at once by a flush; and how many unsynced files a deferred writer lets pile up. */
const SYNCS_AT_ONCE = 32;
const MAX_UNSYNCED = 8192;
/**
 * With deferred syncs and no file-system sync, files are handed to background syncs in batches of
 * this many (a failure there fails the next {@link FolderParts.flush}), at most BACKGROUND_SYNCS
 * at once. A sync holds one of libuv's 4 threads while the disk flushes (milliseconds on the
 * machine measured): with 8 at once the background keeps up with most chunk files, 2 left four
 * fifths of them to the final pass (bench/RESULTS.md, "sporadik writes").
 */
const BACKGROUND_BATCH = 16;
const BACKGROUND_SYNCS = 8;
/**
 * Files at least this large are synced on their own in the background as soon as they are
 * written, even when the flush syncs the file system: writing back their bytes is what their sync
 * costs, and it overlaps the rest of the write instead of landing on the flush.
 */
const SYNC_ON_ITS_OWN = 1 << 20;
/**
 * Files left for a flush from which one sync of the file system is cheaper than a sync per file.
 * Below, a flush syncs them one by one: a file-system sync waits for a journal commit and for
 * every other unsaved byte on the file system (measured: 0.1 s for the 20 files of a
 * byte-addressable store, whose large arrays were synced in the background, against 0.003 s).
 */
const SYSTEM_SYNC_FROM = 64;
/**
 * With a file-system sync at the flush, one is also started in the background each time this many
 * files were written since the last: the disk writes their bytes back while the writer computes,
 * instead of all of them while the flush waits. It is a head start only: the flush still syncs
 * the file system (what came after), and if a background one failed, every file one by one.
 */
export const EARLY_SYNC_EVERY = 1024;

/**
 * Whether one `syncfs` reports the write-back errors of every file of its file system: Linux 5.8
 * and later (before, it returned success whatever failed, and only a sync per file would say).
 */
export function syncfsReportsErrors(): boolean {
  if (process.platform !== "linux") return false;
  const [major = 0, minor = 0] = (/^(\d+)\.(\d+)/.exec(release()) ?? []).slice(1).map(Number);
  return major > 5 || (major === 5 && minor >= 8);
}

/**
 * How deferred files are made durable; tests replace these to see which is used. `fileSystems`
 * syncs the whole file system of each folder given with `sync -f` (coreutils, busybox), which
 * calls `syncfs`: one journal commit for every file instead of one per file (for 2,500 chunk
 * files a third of the CPU: bench/RESULTS.md, "sporadik writes"). It says whether that sync
 * succeeded; on any failure (no such command, an error anywhere on the file system) the files
 * are synced one by one instead, which says precisely which one failed, if any of ours did.
 */
export const durability = {
  fileSystems: (folders: readonly string[]): Promise<boolean> =>
    new Promise((resolve) => execFile("sync", ["-f", ...folders], (error) => resolve(error === null))),
  file: async (path: string): Promise<void> => {
    const handle = await open(path, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

/** What {@link withFileParts} passes through from the folder store as it is. */
export type PassedThrough<S> = Pick<S, Extract<keyof S, "url" | "list" | "getRange" | "delete">>;

/**
 * `store` (a folder store rooted at `root`) with `setParts`: every other call goes to `store`
 * unchanged (but `set` with `deferSync`, see {@link FilePartsOptions}), and its `url`, `list` and
 * `getRange`, when it has them, are passed through, so the result wraps like the store itself.
 */
export function withFileParts<S extends WritableStore>(
  store: S,
  root: string,
  options: FilePartsOptions = {},
): FolderParts & PassedThrough<S> {
  const base = resolve(root);
  const deferred = options.deferSync === true;
  // The flush syncs the file system: small files are left to it, not synced one by one.
  const wholeSystem = deferred && options.syncFileSystem !== false && syncfsReportsErrors();
  const pathOf = (key: string): string => {
    const path = resolve(join(base, key));
    if (!path.startsWith(base + sep)) {
      throw new SporadikError(`key ${key} resolves outside the folder ${base}; keys stay inside the store.`, {
        tag: "InvalidArgument",
        object: key,
      });
    }
    return path;
  };
  /**
   * Folders made or being made (a `mkdir` per chunk, refused with EEXIST, costs more than the
   * write): the promise is kept, so the chunks in flight when a folder is first written wait for
   * one `mkdir` instead of each making it. A failed one is forgotten, so a later write tries again.
   */
  const made = new Map<string, Promise<unknown>>();
  const folder = (dir: string): Promise<unknown> => {
    let making = made.get(dir);
    if (making === undefined) {
      making = mkdir(dir, { recursive: true });
      made.set(dir, making);
      making.catch(() => made.delete(dir));
    }
    return making;
  };
  /**
   * Files written unsynced: waiting for a batch, queued for the background syncs (at most
   * BACKGROUND_SYNCS at once), being synced; and their folders. The first background failure is kept for {@link flush}.
   */
  let unsynced: string[] = [];
  let queued: string[] = [];
  let queueHead = 0;
  const syncing = new Set<Promise<void>>();
  let failure: SporadikError | undefined;
  const folders = new Set<string>();
  const limiter = new Limiter(SYNCS_AT_ONCE);
  const syncFailed = (path: string, cause: unknown) =>
    new SporadikError(
      `syncing ${path} to disk failed: ${cause instanceof Error ? cause.message : String(cause)}. The store gets no block (readers refuse it); check the disk, then write the store again.`,
      { object: path, cause },
    );
  const syncFile = async (path: string) => {
    try {
      await durability.file(path);
    } catch (cause) {
      throw syncFailed(path, cause);
    }
  };
  const syncPath = (path: string) => limiter.run(() => syncFile(path));
  /** Start background syncs from the queue while fewer than BACKGROUND_SYNCS run. */
  const pump = () => {
    while (syncing.size < BACKGROUND_SYNCS && queueHead < queued.length) {
      const path = queued[queueHead++] as string;
      const running: Promise<void> = syncFile(path)
        .catch((error: SporadikError) => {
          failure ??= error;
        })
        .finally(() => {
          syncing.delete(running);
          pump();
        });
      syncing.add(running);
    }
    if (queueHead === queued.length) {
      queued = [];
      queueHead = 0;
    }
  };
  /**
   * One sync of the file system of each of `dirs` (true when it succeeded). One folder per file
   * system: each `syncfs` flushes the device's cache even with nothing left to write (measured:
   * 5 ms each, 0.1 s for a store's 20 folders). A folder that cannot be looked at leaves it to the
   * syncs file by file, which say what failed.
   */
  const syncFileSystems = async (dirs: readonly string[]): Promise<boolean> => {
    const devices = new Map<number, string>();
    try {
      for (const [dev, dir] of await Promise.all(
        dirs.map(async (dir) => [(await stat(dir)).dev, dir] as const),
      ))
        if (!devices.has(dev)) devices.set(dev, dir);
    } catch {
      return false;
    }
    return durability.fileSystems([...devices.values()]);
  };
  /**
   * The background file-system sync running (see EARLY_SYNC_EVERY), files landed since the last
   * one started, and whether one failed since the last flush: a `syncfs` reports a write-back
   * error once, to the first sync that sees it, so the flush after a failed one syncs every file.
   */
  let early: Promise<void> | undefined;
  let sinceEarly = 0;
  let earlyFailed = false;
  const syncEarly = () => {
    sinceEarly = 0;
    early = syncFileSystems([...folders])
      .then((ok) => {
        earlyFailed ||= !ok;
      })
      .finally(() => {
        early = undefined;
      });
  };
  /**
   * One sync of the file system of `dirs` for `files` (true when it succeeded), then a check that
   * each file is still in its folder: a file removed before it was synced fails the flush, as its
   * own sync would have.
   */
  const syncSystem = async (files: readonly string[], dirs: readonly string[]): Promise<boolean> => {
    if (!(await syncFileSystems(dirs))) return false;
    // Every folder listed at once (not one after the other as the files reach it); the files are
    // then checked in order, so the first one missing is the one named.
    const listed = new Map<string, Promise<Set<string>>>();
    for (const dir of new Set(files.map(dirname))) {
      const names = readdir(dir).then((found) => new Set(found));
      // Awaited below unless a file before fails the flush first.
      names.catch(() => undefined);
      listed.set(dir, names);
    }
    for (const path of files) {
      const names = await (listed.get(dirname(path)) as Promise<Set<string>>).catch((cause: unknown) => {
        throw syncFailed(path, cause);
      });
      if (!names.has(basename(path))) {
        throw syncFailed(path, new Error(`${path} is no longer there`));
      }
    }
    return true;
  };
  const flush = async () => {
    // What the background has not started is synced now, many at once; what it runs is awaited.
    const files = [...queued.slice(queueHead), ...unsynced];
    queued = [];
    queueHead = 0;
    unsynced = [];
    const dirs = [...folders];
    folders.clear();
    await early;
    const headStart = !earlyFailed;
    earlyFailed = false;
    sinceEarly = 0;
    const system =
      wholeSystem && headStart && files.length >= SYSTEM_SYNC_FROM && (await syncSystem(files, dirs));
    if (!system) await Promise.all(files.map(syncPath));
    while (syncing.size > 0) await Promise.all(syncing);
    if (failure !== undefined) throw failure;
    // The renames are entries of the folders: synced after the files, so no name points to nothing.
    if (!system) await Promise.all(dirs.map(syncPath));
  };
  /**
   * Write `parts` to `key`'s file: synced under a temporary name and renamed into place; with
   * deferred syncs, straight under its own name (the store has no block while it is written, so
   * a reader refuses it whole; a rename per chunk would only cost time).
   */
  const write = async (key: string, parts: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) => {
    const path = pathOf(key);
    const temporary = deferred ? path : `${path}.sporadik-part-${randomBytes(6).toString("hex")}`;
    await folder(dirname(path));
    let written = 0;
    try {
      const handle = await open(temporary, "w");
      try {
        for await (const part of parts) {
          await handle.write(part);
          written += part.byteLength;
        }
        if (!deferred) await handle.sync();
      } finally {
        await handle.close();
      }
      return { path, temporary, written };
    } catch (error) {
      await rm(temporary, { force: true });
      throw failed(key, path, error);
    }
  };
  /** An object whole in memory, written with deferred syncs: one `writeFile`, no file handle. */
  const writeWhole = async (key: string, value: Uint8Array) => {
    const path = pathOf(key);
    await folder(dirname(path));
    await new Promise<void>((resolve, reject) =>
      writeFileCallback(path, value, (error) => (error ? reject(failed(key, path, error)) : resolve())),
    );
    return { path, temporary: path, written: value.byteLength };
  };
  const land = async (key: string, done: { path: string; temporary: string; written: number }) => {
    if (done.temporary !== done.path) {
      try {
        await rename(done.temporary, done.path);
      } catch (error) {
        await rm(done.temporary, { force: true });
        throw failed(key, done.path, error);
      }
    }
    if (deferred) {
      folders.add(dirname(done.path));
      if (wholeSystem && done.written >= SYNC_ON_ITS_OWN) {
        queued.push(done.path);
        pump();
      } else unsynced.push(done.path);
      if (wholeSystem && ++sinceEarly >= EARLY_SYNC_EVERY && early === undefined) syncEarly();
      if (!wholeSystem && unsynced.length >= BACKGROUND_BATCH) {
        // Synced in the background from now on, so the flush before the block finds them clean.
        queued.push(...unsynced);
        unsynced = [];
        pump();
      }
      if (queued.length - queueHead + unsynced.length >= MAX_UNSYNCED) await flush();
    }
  };
  const { url, list } = store as { url?: unknown; list?: (...args: unknown[]) => unknown };
  const passed = {
    ...(url !== undefined ? { url } : {}),
    ...(typeof list === "function" ? { list: list.bind(store) } : {}),
  } as PassedThrough<S>;
  return {
    ...passed,
    get: (key, opts) => store.get(key, opts),
    ...(store.getRange ? { getRange: store.getRange.bind(store) } : {}),
    set: deferred
      ? async (key, value) => land(key, await writeWhole(key, value))
      : (key, value) => store.set(key, value),
    ...(deferred
      ? {
          async setFile(key: string, write: (path: string) => Promise<number>) {
            const path = pathOf(key);
            await folder(dirname(path));
            let written: number;
            try {
              written = await write(path);
            } catch (error) {
              // What was written is dropped where it can be (the store has no block either way).
              await rm(path, { force: true }).catch(() => undefined);
              // Only what the file system said is a failed write; an error of ours (a compression
              // worker that failed, say) already names its cause, and no "free space" hint fits it.
              if (isSporadikError(error)) throw error;
              throw failed(key, path, error);
            }
            await land(key, { path, temporary: path, written });
          },
        }
      : {}),
    ...(store.delete ? { delete: store.delete.bind(store) } : {}),
    async setParts(key, byteLength, parts) {
      const done = await write(key, parts);
      if (done.written !== byteLength) {
        await rm(done.temporary, { force: true });
        throw new IncompleteError(
          `${key}: ${done.written} bytes were written, but the object is ${byteLength}.`,
          {
            object: key,
            expected: byteLength,
            found: done.written,
          },
        );
      }
      await land(key, done);
    },
    flush,
  };
}
