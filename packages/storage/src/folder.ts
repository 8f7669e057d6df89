import { randomBytes } from "node:crypto";
import { closeSync, fstatSync, openSync, readFile, readSync, statSync } from "node:fs";
import { link, mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { coreWait } from "./core-wait.js";
import { changedError, isStorageError, objectAt, StorageError } from "./errors.js";
import { normalizeKey, normalizePrefix } from "./keys.js";
import { fdSize, readFd, SharedFiles } from "./open-files.js";
import { resolveRange, throwIfAborted } from "./range.js";
import { Slots } from "./slots.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";

/** Suffix of in-flight writes; `list` hides them so a reader never sees a half-written object. */
const TEMP_MARK = ".dctmp-";

/** Largest single `pread`; longer ranges take several (Node refuses reads of 2 GiB or more). */
const MAX_READ = 1 << 30;

/**
 * How long one shared descriptor keeps taking new readers. A descriptor keeps reading the file it
 * opened even after another process replaces it, so under reads that never pause this bounds how
 * long such a replacement can go unseen; reopening this rarely costs nothing measurable.
 */
const MAX_SHARE_MS = 100;

/** Options of {@link FolderStore}. */
export interface FolderStoreOptions {
  /**
   * Most file descriptors the store holds at once (default 128); further reads and writes wait
   * for one to close. Reads of one object that overlap in time share one descriptor.
   */
  maxOpenFiles?: number;
  /**
   * Whether `get` may read small objects (up to 256 KiB), and `getInto` objects up to 2 MiB, by
   * blocking calls while they come from the page cache (default false; see {@link FolderStore}). Turn it on in a program that reads
   * many small chunks and has nothing else for its event loop to do (a command-line tool, a
   * batch job); leave it off in a server, whose event loop must never wait on a disk.
   */
  blockingReads?: boolean;
}

/**
 * The whole file via callback `fs.readFile`: the same open/fstat/read/close as `fs/promises`, but
 * without building a `FileHandle` (measured 1.05-2x faster for 1-4 KiB objects).
 */
function readWhole(path: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
  return new Promise((resolve, reject) =>
    readFile(path, signal === undefined ? undefined : { signal }, (err, buf) =>
      err ? reject(err) : resolve(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)),
    ),
  );
}

/** Objects up to this size may be read by blocking calls (see {@link FolderStore}). */
const BLOCKING_READ_MAX = 1 << 18;
/**
 * Blocking reads longer than this, {@link SLOW_RUN} in a row, are not coming from the page cache
 * (or the files are remote). One slow read proves nothing: on a loaded machine the scheduler
 * stretches a 13 us read to tens of milliseconds now and then. So once one was slow, the next are
 * timed without the time this thread waited for a core (Linux; see core-wait.ts): only waiting
 * for the files counts.
 */
const SLOW_BLOCKING_READ_MS = 0.5;
const SLOW_RUN = 4;
/** How long a store reads through the thread pool only, after a run of slow blocking reads. */
const BLOCKING_COOL_OFF_MS = 5000;

/**
 * Objects up to this size may be read into the caller's memory (`getInto`: a tile, into a decoder's
 * buffer) by blocking calls. Larger than `get`'s limit: the caller decodes what it reads on this
 * thread or hands it to workers, and a tile from the page cache costs ~0.1 ms to read this way
 * against five thread-pool round trips (bench/RESULTS.md, "Decoding on a pool").
 */
const BLOCKING_GET_INTO_MAX = 1 << 21;
/** Page-cache reads copy at several GB/s: a blocking read is slow past 0.5 ms plus 1 ms per 2 MB. */
const slowAfterMs = (bytes: number) => SLOW_BLOCKING_READ_MS + bytes / 2e6;

/** What a blocking read answers when the object is too large for it: read it asynchronously. */
const TOO_LARGE = Symbol("too large");

/**
 * The whole file at `path` by blocking `open`/`fstat`/`read`/`close`, into `allocate(size)` (a
 * fresh array by default): undefined when it is missing, {@link TOO_LARGE} (nothing allocated) past
 * `max` bytes.
 */
