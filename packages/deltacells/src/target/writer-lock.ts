/**
 * The writer lock of a conversion target: one object, `.deltacells-lock`, created with
 * create-only semantics (a hard link in a folder, `If-None-Match: *` on S3) before anything is
 * written, and deleted when the conversion ends, whether it succeeded, failed or was interrupted
 * (Ctrl-C, SIGTERM). A second conversion into the same place finds it and is refused, so two
 * writers never mix their objects. A lock left by a killed process (SIGKILL, power loss) stays:
 * the refusal says who holds it and how to remove it (`breakLock`, or deleting the object).
 */
import { randomBytes } from "node:crypto";
import { readFileSync, unlinkSync } from "node:fs";
import { readdir, rm, rmdir, stat } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { isStorageError, joinLocation, S3Store, type Store } from "@deltacells/storage";
import { processAlive } from "@deltacells/storage/node";
import { DeltacellsError } from "../errors.js";

/** The lock object's key at the root of a target. */
export const LOCK_KEY = ".deltacells-lock";

/** Who holds a lock: what the lock object says. */
export interface LockHolder {
  host: string;
  pid: number;
  /** When the lock was taken (ISO 8601). */
  started: string;
  command: string;
  /** Random, so that a writer deletes only its own lock. */
  id: string;
}

/** Another conversion holds the target's lock. */
export class TargetLockedError extends DeltacellsError {
  constructor(
    message: string,
    /** The lock object (a path or URL). */
    readonly lock: string,
    /** What the lock says, when it could be read. */
    readonly holder: LockHolder | undefined,
  ) {
    super(message, { tag: "TargetLocked", object: lock, expected: "no writer lock", found: holder });
    this.name = "TargetLockedError";
  }
}

/** A lock this process holds. */
export interface WriterLock {
  /** The lock object (a path or URL). */
  readonly location: string;
  /** When it was taken (ms since the epoch). */
  readonly taken: number;
  /** Delete it (only if it is still ours); idempotent. */
  release(): Promise<void>;
}

