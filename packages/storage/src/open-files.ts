/**
 * Raw file descriptors for `FolderStore`'s reads. Node-only.
 *
 * Why not `fs/promises`: every `open()` there builds a `FileHandle` (a GC-tracked object with its
 * own close bookkeeping) and every call goes through the promise binding; for thousands of small
 * reads that overhead was ~30% of a reader's CPU. Callback `fs` calls wrapped in one promise each
 * do the same system calls without it.
 *
 * {@link SharedFiles}: one descriptor per path shared by every read on that path that overlaps in
 * time (reference-counted), closed once the path goes idle; the descriptors a store holds at once
 * are bounded by its {@link Slots}, so a burst of reads on many keys waits instead of failing with
 * EMFILE.
 */
import { close, fstat, open, read } from "node:fs";
import { raceAbort } from "./signals.js";
import type { Slots } from "./slots.js";

/** Opens `path` read-only; rejects with the errno error (`code` is set). */
export function openFd(path: string): Promise<number> {
  return new Promise((resolve, reject) => open(path, "r", (err, fd) => (err ? reject(err) : resolve(fd))));
}

/** The size in bytes of the open file `fd`. */
export function fdSize(fd: number): Promise<number> {
  return new Promise((resolve, reject) => fstat(fd, (err, st) => (err ? reject(err) : resolve(st.size))));
}

/** One `pread`: up to `length` bytes into `buf` at `offset`, from file position `position`. */
export function readFd(
  fd: number,
  buf: Uint8Array,
  offset: number,
  length: number,
  position: number,
): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, buf, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
}

/** Closes `fd`. A failing close of a read-only descriptor loses nothing, so its error is dropped. */
function closeFd(fd: number, done: () => void): void {
  close(fd, () => done());
}

/** One open descriptor shared by the reads of one path that overlap in time. */
export interface SharedFile {
  /** The descriptor once open; -1 while opening or if the open failed, -2 once closed. */
  fd: number;
  /** Settles when the open does; rejects with the open's error. */
  readonly opened: Promise<number>;
  readonly path: string;
  /** Reads using it now (plus the one that is opening it). */
  users: number;
  /** When it was opened (ms, `performance.now()`): old descriptors stop taking new readers. */
  readonly openedAt: number;
  /** True once the descriptor may take no new reader (replaced, too old, or closing). */
  retired: boolean;
  /** Pending idle close, cancelled when a reader joins in the same turn of the event loop. */
  idle: ReturnType<typeof setImmediate> | undefined;
}

/**
 * Descriptors shared per path. A read {@link acquire}s the path's descriptor (opening it, or
 * joining the one already open) and {@link release}s it when done. When the last reader leaves,
 * the descriptor is closed at the end of the current turn of the event loop: readers that follow
 * each other in a `for … await` loop still share it, but nothing stays open across idle time.
 *
 * A descriptor keeps reading the file it opened even after the path is replaced (`rename`), so a
 * reader could see an outdated object for as long as the descriptor is shared. That is bounded
 * three ways: {@link retire} (called by the store's own `set`/`delete`) makes the next read open the
 * new file; a descriptor older than `maxShareMs` takes no new readers; and an idle one is closed.
 */
export class SharedFiles {
  private readonly files = new Map<string, SharedFile>();

  constructor(
    private readonly slots: Slots,
    private readonly maxShareMs: number,
  ) {}

  /**
   * Starts one reader's use of the descriptor for `path`, shared with overlapping reads. Wait for
   * it with {@link ready} (which rejects with the open's error, for example `ENOENT`); in every
   * case the caller must call {@link release} exactly once.
   */
  acquire(path: string): SharedFile {
    const now = performance.now();
    const current = this.files.get(path);
    if (current !== undefined) {
      if (!current.retired && now - current.openedAt <= this.maxShareMs) {
        current.users++;
        if (current.idle !== undefined) {
          clearImmediate(current.idle);
          current.idle = undefined;
        }
        return current;
      }
      this.detach(current);
    }
    const opening = this.slots.tryTake() ? openFd(path) : this.slots.take().then(() => openFd(path));
    // The handlers run after `file` is assigned below (a promise never settles synchronously).
    let file: SharedFile;
    const opened = opening.then(
      (fd) => {
        file.fd = fd;
        if (file.users === 0) this.closeNow(file);
        return fd;
      },
      (err: unknown) => {
        this.slots.give();
        this.detach(file);
        throw err;
      },
    );
    // Callers await `opened`; this keeps an open nobody waits for any more from being reported.
    opened.catch(() => {});
    file = { fd: -1, opened, path, users: 1, openedAt: now, retired: false, idle: undefined };
    this.files.set(path, file);
    return file;
  }

  /** Waits until `file` is open, or rejects when `signal` aborts first. */
  ready(file: SharedFile, signal: AbortSignal | undefined): Promise<number> | number {
    if (file.fd >= 0) return file.fd;
    return raceAbort(file.opened, signal);
  }

  /** Ends one reader's use of `file`; the last one schedules the close. */
  release(file: SharedFile): void {
    file.users--;
    if (file.users > 0) return;
    if (file.fd < 0) return; // still opening (closed when the open lands) or failed (nothing to close)
    if (file.retired) {
      this.closeNow(file);
      return;
    }
    file.idle = setImmediate(() => {
      file.idle = undefined;
      if (file.users === 0) this.closeNow(file);
    });
  }

  /** Makes the next read of `path` open it afresh; reads in flight finish on the old descriptor. */
  retire(path: string): void {
    const file = this.files.get(path);
    if (file === undefined) return;
    this.detach(file);
    if (file.users === 0 && file.fd >= 0) {
      if (file.idle !== undefined) clearImmediate(file.idle);
      file.idle = undefined;
      this.closeNow(file);
    }
  }

  private detach(file: SharedFile): void {
    file.retired = true;
    if (this.files.get(file.path) === file) this.files.delete(file.path);
  }

  private closeNow(file: SharedFile): void {
    this.detach(file);
    const fd = file.fd;
    if (fd < 0) return;
    file.fd = -2; // closed: never closed twice
    closeFd(fd, () => this.slots.give());
  }
}
