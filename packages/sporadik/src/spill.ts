/**
 * Temporary space for the streaming writer: append-only files it spills to while rows arrive and
 * reads back in order afterwards. This module is the contract and an in-memory space (browsers,
 * tests, small matrices); the Node entry has one on disk (`spill-files.ts`).
 *
 * @module
 */

import { SporadikError } from "./errors.js";

/** One append-only temporary file. */
export interface SpillFile {
  /** Bytes appended so far. */
  readonly bytes: number;
  /** Append `parts`, in order. The caller may reuse their buffers once this resolves. */
  append(parts: readonly Uint8Array[]): Promise<void>;
  /** `length` bytes from `offset` (all of them: never short). */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Remove the file; reading it afterwards is an error. */
  remove(): Promise<void>;
}

/** Where spill files live, and how many bytes they held at most. */
export interface SpillSpace {
  /** A new empty file. */
  create(name: string): Promise<SpillFile>;
  /** Bytes appended to every file of this space so far (removed files included). */
  readonly bytesSpilled: number;
  /** The most bytes the space's files held at once. */
  readonly peakBytes: number;
  /** Remove every file and the space itself. Safe to call twice. */
  dispose(): Promise<void>;
}

/** Byte accounting shared by the spaces. */
export class SpillMeter {
  bytesSpilled = 0;
  liveBytes = 0;
  peakBytes = 0;
  grow(bytes: number): void {
    this.bytesSpilled += bytes;
    this.liveBytes += bytes;
    if (this.liveBytes > this.peakBytes) this.peakBytes = this.liveBytes;
  }
  shrink(bytes: number): void {
    this.liveBytes -= bytes;
  }
}

/** The refusal to use spill file `name` after it was removed. */
export function removed(name: string, what: string): SporadikError {
  return new SporadikError(`spill file ${name} was removed; ${what}.`, { tag: "StateError", object: name });
}

/** The refusal to read `[offset, offset + length)` of spill file `name`, which holds `bytes`. */
export function outsideSpill(name: string, bytes: number, offset: number, length: number): SporadikError {
  return new SporadikError(
    `spill file ${name} holds ${bytes} bytes, so [${offset}, ${offset + length}) cannot be read.`,
    { tag: "InvalidArgument", object: name, expected: `[0, ${bytes})`, found: [offset, offset + length] },
  );
}

class MemoryFile implements SpillFile {
  #parts: Uint8Array[] = [];
  #flat: Uint8Array | undefined;
  #removed = false;
  bytes = 0;
  constructor(
    readonly name: string,
    private readonly meter: SpillMeter,
  ) {}

  async append(parts: readonly Uint8Array[]): Promise<void> {
    if (this.#removed) throw removed(this.name, "nothing can be appended to it");
    for (const part of parts) {
      this.#parts.push(part.slice());
      this.bytes += part.byteLength;
      this.meter.grow(part.byteLength);
    }
    this.#flat = undefined;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (this.#removed) throw removed(this.name, "it cannot be read");
    if (offset < 0 || offset + length > this.bytes) {
      throw outsideSpill(this.name, this.bytes, offset, length);
    }
    if (this.#flat === undefined) {
      const flat = new Uint8Array(this.bytes);
      let at = 0;
      for (const part of this.#parts) {
        flat.set(part, at);
        at += part.byteLength;
      }
      this.#parts = [flat];
      this.#flat = flat;
    }
    return this.#flat.slice(offset, offset + length);
  }

  async remove(): Promise<void> {
    if (this.#removed) return;
    this.#removed = true;
    this.meter.shrink(this.bytes);
    this.#parts = [];
    this.#flat = undefined;
  }
}

/** A spill space in memory: the same contract, for browsers, tests and small matrices. */
export class MemorySpill implements SpillSpace {
  readonly #meter = new SpillMeter();
  readonly #files: MemoryFile[] = [];

  async create(name: string): Promise<SpillFile> {
    const file = new MemoryFile(name, this.#meter);
    this.#files.push(file);
    return file;
  }

  get bytesSpilled(): number {
    return this.#meter.bytesSpilled;
  }

  get peakBytes(): number {
    return this.#meter.peakBytes;
  }

  async dispose(): Promise<void> {
    for (const file of this.#files) await file.remove();
    this.#files.length = 0;
  }
}
