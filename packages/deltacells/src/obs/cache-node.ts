/**
 * The local Arrow cache of obs (spec: "Local cache", non-normative, followed as written): each
 * requested column is fetched once per node into
 * `<cache>/<fingerprint>/obs/<url-quoted column name>.arrow`, an uncompressed Arrow IPC file with
 * one record batch per tile, then read zero-copy (Node has no mmap: the file is read once into a
 * buffer the Arrow table's columns are views of). `<cache>` is the `cacheDir` option, then
 * `$DELTACELLS_CACHE`, then `$XDG_CACHE_HOME/deltacells`, then `~/.cache/deltacells`.
 *
 * Concurrency: a column is written to a temporary file and renamed into place (readers never see
 * half a file), under `<file>.lock`, created exclusively. Other processes wait for the lock and
 * then find the file. The holder refreshes the lock's mtime while it fetches; a lock whose owner
 * is dead (same host, no such pid) or that has not been refreshed for `staleMs` is broken. Even
 * if two processes ever fetched the same column, each rename installs a complete, identical file.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, unlinkSync } from "node:fs";
import { open, readFile, rename, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { join } from "node:path";
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

/** Tunables of the lock (tests shorten them). */
export interface ObsCacheLockOptions {
  /** A lock not refreshed for this long is stale (default 60 s; the holder refreshes every staleMs / 4). */
  staleMs?: number;
  /** Polling interval while waiting for another process (default 50 ms). */
  pollMs?: number;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
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

/** The cached column if its file exists and agrees with the tiles; a disagreeing file is deleted. */
function openCached(
  { decodeColumnFile }: ArrowHelpers,
  path: string,
  col: ObsColumnSchema,
  tileCells: number[],
): ObsColumn | undefined {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch {
    return undefined;
  }
  const table = decodeColumnFile(bytes, col, tileCells);
  if (table) return new ObsColumn(col, table, path);
  try {
    // batch count, row counts, name or type disagree with the manifest: fetch again
    unlinkSync(path);
  } catch {
    // another process replaced or removed it meanwhile
  }
  return undefined;
}

/** Fetch one column into the cache (atomically) unless another process already did. */
async function localizeColumn(
  arrow: ArrowHelpers,
  shards: ObsShards,
  col: ObsColumnSchema,
  path: string,
  opts: ObsCacheLockOptions & { signal?: AbortSignal },
): Promise<ObsColumn> {
  const tileCells = shards.manifest.tile_cells;
  const ready = openCached(arrow, path, col, tileCells);
  if (ready) return ready;
  return withLock(path, opts, async () => {
    const done = openCached(arrow, path, col, tileCells);
    if (done) return done;
    const table = arrow.columnTable(col, await shards.readColumn(col, opts));
    const bytes = arrow.encodeColumnFile(table);
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await writeFile(tmp, bytes, { flush: true });
      await rename(tmp, path);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
    return openCached(arrow, path, col, tileCells) ?? new ObsColumn(col, table);
  });
}

/** The Node localizer: the local Arrow cache. */
export function cacheLocalizer(lock: ObsCacheLockOptions = {}): ObsLocalizer {
  return async (shards, columns, opts) => {
    const root = obsCacheRoot(opts.cacheDir);
    const fingerprint = shards.manifest.obs_fingerprint!;
    mkdirSync(join(root, fingerprint, "obs"), { recursive: true });
    const arrow = await loadArrow();
    return Promise.all(
      columns.map((c) =>
        localizeColumn(arrow, shards, c, obsCachePath(root, fingerprint, c.name), {
          ...lock,
          signal: opts.signal,
        }),
      ),
    );
  };
}
