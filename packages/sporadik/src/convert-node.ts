/**
 * A conversion into a sporadik store in Node: {@link writeStoreFromRowBlocks} with what a run on a
 * real matrix needs around it. Before the first row is read: the temporary folders of killed
 * conversions are swept, the temporary space is estimated and refused when the disk cannot hold
 * it, a matrix of known size over the nonzero bound is refused. While writing: the bound is
 * checked as the rows come (a source of unknown size stops early). After a failure: a folder the
 * run created is removed, so nothing half-written is left to look like a store.
 *
 * @module
 */
import { existsSync, statfsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, resolve } from "node:path";
import { SporadikError } from "./errors.js";
import { type StaleSpill, sweepStaleSpills } from "./spill-files.js";
import type { WritableStore } from "./store.js";
import { type RowBlock, type StreamWriteResult, temporaryBytesPerNonzero } from "./stream-writer.js";
import { type RowBlocksWriteOptions, writeStoreFromRowBlocks } from "./write-node.js";

/** The matrix holds more nonzeros than {@link ConvertToStoreOptions.maxNnz} allows. */
export class TooManyNonzerosError extends SporadikError {
  declare readonly _tag: "TooManyNonzeros";
  /** Nonzeros found (or counted so far, when the reading stopped early); also `found`. */
  readonly nnz: number;
  /** The bound in force; also `expected`. */
  readonly bound: number;
  constructor(message: string, options: { object?: string; nnz: number; bound: number }) {
    super(message, {
      tag: "TooManyNonzeros",
      object: options.object,
      expected: options.bound,
      found: options.nnz,
    });
    this.nnz = options.nnz;
    this.bound = options.bound;
  }
}

/** The temporary folder would not fit on its disk. */
export class NoTempSpaceError extends SporadikError {
  declare readonly _tag: "NoTempSpace";
  /** Bytes the conversion needs; also `expected`. */
  readonly needed: number;
  /** Bytes free on the disk of `object` (the temporary folder); also `found`. */
  readonly available: number;
  constructor(message: string, options: { object: string; needed: number; available: number }) {
    super(message, {
      tag: "NoTempSpace",
      object: options.object,
      expected: options.needed,
      found: options.available,
    });
    this.needed = options.needed;
    this.available = options.available;
  }
}

/** The temporary space a conversion needs, as {@link ConvertToStoreOptions.onTemporarySpace} is told. */
export interface TemporarySpace {
  /** The folder the temporary folder goes under (absolute). */
  folder: string;
  /** Bytes needed there, when the number of nonzeros is known or bounded. */
  bytes: number | undefined;
  /** Bytes needed per nonzero (the spill, and a byte-addressable output's arrays). */
  bytesPerNonzero: number;
  /** Bytes free on its disk, when the system says. */
  available: number | undefined;
}

/** Options of {@link convertToStore}. */
export interface ConvertToStoreOptions extends RowBlocksWriteOptions {
  /** The matrix as its messages name it (the input's path or URL). */
  source: string;
  /** Refuse a matrix of more nonzeros ({@link TooManyNonzerosError}). Default: no bound. */
  maxNnz?: number;
  /**
   * The local folder `store` writes into, when it is one: removed after a failure when
   * `removeOnFailure` says the run created it (a folder that was there before is left as it is).
   */
  folder?: string;
  removeOnFailure?: boolean;
  /** Told of each temporary folder a killed conversion left under `tmpDir` (removed, or kept while its owner may run). */
  onStaleSpill?: (spill: StaleSpill) => void;
  /** Told, before the first row is read, of the temporary space the write needs. */
  onTemporarySpace?: (space: TemporarySpace) => void;
  /** How messages name the options (a command line names its flags). Default: `maxNnz`, `tmpDir`. */
  optionNames?: { maxNnz?: string; tmpDir?: string };
}

