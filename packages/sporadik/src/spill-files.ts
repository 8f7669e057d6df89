/**
 * Spill space on disk for the streaming writer (Node only): one folder `.sporadik-spill-*` under a
 * parent the caller picks (the output's parent, or a `--tmp-dir`), holding an `owner.json` (process
 * id, host, start time) and the spill files. Files are opened only while they are appended to or
 * read (a few at a time), so a thousand gene blocks never hold a thousand descriptors.
 *
 * The folder is removed by {@link FileSpill.dispose} (success or failure), on `process.exit`, and,
 * when asked, on SIGINT/SIGTERM. A folder left by a killed process (SIGKILL, power loss) is found by
 * {@link sweepStaleSpills} on the next run: its owner is no longer alive, so it is removed and reported.
 *
 * @module
 */
import { existsSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { processAlive } from "@deltacells/storage/node";
import { Limiter } from "./chunks.js";
import { IncompleteError, SporadikError } from "./errors.js";
import { outsideSpill, removed, type SpillFile, SpillMeter, type SpillSpace } from "./spill.js";

/** The name every spill folder starts with. */
export const SPILL_PREFIX = ".sporadik-spill-";

interface Owner {
  pid: number;
  host: string;
  started: string;
}

class DiskFile implements SpillFile {
  bytes = 0;
  #removed = false;
  #reader: Promise<import("node:fs/promises").FileHandle> | undefined;
  constructor(
    readonly path: string,
    private readonly meter: SpillMeter,
    private readonly limiter: Limiter,
  ) {}

  async append(parts: readonly Uint8Array[]): Promise<void> {
    if (this.#removed) throw removed(this.path, "nothing can be appended to it");
    let total = 0;
    for (const part of parts) total += part.byteLength;
    await this.limiter.run(async () => {
      const handle = await open(this.path, "a");
      try {
        if (parts.length !== 1) await handle.writev(parts as Uint8Array[]);
        else {
          // One write for the whole part, not fs.appendFile's 512 KiB writes: each of those waits
          // for the JavaScript thread to start the next, so an append made while the writer sorts
          // the next batch (see StreamWriter) stood still until the sort was done.
          const part = parts[0] as Uint8Array;
          for (let at = 0; at < part.byteLength; ) {
            at += (await handle.write(part, at, part.byteLength - at)).bytesWritten;
          }
        }
      } finally {
        await handle.close();
      }
    });
    this.bytes += total;
    this.meter.grow(total);
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (this.#removed) throw removed(this.path, "it cannot be read");
    if (offset < 0 || offset + length > this.bytes) {
      throw outsideSpill(this.path, this.bytes, offset, length);
    }
    // One handle kept for reading: a file is read back front to back, in many frames.
    this.#reader ??= open(this.path, "r");
    const handle = await this.#reader;
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await handle.read(out, done, length - done, offset + done);
      if (bytesRead === 0) {
        throw new IncompleteError(
          `spill file ${this.path} ended at ${offset + done} bytes, though ${this.bytes} were appended: something else truncated it.`,
          { object: this.path, expected: this.bytes, found: offset + done },
        );
      }
      done += bytesRead;
    }
    return out;
  }

  async remove(): Promise<void> {
    if (this.#removed) return;
    this.#removed = true;
    const reader = this.#reader;
    this.#reader = undefined;
    if (reader) await (await reader).close();
    await rm(this.path, { force: true });
    this.meter.shrink(this.bytes);
  }
}

/** Options of {@link FileSpill.create}. */
export interface FileSpillOptions {
  /** Files appended to or read at once. Default 8. */
  openFiles?: number;
  /**
   * Also remove the folder on SIGINT and SIGTERM, then end the process as the signal would (exit
   * code 128 + signal). For command-line tools; a library leaves signals to its host. Default false.
   */
  removeOnSignal?: boolean;
}

/** A spill space in a fresh folder under `parent`. */
export class FileSpill implements SpillSpace {
  readonly #meter = new SpillMeter();
  readonly #limiter: Limiter;
  readonly #files: DiskFile[] = [];
  #count = 0;
  #disposed = false;
  readonly #onExit: () => void;
  readonly #onSignal: ((signal: NodeJS.Signals) => void) | undefined;

  private constructor(
    /** The folder holding the spill files. */
    readonly dir: string,
    options: FileSpillOptions,
  ) {
    this.#limiter = new Limiter(options.openFiles ?? 8);
    this.#onExit = () => this.#removeNow();
    process.once("exit", this.#onExit);
    if (options.removeOnSignal) {
      this.#onSignal = (signal) => {
        this.#removeNow();
        process.exit(128 + (signal === "SIGINT" ? 2 : 15));
      };
      process.once("SIGINT", this.#onSignal);
      process.once("SIGTERM", this.#onSignal);
    }
  }

  /** Make the folder (and `parent`, if missing) and record who owns it. */
  static async create(parent: string, options: FileSpillOptions = {}): Promise<FileSpill> {
    await mkdir(parent, { recursive: true });
    const dir = await mkdtemp(join(parent, SPILL_PREFIX));
    const owner: Owner = { pid: process.pid, host: hostname(), started: new Date().toISOString() };
    await writeFile(join(dir, "owner.json"), JSON.stringify(owner));
    return new FileSpill(dir, options);
  }

  async create(name: string): Promise<SpillFile> {
    if (this.#disposed)
      throw new SporadikError(`spill folder ${this.dir} was removed; no file can be made in it.`, {
        tag: "StateError",
        object: this.dir,
      });
    const safe = name.replace(/[^A-Za-z0-9._-]+/g, "_").slice(-80);
    const file = new DiskFile(join(this.dir, `${this.#count++}-${safe}`), this.#meter, this.#limiter);
    this.#files.push(file);
    return file;
  }

  get bytesSpilled(): number {
    return this.#meter.bytesSpilled;
  }

  get peakBytes(): number {
    return this.#meter.peakBytes;
  }

  #removeNow(): void {
    if (existsSync(this.dir)) rmSync(this.dir, { recursive: true, force: true });
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    process.off("exit", this.#onExit);
    if (this.#onSignal) {
      process.off("SIGINT", this.#onSignal);
      process.off("SIGTERM", this.#onSignal);
    }
    for (const file of this.#files) await file.remove().catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A spill folder found by {@link sweepStaleSpills}. */
export interface StaleSpill {
  path: string;
  bytes: number;
  /** Removed (its owner is gone), or kept (its owner may still run, or it is another host's). */
  removed: boolean;
  owner: Partial<Owner> | undefined;
}

async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    total += (await stat(join(dir, name)).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

function ownerOf(text: string | undefined): Partial<Owner> | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as Partial<Owner>;
  } catch {
    return undefined;
  }
}

/**
 * The spill folders under `parent` left by earlier runs. A folder whose owner (same host) is no
 * longer running is removed; any other is reported and kept, for a person to judge.
 */
export async function sweepStaleSpills(parent: string): Promise<StaleSpill[]> {
  const found: StaleSpill[] = [];
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(SPILL_PREFIX)) continue;
    const path = join(parent, name);
    const owner = ownerOf(await readFile(join(path, "owner.json"), "utf8").catch(() => undefined));
    const bytes = await sizeOf(path);
    const orphan =
      owner !== undefined &&
      owner.host === hostname() &&
      typeof owner.pid === "number" &&
      owner.pid !== process.pid &&
      !processAlive(owner.pid);
    if (orphan) await rm(path, { recursive: true, force: true });
    found.push({ path, bytes, removed: orphan, owner });
  }
  return found;
}