function readBlocking(
  path: string,
  max: number,
  allocate: (size: number) => Uint8Array = (size) => new Uint8Array(size),
): Uint8Array | undefined | typeof TOO_LARGE {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  try {
    const size = fstatSync(fd).size;
    if (size > max) return TOO_LARGE;
    const out = allocate(size);
    let done = 0;
    for (let n = 1; n > 0 && done < size; done += n) n = readSync(fd, out, done, size - done, done);
    // Shorter than fstat said: truncated in place while being read; answer what is there.
    return done < size ? out.subarray(0, done) : out;
  } finally {
    closeSync(fd);
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/**
 * `mkdir -p`, bounded. Node's recursive mkdir loops for ever where a folder exists but refuses
 * children with ENOENT (`/proc/x`): here each level is created once, parents first, and a level
 * that still cannot be created after its parent exists is an error.
 */
async function makeFolders(dir: string, depth = 0): Promise<void> {
  try {
    await mkdir(dir);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "EEXIST") return;
    const parent = dirname(dir);
    if (code !== "ENOENT" || parent === dir || depth > 256) throw err;
    await makeFolders(parent, depth + 1);
    try {
      await mkdir(dir);
    } catch (again) {
      if ((again as { code?: string }).code !== "EEXIST") throw again;
    }
  }
}

/**
 * A local folder. Writes go to a temporary file in the target's directory and are renamed into
 * place, so a concurrent reader sees either the old object or the whole new one, and a crash
 * leaves at worst a hidden temporary file, never a truncated object.
 *
 * Reads are built for many small requests: `getRange` calls on one key that overlap in time share
 * one file descriptor (closed when the key goes idle, at the latest at the end of the event-loop
 * turn in which its last read finished), and at most `maxOpenFiles` descriptors are open at once,
 * so wide fan-outs wait instead of failing with EMFILE. A read that starts after this store's
 * `set` or `delete` of the key returned always sees the new state; a replacement made outside this
 * store is seen by reads that start once the key's reads in flight have finished, or at most
 * 100 ms after it while they never pause.
 *
 * With `blockingReads: true` (opt-in, off by default so that a server's event loop never waits on
 * a disk), `get` of an object up to 256 KiB (a zarr chunk, a small tile) is a blocking open/fstat/read/close
 * while such reads stay fast: from the page cache that costs ~13 us of this thread, where the
 * thread pool's four round trips cost more of it and put up to four more threads on the cores that
 * decoding needs (a 100-slice batch over a chunked sporadik store ran 1.7-2x faster this way). After
 * four blocking reads in a row slower than 0.5 ms (a cold cache, a network file system; under
 * Linux, time this thread only waited for a core does not count), the store reads through the
 * thread pool for the next 5 s. Without `blockingReads` the store never blocks.
 */
export class FolderStore implements Store {
  readonly root: string;
  readonly url: string;

  private readonly slots: Slots;
  private readonly files: SharedFiles;
  private readonly blockingReads: boolean;
  /** Until when whole-object reads go through the thread pool only (after a slow blocking read). */
  private blockingOffUntil = 0;
  /** Blocking reads in a row slower than {@link SLOW_BLOCKING_READ_MS}. */
  private slowBlockingReads = 0;

  constructor(root: string, opts: FolderStoreOptions = {}) {
    this.root = resolve(root);
    this.url = this.root;
    this.blockingReads = opts.blockingReads ?? false;
    const max = opts.maxOpenFiles ?? 128;
    if (!Number.isInteger(max) || max < 1) {
      throw new StorageError(`maxOpenFiles must be a positive integer, got ${max}`, {
        tag: "InvalidArgument",
        object: this.url,
        expected: "a positive integer",
        found: max,
      });
    }
    this.slots = new Slots(max);
    this.files = new SharedFiles(this.slots, MAX_SHARE_MS);
  }

  /** File descriptors the store holds now (reads and writes in flight, plus idle ones about to close). */
  get openFiles(): number {
    return this.slots.taken;
  }

  /**
   * Whether `get` reads small objects by blocking calls right now: `blockingReads` is on and no run
   * of slow blocking reads has switched the store to the thread pool in the last 5 s.
   */
  get readsBlock(): boolean {
    return this.blockingReads && performance.now() >= this.blockingOffUntil;
  }

  private path(key: string): string {
    const p = join(this.root, normalizeKey(key, this.url));
    // normalizeKey already refuses "..", this is a second fence against symlink-free escapes.
    if (!p.startsWith(this.root + sep)) {
      throw new StorageError(`key ${key} resolves outside the store root ${this.root}`, {
        tag: "InvalidKey",
        object: objectAt(this.url, key),
      });
    }
    return p;
  }

  private wrap(err: unknown, what: string, key: string): StorageError {
    if (err instanceof StorageError) return err;
    return new StorageError(`${what} ${key} in ${this.root} failed: ${(err as Error).message}`, {
      object: objectAt(this.url, key),
      cause: err,
    });
  }

  async get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.checked(key, opts, () => this.getUnchecked(key, opts));
  }

  private async getUnchecked(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    const signal = opts?.signal;
    throwIfAborted(signal);
    const path = this.path(key);
    if (this.slots.tryTake()) {
      if (this.readsBlock) {
        const bytes = this.readBlockingTimed(path, key);
        if (bytes !== TOO_LARGE) return bytes;
      }
    } else await this.slots.take(signal);
    try {
      return await readWhole(path, signal);
    } catch (err) {
      if (isMissing(err)) return undefined;
      if (signal?.aborted) throw signal.reason;
      throw this.wrap(err, "reading", key);
    } finally {
      this.slots.give();
    }
  }

  /**
   * {@link readBlocking} within a descriptor slot the caller took, timed: a run of slow reads
   * switches the store to the thread pool. The slot is given back unless the object is too large
   * (the caller then reads it through the pool in the same slot).
   */
  private readBlockingTimed(path: string, key: string): Uint8Array | undefined | typeof TOO_LARGE {
    const t0 = this.readClock();
    let bytes: ReturnType<typeof readBlocking>;
    try {
      bytes = readBlocking(path, BLOCKING_READ_MAX);
    } catch (err) {
      this.slots.give();
      throw this.wrap(err, "reading", key);
    }
    this.timedBlockingRead(t0, SLOW_BLOCKING_READ_MS);
    if (bytes !== TOO_LARGE) this.slots.give();
    return bytes;
  }

  /**
   * When a blocking read starts: the wall clock, and after a slow read also the time this thread
   * has waited for a core so far (~10 us more per read, only while a run of slow reads is counted).
   */
  private readClock(): { at: number; coreWait?: number } {
    return { at: performance.now(), coreWait: this.slowBlockingReads > 0 ? coreWait.ms() : undefined };
  }

  /**
   * Counts a blocking read that started at `t0` as slow past `slowMs` (the time it waited for a
   * core left out, when known): after {@link SLOW_RUN} slow ones in a row, whole-object reads go
   * through the thread pool for {@link BLOCKING_COOL_OFF_MS}.
   */
  private timedBlockingRead(t0: { at: number; coreWait?: number }, slowMs: number): void {
    const end = performance.now();
    const waited = t0.coreWait === undefined ? 0 : (coreWait.ms() ?? t0.coreWait) - t0.coreWait;
    const elapsed = end - t0.at - waited;
    this.slowBlockingReads = elapsed > slowMs ? this.slowBlockingReads + 1 : 0;
    if (this.slowBlockingReads >= SLOW_RUN) {
      this.blockingOffUntil = end + BLOCKING_COOL_OFF_MS;
      this.slowBlockingReads = 0;
    }
  }

  async getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.checked(key, opts, () => this.getRangeUnchecked(key, range, opts));
  }

  private async getRangeUnchecked(
    key: string,
    range: RangeQuery,
    opts?: StoreOptions,
  ): Promise<Uint8Array | undefined> {
    const signal = opts?.signal;
    throwIfAborted(signal);
    const path = this.path(key);
    // Against the largest size, this only refuses malformed ranges, before any I/O.
    resolveRange(range, Number.MAX_SAFE_INTEGER, key, this.url);
    // An explicit range needs no size: a read that comes back short means it ran past the end.
    const sized = "suffixLength" in range || range.length === 0;
    return this.readShared(path, key, signal, async (fd) => {
      const { start, end } = sized
        ? resolveRange(range, await fdSize(fd), key, this.url)
        : { start: range.offset, end: range.offset + range.length };
      const out = new Uint8Array(end - start);
      let done = 0;
      while (done < out.length) {
        if (done > 0) throwIfAborted(signal);
        const n = await readFd(fd, out, done, Math.min(out.length - done, MAX_READ), start + done);
        if (n === 0) throw await this.shortRead(fd, range, key, done);
        done += n;
      }
      return out;
    });
  }

  /**
   * `get` into memory from `allocate(size)`, called once the file's size is known: one `fstat`
   * and one `pread` on a descriptor shared like `getRange`'s; with `blockingReads`, objects up to
   * 2 MiB (a tile) by blocking calls instead, while they stay fast (see {@link FolderStore}). A
   * file that shrank while being read answers what was there, as `get` does.
   */
  async getInto(
    key: string,
    allocate: (size: number) => Uint8Array,
    opts?: StoreOptions,
  ): Promise<Uint8Array | undefined> {
    if (this.readsBlock) {
      // The key checked before a descriptor slot is taken: a refused key must not hold one.
      const path = this.path(key);
      if (this.slots.tryTake()) {
        const bytes = this.getIntoBlocking(key, path, allocate, opts);
        if (bytes !== TOO_LARGE) return bytes;
      }
    }
    return this.checked(key, opts, () => this.getIntoUnchecked(key, allocate, opts));
  }

  /**
   * {@link getInto} by blocking `open`/`fstat`/`read`/`close`, then the `stat` that `unchangedSince`
   * and `onInfo` ask for, within a descriptor slot the caller took (given back here); timed like
   * {@link readBlockingTimed}. {@link TOO_LARGE} (nothing allocated) past {@link BLOCKING_GET_INTO_MAX}.
   */
  private getIntoBlocking(
    key: string,
    path: string,
    allocate: (size: number) => Uint8Array,
    opts: StoreOptions | undefined,
  ): Uint8Array | undefined | typeof TOO_LARGE {
    const t0 = this.readClock();
    let out: ReturnType<typeof readBlocking>;
    try {
      throwIfAborted(opts?.signal);
      out = readBlocking(path, BLOCKING_GET_INTO_MAX, (size) => this.space(allocate, size, key));
      if (out === undefined || out === TOO_LARGE) return out;
    } catch (err) {
      if (opts?.unchangedSince !== undefined && !opts.signal?.aborted) {
        try {
          this.checkUnchangedSync(key, path, { unchangedSince: opts.unchangedSince });
        } catch (changed) {
          if (isStorageError(changed, "Changed")) throw changed;
        }
      }
      if (opts?.signal?.aborted) throw opts.signal.reason;
      throw this.wrap(err, "reading", key);
    } finally {
      this.slots.give();
    }
    this.timedBlockingRead(t0, slowAfterMs(out.length));
    this.checkUnchangedSync(key, path, opts);
    return out;
  }

  /** `size` bytes of `allocate(size)`, refused when it returned fewer. */
  private space(allocate: (size: number) => Uint8Array, size: number, key: string): Uint8Array {
    const space = allocate(size);
    if (space.length < size) {
      throw new StorageError(`getInto: allocate(${size}) returned ${space.length} bytes for ${key}`, {
        tag: "InvalidArgument",
        object: objectAt(this.url, key),
        expected: `>= ${size} bytes`,
        found: space.length,
      });
    }
    return space.subarray(0, size);
  }

  private async getIntoUnchecked(
    key: string,
    allocate: (size: number) => Uint8Array,
    opts?: StoreOptions,
  ): Promise<Uint8Array | undefined> {
    const signal = opts?.signal;
    throwIfAborted(signal);
    return this.readShared(this.path(key), key, signal, async (fd) => {
      const size = await fdSize(fd);
      const out = this.space(allocate, size, key);
      let done = 0;
      while (done < size) {
        if (done > 0) throwIfAborted(signal);
        const n = await readFd(fd, out, done, Math.min(size - done, MAX_READ), done);
        if (n === 0) break;
        done += n;
      }
      return done < size ? out.subarray(0, done) : out;
    });
  }

  /**
   * `read(fd)` on the descriptor of `path` shared with overlapping reads: `undefined` when the
   * file does not exist, the signal's reason when it aborted, any other failure wrapped.
   */
  private async readShared(
    path: string,
    key: string,
    signal: AbortSignal | undefined,
    read: (fd: number) => Promise<Uint8Array>,
  ): Promise<Uint8Array | undefined> {
    const file = this.files.acquire(path);
    try {
      let fd: number;
      try {
        const ready = this.files.ready(file, signal);
        fd = typeof ready === "number" ? ready : await ready;
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
      return await read(fd);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw this.wrap(err, "reading", key);
    } finally {
      this.files.release(file);
    }
  }

  /** The error for a read that hit the end of the object after `done` bytes of `range`. */
  private async shortRead(fd: number, range: RangeQuery, key: string, done: number): Promise<StorageError> {
    try {
      resolveRange(range, await fdSize(fd), key, this.url);
    } catch (err) {
      return this.wrap(err, "reading", key);
    }
    // The object is long enough now but was not during the read: it was truncated and rewritten
    // in place by someone bypassing `set`.
    return new StorageError(`${key} changed size while being read (got ${done} bytes of the range)`, {
      tag: "RangeNotSatisfiable",
      object: objectAt(this.url, key),
    });
  }

  async set(key: string, value: Uint8Array, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const path = this.path(key);
    if (opts?.createOnly) return this.create(key, path, value);
    const tmp = `${path}${TEMP_MARK}${randomBytes(6).toString("hex")}`;
    try {
      await makeFolders(dirname(path));
      await this.slots.take(opts?.signal);
      try {
        const handle = await open(tmp, "w");
        try {
          await handle.writeFile(value);
          await handle.sync();
        } finally {
          await handle.close();
        }
      } finally {
        this.slots.give();
      }
      throwIfAborted(opts?.signal);
      await rename(tmp, path);
      this.files.retire(path);
    } catch (err) {
      await rm(tmp, { force: true });
      if ((err as Error).name === "AbortError") throw err;
      throw this.wrap(err, "writing", key);
    }
  }

  /**
   * A create-only `set`: the value is written whole to a temporary file, which is then hard-linked
   * to its name. `link` fails if the name exists and is atomic (also on NFS), so the object appears
   * complete or not at all: a second writer never reads a half-written lock, which a rename (it
   * replaces) or an `O_EXCL` create followed by a write (empty at first) would allow.
   */
  private async create(key: string, path: string, value: Uint8Array): Promise<void> {
    const tmp = `${path}${TEMP_MARK}${randomBytes(6).toString("hex")}`;
    try {
      await makeFolders(dirname(path));
      const handle = await open(tmp, "wx");
      try {
        await handle.writeFile(value);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await link(tmp, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") {
        throw new StorageError(`${path} already exists`, {
          tag: "AlreadyExists",
          object: objectAt(this.url, key),
          cause: err,
        });
      }
      throw this.wrap(err, "creating", key);
    } finally {
      await unlink(tmp).catch(() => {});
    }
  }

  /**
   * `read` of `key`, then {@link checkUnchanged}. A read that fails is checked too: a file replaced
   * under it (another size, gone) is explained as the change it is, not as the symptom.
   */
  private async checked(
    key: string,
    opts: StoreOptions | undefined,
    read: () => Promise<Uint8Array | undefined>,
  ): Promise<Uint8Array | undefined> {
    let bytes: Uint8Array | undefined;
    try {
      bytes = await read();
    } catch (err) {
      if (opts?.unchangedSince !== undefined && !opts.signal?.aborted) {
        await this.checkUnchanged(key, this.path(key), { unchangedSince: opts.unchangedSince }).catch(
          (changed: unknown) => {
            if (isStorageError(changed, "Changed")) throw changed;
          },
        );
      }
      throw err;
    }
    if (bytes !== undefined) await this.checkUnchanged(key, this.path(key), opts);
    return bytes;
  }

  /**
   * After a read of `key`, what `opts` asks: its change time (the later of mtime and ctime: a
   * rename into place changes only the ctime) reported, and refused after `unchangedSince`. One
   * `stat` after the read: a file replaced before or during the read is seen.
   */
  private async checkUnchanged(key: string, path: string, opts: StoreOptions | undefined): Promise<void> {
    if (opts?.onInfo === undefined && opts?.unchangedSince === undefined) return;
    // The end of the current millisecond: file times are finer than Date.now(), and a file written
    // earlier in the same millisecond as this read is not a change after it.
    const readAt = Date.now() + 1;
    let s: { mtimeMs: number; ctimeMs: number };
    try {
      s = await stat(path);
    } catch (err) {
      throw this.statFailed(err, key, path, opts);
    }
    this.reportChange(key, path, opts, s, readAt);
  }

  /** {@link checkUnchanged} by a blocking `stat` (after a blocking read). */
  private checkUnchangedSync(key: string, path: string, opts: StoreOptions | undefined): void {
    if (opts?.onInfo === undefined && opts?.unchangedSince === undefined) return;
    const readAt = Date.now() + 1;
    let s: { mtimeMs: number; ctimeMs: number };
    try {
      s = statSync(path);
    } catch (err) {
      throw this.statFailed(err, key, path, opts);
    }
    this.reportChange(key, path, opts, s, readAt);
  }

  private statFailed(err: unknown, key: string, path: string, opts: StoreOptions): StorageError {
    if (isMissing(err) && opts.unchangedSince !== undefined) {
      return new StorageError(`${path} was deleted while being read: it was rewritten since`, {
        tag: "Changed",
        object: objectAt(this.url, key),
      });
    }
    return this.wrap(err, "reading", key);
  }

  /** Reports the change time of `s` to `opts.onInfo` and refuses it after `opts.unchangedSince`. */
  private reportChange(
    key: string,
    path: string,
    opts: StoreOptions,
    s: { mtimeMs: number; ctimeMs: number },
    readAt: number,
  ): void {
    const changed = Math.max(s.mtimeMs, s.ctimeMs);
    opts.onInfo?.({ changed, readAt });
    if (opts.unchangedSince !== undefined && changed > opts.unchangedSince) {
      throw changedError(key, this.url, path, changed, opts.unchangedSince);
    }
  }

  async delete(key: string, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const path = this.path(key);
    try {
      await rm(path, { force: true });
    } catch (err) {
      throw this.wrap(err, "deleting", key);
    } finally {
      this.files.retire(path);
    }
  }

  async list(prefix?: string, opts?: StoreOptions): Promise<string[]> {
    throwIfAborted(opts?.signal);
    const p = normalizePrefix(prefix, this.url);
    const out: string[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries: import("node:fs").Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (isMissing(err)) return;
        throw this.wrap(err, "listing", rel || ".");
      }
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) {
          // Only descend where the prefix can still match.
          if (key.startsWith(p) || p.startsWith(`${key}/`)) await walk(join(dir, e.name), key);
        } else if (!e.name.includes(TEMP_MARK) && key.startsWith(p)) {
          out.push(key);
        }
      }
    };
    await walk(this.root, "");
    return out.sort();
  }
}
