/**
 * The local Arrow cache of obs (spec: "Local cache", non-normative, followed as written): each
 * requested column is fetched once per node into
 * `<cache>/<fingerprint>/obs/<url-quoted column name>.arrow`, an uncompressed Arrow IPC file with
 * one record batch per tile, then read zero-copy (Node has no mmap: the file is read once into a
 * buffer the Arrow table's columns are views of). `<cache>` is the `cacheDir` option, then
 * `$DELTACELLS_CACHE`, then `$XDG_CACHE_HOME/deltacells`, then `~/.cache/deltacells`.
 *
 * Integrity: beside each file, `<file>.sha256` holds the SHA-256 of the bytes written (in
 * `sha256sum` form, so `sha256sum -c` checks it by hand). An Arrow file has no checksum of its
 * own, and a flipped byte inside a value buffer still decodes: the first time a localizer opens a
 * file (per inode, size and times: a replaced file is checked again) it hashes it, and a file
 * that disagrees with its record, or has none, is fetched again. Its batch count, row counts,
 * name and type are checked on every open.
 *
 * Concurrency: a column is written to a temporary file and renamed into place (readers never see
 * half a file), under `<file>.lock`, created exclusively. Other processes wait for the lock and
 * then find the file. The holder refreshes the lock's mtime while it fetches; a lock whose owner
 * is dead (same host, no such pid) or that has not been refreshed for `staleMs` is broken. Even
 * if two processes ever fetched the same column, each rename installs a complete, identical file.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, statSync } from "node:fs";
import { open, readFile, rename, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { basename, join } from "node:path";
import { processAlive } from "@deltacells/storage/node";
import { loadArrow } from "./arrow-load.js";
import { ObsColumn } from "./frame.js";
import type { ObsLocalizer } from "./localize.js";
import type { ObsShards } from "./read.js";
import type { ObsColumnSchema } from "./schema.js";

/** The cache root: `cacheDir`, then `$DELTACELLS_CACHE`, `$XDG_CACHE_HOME/deltacells`, `~/.cache/deltacells`. */
export function obsCacheRoot(cacheDir?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (cacheDir) return cacheDir;
  if (env.DELTACELLS_CACHE) return env.DELTACELLS_CACHE;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "deltacells");
  return join(homedir(), ".cache", "deltacells");
}