function size(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** Bytes free on the disk of `folder` (or of its parent, before it exists), or undefined. */
function freeBytes(folder: string): number | undefined {
  try {
    const fs = statfsSync(existsSync(folder) ? folder : dirname(folder));
    return fs.bavail * fs.bsize;
  } catch {
    return undefined;
  }
}

/**
 * Write a sporadik store from CSR row blocks, as {@link writeStoreFromRowBlocks} does, checked as
 * a conversion is (see the module): refused before any row is read when `nnz` is over `maxNnz`
 * or the temporary space (about {@link temporaryBytesPerNonzero} bytes per nonzero, plus 8 per
 * nonzero and axis for a byte-addressable output) exceeds what the disk of `tmpDir` has free;
 * refused as soon as the rows pass `maxNnz`. `tmpDir` defaults to beside `folder`, else the
 * system's temporary folder.
 *
 *     const input = await openInput("pbmc.h5ad");
 *     await convertToStore(withFileParts(new FolderStore("pbmc.zarr"), "pbmc.zarr"), input.rowBlocks(), {
 *       source: "pbmc.h5ad",
 *       shape: [input.nCells, input.nGenes],
 *       nnzAtMost: input.nnz,
 *       folder: "pbmc.zarr",
 *       removeOnFailure: true,
 *     });
 */
export async function convertToStore(
  store: WritableStore,
  blocks: Iterable<RowBlock> | AsyncIterable<RowBlock>,
  options: ConvertToStoreOptions,
): Promise<StreamWriteResult & { temporary: TemporarySpace }> {
  const {
    source,
    maxNnz,
    folder,
    removeOnFailure,
    onStaleSpill,
    onTemporarySpace,
    optionNames,
    ...writeOptions
  } = options;
  const names = { maxNnz: "maxNnz", tmpDir: "tmpDir", ...optionNames };
  const tmpParent = resolve(options.tmpDir ?? (folder !== undefined ? dirname(folder) : tmpdir()));
  const tooMany = (nnz: number, bound: number, soFar: boolean) =>
    new TooManyNonzerosError(
      `${source} holds ${soFar ? "at least " : ""}${nnz.toLocaleString("en-US")} nonzeros, above the bound of ${bound.toLocaleString("en-US")} set with ${names.maxNnz}. The store was not finished (it has no block, so readers refuse it) and a new output was removed. Drop ${names.maxNnz} to convert it whatever its size.`,
      { object: source, nnz, bound },
    );
  try {
    for (const stale of await sweepStaleSpills(tmpParent)) onStaleSpill?.(stale);
    const { nnz, nnzAtMost, axes = [0, 1], byteAddressable = false, dtype = "int32" } = writeOptions;
    if (maxNnz !== undefined && nnz !== undefined && nnz > maxNnz) throw tooMany(nnz, maxNnz, false);
    const bytesPerNonzero =
      temporaryBytesPerNonzero({ axes, nnz, nnzAtMost, dtype }) + (byteAddressable ? 8 * axes.length : 0);
    const sizing = nnz ?? nnzAtMost;
    const temporary: TemporarySpace = {
      folder: tmpParent,
      bytes: sizing === undefined ? undefined : sizing * bytesPerNonzero,
      bytesPerNonzero,
      available: freeBytes(tmpParent),
    };
    const { bytes: needed, available } = temporary;
    if (needed !== undefined && available !== undefined && needed > available) {
      throw new NoTempSpaceError(
        `The conversion needs about ${size(needed)} of temporary space in ${tmpParent}, but only ${size(available)} is free there. Nothing was written. Point ${names.tmpDir} at a disk with room.`,
        { object: tmpParent, needed, available },
      );
    }
    onTemporarySpace?.(temporary);
    async function* bounded(): AsyncGenerator<RowBlock> {
      let seen = 0;
      for await (const block of blocks) {
        seen += (block.indptr[block.nRows] as number) - (block.indptr[0] as number);
        if (maxNnz !== undefined && seen > maxNnz) throw tooMany(seen, maxNnz, true);
        yield block;
      }
    }
    const result = await writeStoreFromRowBlocks(store, bounded(), { ...writeOptions, tmpDir: tmpParent });
    return { ...result, temporary };
  } catch (error) {
    if (removeOnFailure && folder !== undefined) await rm(folder, { recursive: true, force: true });
    throw error;
  }
}
