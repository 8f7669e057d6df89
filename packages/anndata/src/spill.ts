/**
 * Turning entries that arrive in any order (a CSC matrix read column by column, an unsorted
 * Matrix Market file) into canonical row blocks with bounded memory. Node-only.
 *
 * Strategy: one sequential pass over the input distributes (cell, gene, value) entries into
 * buckets of consecutive cells (each bucket a whole number of row blocks). Small inputs keep the
 * single bucket in memory. Larger ones get up to 1024 buckets, each with a small in-memory buffer
 * that is appended to its own temporary file when full; afterwards the buckets are read back one
 * at a time, sorted by cell (counting sort) and cut into row blocks. Peak memory is the bucket
 * buffers (at most 1024 x 24 KB) plus one bucket (~`spillBytes`, 32 MB by default, more only when
 * a single row block is larger). The cost is writing and reading the entries once more through
 * the temporary folder (12 bytes per nonzero), which is removed when the iteration ends.
 */

import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BadCount, countProblem, RowBlockBuilder } from "./canonical.js";
import type { CanonicalRowBlock } from "./types.js";

const ENTRY_INTS = 3; // cell offset in bucket, gene, value
const BUFFER_ENTRIES = 2048;
const MAX_BUCKETS = 1024;

export interface SpillOptions {
  blockCells: number;
  /** Upper bound on the nonzeros that will be added (sizes the buckets). */
  nnzHint: number;
  /** Target bytes per bucket; inputs below it stay in memory. */
  spillBytes?: number;
  /** Where temporary files go (default: the OS temp folder). */
  tmpDir?: string;
}

/**
 * Collects entries in any order, then yields canonical row blocks in cell order. Values are
 * validated as they are added; the first bad value in cell order (then gene order) is thrown as
 * {@link BadCount} by {@link blocks}, before any block is yielded.
 */
export class CellBucketSpill {
  private readonly bucketCells: number;
  private readonly nBuckets: number;
  private readonly buffers: Int32Array[];
  private readonly fill: Int32Array;
  private readonly inMemory: boolean;
  private dir: string | undefined;
  private bad: BadCount | undefined;

  constructor(
    readonly nCells: number,
    readonly nGenes: number,
    private readonly opts: SpillOptions,
  ) {
    const target = opts.spillBytes ?? 32 * 1024 * 1024;
    const wanted = Math.min(MAX_BUCKETS, Math.max(1, Math.ceil((opts.nnzHint * ENTRY_INTS * 4) / target)));
    const blocks = Math.max(1, Math.ceil(nCells / opts.blockCells));
    const blocksPerBucket = Math.ceil(blocks / wanted);
    this.bucketCells = blocksPerBucket * opts.blockCells;
    this.nBuckets = Math.max(1, Math.ceil(nCells / this.bucketCells));
    this.inMemory = this.nBuckets === 1;
    const initial = this.inMemory ? Math.max(BUFFER_ENTRIES, opts.nnzHint) : BUFFER_ENTRIES;
    this.buffers = Array.from({ length: this.nBuckets }, () => new Int32Array(0));
    this.buffers[0] = new Int32Array(initial * ENTRY_INTS);
    this.fill = new Int32Array(this.nBuckets);
  }

  /** Adds one entry; zeros are dropped, non-counts remembered (the first in cell order wins). */
  add(cell: number, gene: number, value: number): void {
    if (value === 0) return;
    const problem = countProblem(value);
    if (problem !== undefined) {
      const b = this.bad;
      if (b === undefined || cell < b.cell || (cell === b.cell && gene < b.gene)) {
        this.bad = new BadCount(cell, gene, value, problem);
      }
      return;
    }
    const bucket = Math.floor(cell / this.bucketCells);
    let buf = this.buffers[bucket] as Int32Array;
    let n = this.fill[bucket] as number;
    if ((n + 1) * ENTRY_INTS > buf.length) {
      if (this.inMemory || buf.length === 0) {
        const grown = new Int32Array(Math.max(BUFFER_ENTRIES * ENTRY_INTS, buf.length * 2));
        grown.set(buf.subarray(0, n * ENTRY_INTS));
        buf = grown;
        this.buffers[bucket] = buf;
      }
      if ((n + 1) * ENTRY_INTS > buf.length) {
        this.flush(bucket);
        n = 0;
      }
    }
    const o = n * ENTRY_INTS;
    buf[o] = cell - bucket * this.bucketCells;
    buf[o + 1] = gene;
    buf[o + 2] = value;
    this.fill[bucket] = n + 1;
  }