/** Python's `urllib.parse.quote(name, safe="")`: everything but letters, digits and `_.-~` percent-encoded (UTF-8). */
export function quoteColumnName(name: string): string {
  return encodeURIComponent(name).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** The cache file of a column of the dataset with this fingerprint. */
export function obsCachePath(root: string, fingerprint: string, column: string): string {
  return join(root, fingerprint, "obs", `${quoteColumnName(column)}.arrow`);
}

/** The file beside a cache file that records its SHA-256 (`sha256sum` form: hex, two spaces, file name). */
export function obsChecksumPath(path: string): string {
  return `${path}.sha256`;
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The line of a checksum file for `bytes` stored at `path`. */
function checksumLine(path: string, bytes: Uint8Array): string {
  return `${sha256Hex(bytes)}  ${basename(path)}\n`;
}

/** The SHA-256 recorded for the cache file at `path`, or undefined when there is no readable record. */
function recordedSha256(path: string): string | undefined {
  try {
    return /^([0-9a-f]{64}) /.exec(readFileSync(obsChecksumPath(path), "latin1"))?.[1];
  } catch {
    return undefined;
  }
}

/** What tells one file from its replacement or an edit of it: device, inode, size, times (ns). */
function identity(st: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/**
 * Files a localizer has hashed and found as recorded: path to {@link identity}. A file is hashed
 * the first time it is opened (per identity), not on every `obs()` call.
 */
type Verified = Map<string, string>;

/** Tunables of the lock (tests shorten them). */
export interface ObsCacheLockOptions {
  /** A lock not refreshed for this long is stale (default 60 s; the holder refreshes every staleMs / 4). */
  staleMs?: number;
  /** Polling interval while waiting for another process (default 50 ms). */
  pollMs?: number;
}

interface LockInfo {
  pid: number;
  host: string;
}

/** Whether the lock at `path` (with `text` as read) is abandoned. */
async function isStale(path: string, text: string, staleMs: number): Promise<boolean> {
  let info: LockInfo | undefined;
  try {
    info = JSON.parse(text) as LockInfo;
  } catch {
    info = undefined;
  }
  if (info && info.host === hostname() && typeof info.pid === "number" && !processAlive(info.pid))
    return true;
  try {
    return Date.now() - (await stat(path)).mtimeMs > staleMs;
  } catch {
    return false;
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Hold `<path>.lock` while `work` runs; waits for another holder and breaks stale locks. An abort
 * of `signal` ends the wait at once (a live holder may keep its lock for as long as its fetch takes).
 */
async function withLock<T>(
  path: string,
  opts: ObsCacheLockOptions & { signal?: AbortSignal | undefined },
  work: () => Promise<T>,
): Promise<T> {
  const lock = `${path}.lock`;
  const staleMs = opts.staleMs ?? 60_000;
  const pollMs = opts.pollMs ?? 50;
  const signal = opts.signal;
  const me = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() });
  for (;;) {
    signal?.throwIfAborted();
    try {
      const fh = await open(lock, "wx");
      await fh.writeFile(me);
      await fh.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let text: string;
    try {
      text = await readFile(lock, "utf8");
    } catch {
      continue; // released meanwhile
    }
    if (await isStale(lock, text, staleMs)) {
      // Break it only if it is still the lock judged stale (not a new holder's).
      const again = await readFile(lock, "utf8").catch(() => undefined);
      if (again === text) await unlink(lock).catch(() => {});
      continue;
    }
    await pause(pollMs, signal);
  }
  const heartbeat = setInterval(
    () => {
      const now = new Date();
      utimes(lock, now, now).catch(() => {});
    },
    Math.max(10, staleMs / 4),
  );
  heartbeat.unref();
  try {
    return await work();
  } finally {
    clearInterval(heartbeat);
    await unlink(lock).catch(() => {});
  }
}

/** The obs Arrow helpers (apache-arrow: loaded only by a process that reads obs). */
type ArrowHelpers = Awaited<ReturnType<typeof loadArrow>>;

/**
 * The cached column if its file exists, matches its recorded SHA-256 and agrees with the tiles;
 * undefined otherwise (the caller fetches it again and the rename replaces the file).
 */
function openCached(
  { decodeColumnFile }: ArrowHelpers,
  path: string,
  col: ObsColumnSchema,
  tileCells: number[],
  verified: Verified,
): ObsColumn | undefined {
  let bytes: Uint8Array;
  let id: string;
  try {
    // The identity and the bytes of one open file: a rename between a stat and a read cannot mix them.
    const fd = openSync(path, "r");
    try {
      id = identity(fstatSync(fd, { bigint: true }));
      bytes = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  if (verified.get(path) !== id) {
    const recorded = recordedSha256(path);
    if (recorded === undefined || recorded !== sha256Hex(bytes)) return undefined;
    verified.set(path, id);
  }
  // batch count, row counts, name or type disagreeing with the manifest: fetch again
  const table = decodeColumnFile(bytes, col, tileCells);
  return table ? new ObsColumn(col, table, path) : undefined;
}

/** Removes `path` if it exists (another process may have replaced or removed it meanwhile). */
async function removeIfThere(path: string): Promise<void> {
  await unlink(path).catch(() => {});
}

/**
 * Install `bytes` as the cache file `path` and its checksum: both written to temporary files,
 * the checksum renamed into place first. A reader that meets the new checksum beside the old file
 * (or a writer killed between the renames) sees a mismatch and fetches again, never a wrong value.
 */
async function install(path: string, bytes: Uint8Array, verified: Verified): Promise<void> {
  const suffix = `${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const sum = obsChecksumPath(path);
  const tmp = `${path}.${suffix}`;
  const tmpSum = `${sum}.${suffix}`;
  try {
    await writeFile(tmp, bytes, { flush: true });
    await writeFile(tmpSum, checksumLine(path, bytes), { flush: true });
    await rename(tmpSum, sum);
    await rename(tmp, path);
  } catch (err) {
    await Promise.all([removeIfThere(tmp), removeIfThere(tmpSum)]);
    throw err;
  }
  // Just hashed from the bytes written: the next open needs no second pass over them.
  verified.set(path, identity(statSync(path, { bigint: true })));
}

/** Fetch one column into the cache (atomically) unless another process already did. */
async function localizeColumn(
  arrow: ArrowHelpers,
  shards: ObsShards,
  col: ObsColumnSchema,
  path: string,
  verified: Verified,
  opts: ObsCacheLockOptions & { signal?: AbortSignal },
): Promise<ObsColumn> {
  const tileCells = shards.manifest.tile_cells;
  const ready = openCached(arrow, path, col, tileCells, verified);
  if (ready) return ready;
  return withLock(path, opts, async () => {
    const done = openCached(arrow, path, col, tileCells, verified);
    if (done) return done;
    // A damaged file goes now: should the fetch fail, nothing wrong is left to be read.
    await Promise.all([removeIfThere(path), removeIfThere(obsChecksumPath(path))]);
    const table = arrow.columnTable(col, await shards.readColumn(col, opts));
    await install(path, arrow.encodeColumnFile(table), verified);
    return openCached(arrow, path, col, tileCells, verified) ?? new ObsColumn(col, table);
  });
}

/**
 * A Node localizer: the local Arrow cache. Each localizer hashes a cache file the first time it
 * opens it; `openDataset` of the Node entry shares one per process.
 */
export function cacheLocalizer(lock: ObsCacheLockOptions = {}): ObsLocalizer {
  const verified: Verified = new Map();
  return async (shards, columns, opts) => {
    const root = obsCacheRoot(opts.cacheDir);
    const fingerprint = shards.manifest.obs_fingerprint!;
    mkdirSync(join(root, fingerprint, "obs"), { recursive: true });
    const arrow = await loadArrow();
    return Promise.all(
      columns.map((c) =>
        localizeColumn(arrow, shards, c, obsCachePath(root, fingerprint, c.name), verified, {
          ...lock,
          signal: opts.signal,
        }),
      ),
    );
  };
}