function parseHolder(bytes: Uint8Array | undefined): LockHolder | undefined {
  if (bytes === undefined) return undefined;
  try {
    const h = JSON.parse(new TextDecoder().decode(bytes)) as LockHolder;
    return typeof h.pid === "number" && typeof h.host === "string" ? h : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs on this host (`undefined`: cannot tell, another host). */
function alive(holder: LockHolder): boolean | undefined {
  if (holder.host !== hostname()) return undefined;
  return processAlive(holder.pid);
}

function lockedMessage(
  output: string,
  where: string,
  holder: LockHolder | undefined,
  local: boolean,
  breakLockName: string,
): string {
  const who = holder
    ? `by ${holder.command} (pid ${holder.pid} on ${holder.host}, since ${holder.started})`
    : "by another writer (the lock cannot be read)";
  const state = holder === undefined ? undefined : alive(holder);
  const stale =
    state === false
      ? ` Process ${holder!.pid} is no longer running on this host: the lock is stale, left by a writer that was killed.`
      : state === true
        ? " That process is still running: wait for it to finish."
        : "";
  const remove = local ? `rm ${where}` : `aws s3 rm ${where}`;
  return `${output} is being written ${who}; two writers would mix their objects, so nothing was written.${stale} If nothing is writing there, remove the lock (${remove}), or run the command again with ${breakLockName}.`;
}

/** Options of {@link acquireWriterLock}. */
export interface WriterLockOptions {
  /** The target's local folder, when it is one (then its lock also goes synchronously on `process.exit`). */
  folder?: string | undefined;
  /** Delete an existing lock first: its holder is known to be gone. Default false. */
  breakLock?: boolean | undefined;
  /** Who writes, as the lock records it (`LockHolder.command`). Default "deltacells". */
  writer?: string | undefined;
  /** How the refusal names `breakLock` (a command line names its flag). Default `breakLock: true`. */
  breakLockName?: string | undefined;
  /**
   * Also release the lock on SIGINT and SIGTERM, then end the process as the signal would. For
   * command-line tools; a library leaves signals to its host. Default false.
   */
  releaseOnSignal?: boolean | undefined;
}

/**
 * Take the lock of the target `store` (at `output`): refused with {@link TargetLockedError} when
 * another conversion holds it. With `breakLock`, an existing lock is deleted first (the user said
 * its holder is gone). The lock is also deleted when the process exits (a folder's synchronously,
 * even on `process.exit`), and with `releaseOnSignal` when it is interrupted.
 */
export async function acquireWriterLock(
  store: Store,
  output: string,
  options: WriterLockOptions = {},
): Promise<WriterLock> {
  const {
    folder: outPath,
    breakLock = false,
    writer = "deltacells",
    breakLockName = "breakLock: true",
    releaseOnSignal = false,
  } = options;
  const where = outPath !== undefined ? resolve(outPath, LOCK_KEY) : joinLocation(output, LOCK_KEY);
  const folderExisted = outPath === undefined || (await stat(outPath).catch(() => undefined)) !== undefined;
  const holder: LockHolder = {
    host: hostname(),
    pid: process.pid,
    started: new Date().toISOString(),
    command: writer,
    id: randomBytes(8).toString("hex"),
  };
  const bytes = new TextEncoder().encode(`${JSON.stringify(holder, null, 2)}\n`);
  let released = false;
  const onExit = () => {
    // Only a folder's lock can go synchronously, which is all `exit` allows. Also while `release`
    // is under way: another listener (the sporadik writer's temporary folder, on a signal) may end
    // the process before the asynchronous removal is done.
    if (outPath === undefined) return;
    try {
      if (parseHolder(readFileSync(where))?.id === holder.id) unlinkSync(where);
    } catch {
      // already gone
    }
  };
  const onSignal = (signal: NodeJS.Signals) => {
    void release().finally(() => process.exit(128 + (signal === "SIGINT" ? 2 : 15)));
  };
  const release = async () => {
    if (released) return;
    released = true;
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    const now = parseHolder(await store.get(LOCK_KEY).catch(() => undefined));
    if (now?.id === holder.id) await store.delete(LOCK_KEY).catch(() => undefined);
    process.off("exit", onExit);
    // A folder this lock created for a conversion that wrote nothing goes too.
    if (outPath !== undefined && !folderExisted) await rmdir(outPath).catch(() => undefined);
  };
  // Listening before the lock exists: an interruption at any moment after it does removes it.
  process.once("exit", onExit);
  if (releaseOnSignal) {
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  }
  const taken = Date.now();
  try {
    if (breakLock) await store.delete(LOCK_KEY);
    await store.set(LOCK_KEY, bytes, { createOnly: true });
  } catch (err) {
    await release();
    if (!isStorageError(err, "AlreadyExists")) throw err;
    const other = parseHolder(await store.get(LOCK_KEY).catch(() => undefined));
    throw new TargetLockedError(
      lockedMessage(output, where, other, outPath !== undefined, breakLockName),
      where,
      other,
    );
  }
  return { location: where, taken, release };
}

/** Marks the temporary files of a folder store's writes (see FolderStore.set). */
const TEMP_MARK = ".dctmp-";

/**
 * Delete the temporary files (`*.dctmp-*`) under `root` older than `before` (ms): half-written
 * objects of a writer that was killed, which no listing shows. Called under the writer lock, so no
 * live conversion owns them. Returns their paths.
 */
export async function removeStaleTempFiles(root: string, before: number): Promise<string[]> {
  const found = await tempFiles(root);
  const removed: string[] = [];
  for (const path of found) {
    const s = await stat(path).catch(() => undefined);
    if (s !== undefined && s.mtimeMs < before) {
      await rm(path, { force: true });
      removed.push(path);
    }
  }
  return removed;
}

/** Every temporary file of a folder store's writes under `root`. */
export async function tempFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) await walk(path);
      else if (e.name.includes(TEMP_MARK)) out.push(path);
    }
  };
  await walk(root);
  return out.sort();
}

/** The S3 store under a store's wrappers (request counting, retries, limits), when it is one. */
export function s3Under(store: unknown): S3Store | undefined {
  for (let s = store; s !== undefined && s !== null; s = (s as { inner?: unknown }).inner)
    if (s instanceof S3Store) return s;
  return undefined;
}

/**
 * Abort the multipart uploads under an S3 target begun before `before` (ms since the epoch) and
 * not under `keep` (the caller's own staging): the parts of a large object whose writer was killed
 * in the middle of its upload, which no listing shows and S3 bills until they are aborted. Called
 * only where no live writer can own one: under the writer lock, once the write that replaces or
 * completes what is there has succeeded. Returns them as `URL/key (an unfinished upload)`;
 * nothing for other stores.
 */
export async function abortStaleUploads(store: Store, before: number, keep?: string): Promise<string[]> {
  const s3 = s3Under(store);
  if (s3 === undefined) return [];
  const aborted: string[] = [];
  for (const u of await s3.uploads()) {
    if (!(u.initiated.getTime() < before) || (keep !== undefined && u.key.startsWith(`${keep}/`))) continue;
    await s3.abortUpload(u.key, u.uploadId);
    aborted.push(`${s3.url}/${u.key} (an unfinished upload)`);
  }
  return aborted;
}