  private bucketFile(bucket: number): string {
    this.dir ??= mkdtempSync(join(this.opts.tmpDir ?? tmpdir(), "deltacells-spill-"));
    return join(this.dir, `${bucket}.bin`);
  }

  private flush(bucket: number): void {
    const n = this.fill[bucket] as number;
    if (n === 0) return;
    const buf = this.buffers[bucket] as Int32Array;
    appendFileSync(this.bucketFile(bucket), new Uint8Array(buf.buffer, buf.byteOffset, n * ENTRY_INTS * 4));
    this.fill[bucket] = 0;
  }

  /** Whether entries went to temporary files (for tests and diagnostics). */
  get spilled(): boolean {
    return this.dir !== undefined;
  }

  /** Yields the row blocks in cell order and removes the temporary files. */
  async *blocks(signal?: AbortSignal): AsyncGenerator<CanonicalRowBlock> {
    try {
      if (this.bad) throw this.bad;
      for (let bucket = 0; bucket < this.nBuckets; bucket++) {
        signal?.throwIfAborted();
        const entries = this.takeBucket(bucket);
        const first = bucket * this.bucketCells;
        const cells = Math.min(this.bucketCells, this.nCells - first);
        yield* this.cut(first, cells, entries);
      }
      if (this.nCells === 0) yield new RowBlockBuilder(0, 0, this.nGenes).finish();
    } finally {
      this.dispose();
    }
  }

  /** The bucket's entries: its file (if any) followed by its buffer. */
  private takeBucket(bucket: number): Int32Array {
    const n = this.fill[bucket] as number;
    const buf = (this.buffers[bucket] as Int32Array).subarray(0, n * ENTRY_INTS);
    this.buffers[bucket] = new Int32Array(0);
    if (this.dir === undefined) return buf;
    let fromFile: Uint8Array;
    try {
      fromFile = readFileSync(join(this.dir, `${bucket}.bin`));
    } catch {
      return buf;
    }
    const all = new Int32Array(fromFile.byteLength / 4 + buf.length);
    all.set(new Int32Array(fromFile.buffer, fromFile.byteOffset, fromFile.byteLength / 4));
    all.set(buf, fromFile.byteLength / 4);
    return all;
  }

  /** Counting sort of a bucket's entries by cell, then one builder per row block. */
  private *cut(first: number, cells: number, entries: Int32Array): Generator<CanonicalRowBlock> {
    const n = entries.length / ENTRY_INTS;
    const start = new Float64Array(cells + 1);
    for (let k = 0; k < n; k++) {
      const c = (entries[k * ENTRY_INTS] as number) + 1;
      start[c] = (start[c] as number) + 1;
    }
    for (let c = 0; c < cells; c++) start[c + 1] = (start[c + 1] as number) + (start[c] as number);
    const pos = start.slice(0, cells);
    const genes = new Int32Array(n);
    const values = new Int32Array(n);
    for (let k = 0; k < n; k++) {
      const c = entries[k * ENTRY_INTS] as number;
      const p = pos[c] as number;
      genes[p] = entries[k * ENTRY_INTS + 1] as number;
      values[p] = entries[k * ENTRY_INTS + 2] as number;
      pos[c] = p + 1;
    }
    for (let b = 0; b < cells; b += this.opts.blockCells) {
      const rows = Math.min(this.opts.blockCells, cells - b);
      const builder = new RowBlockBuilder(
        first + b,
        rows,
        this.nGenes,
        (start[b + rows] as number) - (start[b] as number),
      );
      for (let r = b; r < b + rows; r++) {
        builder.pushMany(genes, values, start[r] as number, start[r + 1] as number);
        builder.endRow();
      }
      yield builder.finish();
    }
  }

  /** Removes temporary files; safe to call more than once. */
  dispose(): void {
    if (this.dir !== undefined) {
      rmSync(this.dir, { recursive: true, force: true });
      this.dir = undefined;
    }
  }
}
