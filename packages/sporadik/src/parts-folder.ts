/**
 * Objects written to a folder piece by piece (Node only), so a byte-addressable array (one raw
 * object, as large as the array) never has to be held whole. Each object is written to a temporary
 * name beside its final one and renamed into place, as the folder store writes objects; it is
 * synced before the rename, or, with `deferSync`, all together at {@link FolderParts.flush}.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import type { PartsWritableStore } from "./array-stream.js";
import { Limiter } from "./chunks.js";
import { IncompleteError, SporadikError } from "./errors.js";
import type { WritableStore } from "./store.js";

/** Options of {@link withFileParts}. */
export interface FilePartsOptions {
  /**
   * Write every object (`set` too) straight to its file, unsynced, and make them all durable at
   * once in {@link FolderParts.flush} (each file, then each folder, synced). A writer that lands
   * its completion marker only after `flush` (the streaming writer's block) loses nothing to a
   * crash, and saves a sync per chunk on the way. `set`s then bypass `store` (they are heard by
   * `onWritten`). Default false: every object synced before it is renamed into place.
   */
  deferSync?: boolean;
}

/** A folder store with objects written in parts, and a flush when syncs are deferred. */
export interface FolderParts extends PartsWritableStore {
  /** Make every object written so far durable (files, then their folders). */
  flush(): Promise<void>;
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
 * `store` (a folder store rooted at `root`) with `setParts`: every other call goes to `store`
 * unchanged (but `set` with `deferSync`, see {@link FilePartsOptions}). `onWritten` hears the bytes
 * of each object written here (which `store`'s own counters, if any, never see).
 */
export function withFileParts(
  store: WritableStore,
  root: string,
  onWritten?: (key: string, bytes: number) => void,
  options: FilePartsOptions = {},
): FolderParts {
  const base = resolve(root);
  const deferred = options.deferSync === true;
  const pathOf = (key: string): string => {
    const path = resolve(join(base, key));
    if (!path.startsWith(base + sep)) {
      throw new SporadikError(`key ${key} resolves outside the folder ${base}; keys stay inside the store.`, {
        tag: "ArgumentError",
        object: key,
      });
    }
    return path;
  };
  /** Folders known to exist (a `mkdir` per chunk, refused with EEXIST, costs more than the write). */
  const made = new Set<string>();
  const folder = async (dir: string) => {
    if (made.has(dir)) return;
    await mkdir(dir, { recursive: true });
    made.add(dir);
  };
  /** Files written unsynced, and their folders. */
  let unsynced: string[] = [];
  const folders = new Set<string>();
  const limiter = new Limiter(SYNCS_AT_ONCE);
  const syncPath = (path: string) =>
    limiter.run(async () => {
      const handle = await open(path, "r");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    });
  const flush = async () => {
    const files = unsynced;
    unsynced = [];
    await Promise.all(files.map(syncPath));
    const dirs = [...folders];
    folders.clear();
    // The renames are entries of the folders: synced after the files, so no name points to nothing.
    await Promise.all(dirs.map(syncPath));
  };
  /** Write `parts` to a temporary file and rename it to `key`'s path; returns the bytes written. */
  const write = async (key: string, parts: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) => {
    const path = pathOf(key);
    const temporary = `${path}.sporadik-part-${randomBytes(6).toString("hex")}`;
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
  const land = async (key: string, done: { path: string; temporary: string; written: number }) => {
    try {
      await rename(done.temporary, done.path);
    } catch (error) {
      await rm(done.temporary, { force: true });
      throw failed(key, done.path, error);
    }
    if (deferred) {
      unsynced.push(done.path);
      folders.add(dirname(done.path));
      if (unsynced.length >= MAX_UNSYNCED) await flush();
    }
    onWritten?.(key, done.written);
  };
  return {
    get: (key, opts) => store.get(key, opts),
    ...(store.getRange ? { getRange: store.getRange.bind(store) } : {}),
    set: deferred
      ? async (key, value) => land(key, await write(key, [value]))
      : (key, value) => store.set(key, value),
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
