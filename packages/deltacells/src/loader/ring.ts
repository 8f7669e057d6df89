/**
 * The loader's batches in a file another process maps (`LoaderOptions.sharedBatches`): a ring of
 * slots, one batch's CSR arrays, cell numbers and category codes each, written where the decoders
 * and the assembler write them (a pool's workers
 * map the file themselves, see codec/mapped.ts), so that the other process wraps a batch without
 * a copy. A slot is lent with its batch and comes back when the batch is released: nothing is
 * written into a slot whose batch has not been released, however long that takes; the loader
 * waits for a slot instead, or, once told to `spill`, makes the batch in its own memory.
 *
 * Each slot starts with a header that names the batch it holds (written before the batch is
 * handed out), so the reading side can check that a slot holds the batch it was told about.
 */
import { allocateMapped, type MappedFile, mapFile, sizeMappedFile } from "../codec/mapped.js";
import { DeltacellsError } from "../errors.js";
import { type Batch, BatchArrays, type BatchSource } from "./batch.js";
import { STOPPED } from "./feed.js";
import type { MemoryLedger } from "./memory.js";
import type { BatchObsColumn } from "./obs.js";

/** `LoaderOptions.sharedBatches`: the file the loader's batches are made in. */
export interface SharedBatchesOptions {
  /**
   * An open read-write file descriptor (a Linux memfd, a file on tmpfs) that nothing else writes:
   * the loader sizes it, allocates its blocks (an error now, not a crash later, when memory is
   * short) and maps it; the descriptor must stay open while the loader lives.
   */
  fd: number;
  /**
   * Slots (batches at once) in it. Default: as many batch buffers as the loader holds at once
   * (see docs/loader.md, "Memory and prefetch"); at least {@link SharedBatchesLayout.minFree} + 1.
   */
  slots?: number;
}

/** How the file is laid out, fixed for the loader's life: what the other process maps. */
export interface SharedBatchesLayout {
  /** Slots in the file; slot `k` starts at byte `k * slotBytes`. */
  slots: number;
  /** Bytes of one slot (a multiple of 64 KiB, so that a slot may be mapped alone). */
  slotBytes: number;
  /** The file's size: `slots * slotBytes`. */
  bytes: number;
  /** Nonzeros a slot holds; a batch denser than that is made in the loader's own memory. */
  capacity: number;
  /** Cells a slot holds (the batch size). */
  cells: number;
  /** The counts' type in `data`. */
  values: "int32" | "float32";
  /**
   * Byte offsets within a slot: `header` (64 bytes: see {@link SLOT_MAGIC}), `cells` (float64,
   * cells: each row's cell number, as `Batch.cells`), `indptr` (float64, cells + 1), `indices`
   * (int32, capacity), `data` (`values`, capacity).
   */
  offsets: { header: number; cells: number; indptr: number; indices: number; data: number };
  /**
   * The category obs columns whose codes a slot holds (int32, cells; -1 where missing, as
   * `Batch.obs[name].codes`), by name: each one's byte offset within a slot. Other obs kinds are
   * not in the slots.
   */
  obs: Record<string, number>;
  /**
   * Slots the loader needs free to finish its next batch. A consumer that holds more than
   * `slots - minFree` of the batches it was given would wait for a batch the loader cannot make:
   * it must `spill()` before it waits.
   */
  minFree: number;
}

/** A loader's shared batch file, as its consumer sees it (`loader.sharedBatches`). */
export interface SharedBatches {
  readonly layout: SharedBatchesLayout;
  /**
   * The slot holding `batch` and the sequence number its header carries, or undefined when the
   * batch is in the loader's own memory (denser than a slot, or made while spilling).
   */
  slotOf(batch: Batch): { slot: number; seq: number } | undefined;
  /**
   * Until the next batch in a slot is released, a batch that finds no free slot is made in the
   * loader's own memory instead of waiting for one (a consumer holding many batches).
   */
  spill(): void;
}

/**
 * A slot header's first word ("DCSB" little-endian). The header, 64 bytes: uint32 magic, uint32
 * {@link SLOT_VERSION}, then float64 sequence number (counting the batches made in slots, from
 * 0), epoch, index, size (cells) and nnz of the batch the slot holds.
 */
export const SLOT_MAGIC = 0x42534344;
/** 2: the slot holds the batch's cell numbers and category codes too. */
export const SLOT_VERSION = 2;
const HEADER_BYTES = 64;
const SLOT_ALIGN = 64 * 1024;

const align = (n: number, to: number) => Math.ceil(n / to) * to;

/**
 * The layout of `slots` slots of `cells` cells and `capacity` nonzeros, with the codes of the
 * category columns `categories`.
 */
export function sharedBatchesLayout(
  slots: number,
  cells: number,
  capacity: number,
  values: "int32" | "float32",
  minFree: number,
  categories: readonly string[] = [],
): SharedBatchesLayout {
  const cellsAt = HEADER_BYTES;
  const indptr = align(cellsAt + 8 * cells, 64);
  let at = align(indptr + 8 * (cells + 1), 64);
  const obs: Record<string, number> = {};
  for (const name of categories) {
    obs[name] = at;
    at = align(at + 4 * cells, 64);
  }
  const indices = at;
  const data = align(indices + 4 * capacity, 64);
  const slotBytes = align(data + 4 * capacity, SLOT_ALIGN);
  return {
    slots,
    slotBytes,
    bytes: slots * slotBytes,
    capacity,
    cells,
    values,
    offsets: { header: 0, cells: cellsAt, indptr, indices, data },
    obs,
    minFree,
  };
}

/** The ring: the loader's {@link BatchSource} and its consumer's {@link SharedBatches}. */
export class BatchRing implements BatchSource, SharedBatches {
  private readonly file: MappedFile;
  private readonly buffer: ArrayBuffer;
  private readonly slots: BatchArrays[];
  /** Whether each slot's pages are allocated (on its first use, beside the decoding). */
  private readonly allocated: boolean[];
  private readonly free: BatchArrays[];
  private readonly seqs: Float64Array;
  private seq = 0;
  private spilling = false;
  private readonly waiters: { resolve: (a: BatchArrays) => void; reject: (e: unknown) => void }[] = [];
  /** Arrays made while spilling, kept for the next spilled batches. */
  private readonly spilled: BatchArrays[] = [];

  constructor(
    fd: number,
    readonly layout: SharedBatchesLayout,
    nCols: number,
    /** Spilled batches' arrays in shared memory (a pool's workers write them). */
    private readonly shared: boolean,
    private readonly ledger: MemoryLedger,
  ) {
    sizeMappedFile(fd, layout.bytes);
    this.file = { id: randomId(), fd, length: layout.bytes };
    this.buffer = mapFile(this.file);
    this.allocated = new Array<boolean>(layout.slots).fill(false);
    const { cells, capacity, offsets, slotBytes, values } = layout;
    this.slots = Array.from({ length: layout.slots }, (_, slot) => {
      const at = slot * slotBytes;
      const home = {
        slot,
        cells: new Float64Array(this.buffer, at + offsets.cells, cells),
        indptr: new Float64Array(this.buffer, at + offsets.indptr, cells + 1),
        indices: new Int32Array(this.buffer, at + offsets.indices, capacity),
        data:
          values === "float32"
            ? new Float32Array(this.buffer, at + offsets.data, capacity)
            : new Int32Array(this.buffer, at + offsets.data, capacity),
      };
      return new BatchArrays(cells, nCols, "csr", values, capacity, true, ledger, home);
    });
    this.free = [...this.slots].reverse();
    this.seqs = new Float64Array(layout.slots).fill(-1);
    ledger.addBatches(layout.bytes);
  }

  acquire(): BatchArrays | Promise<BatchArrays> {
    const a = this.free.pop();
    if (a !== undefined) {
      const slot = a.home!.slot;
      if (!this.allocated[slot]) {
        // On first use, not all up front: the ring's pages cost about what the decoders' first
        // writes would, and slot by slot they come while the pool decodes.
        try {
          allocateMapped(this.file, slot * this.layout.slotBytes, this.layout.slotBytes);
        } catch (err) {
          this.free.push(a);
          throw err;
        }
        this.allocated[slot] = true;
      }
      return a;
    }
    if (this.spilling) return this.spill1();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  release(a: BatchArrays): void {
    if (a.home === undefined) {
      if (this.spilled.length < this.layout.minFree) this.spilled.push(a);
      else this.ledger.addBatches(-a.bytes);
      return;
    }
    a.restore();
    this.seqs[a.home.slot] = -1;
    this.spilling = false;
    const w = this.waiters.shift();
    if (w !== undefined) w.resolve(a);
    else this.free.push(a);
  }

  cancelWaits(reason: unknown = STOPPED): void {
    for (const w of this.waiters.splice(0)) w.reject(reason);
  }

  spill(): void {
    this.spilling = true;
    for (const w of this.waiters.splice(0)) w.resolve(this.spill1());
  }

  private spill1(): BatchArrays {
    const { cells, capacity, values } = this.layout;
    return (
      this.spilled.pop() ??
      new BatchArrays(cells, this.slots[0]!.nCols, "csr", values, capacity, this.shared, this.ledger)
    );
  }

  /**
   * Writes the header of the slot `a` is in (if in one) for the batch it is lent as, and the
   * codes of the category columns the layout holds (the cell numbers are there already).
   */
  seal(
    a: BatchArrays,
    f: { epoch: number; index: number; size: number; nnz: number },
    obs: Readonly<Record<string, BatchObsColumn>>,
  ): void {
    if (!a.inSlot) return;
    const slot = a.home!.slot;
    const base = slot * this.layout.slotBytes;
    // (The layout names the loader's category columns, which every batch carries.)
    for (const [name, offset] of Object.entries(this.layout.obs)) {
      const codes = (obs[name] as Extract<BatchObsColumn, { kind: "category" }>).codes;
      new Int32Array(this.buffer, base + offset, f.size).set(codes.subarray(0, f.size));
    }
    const at = base + this.layout.offsets.header;
    const seq = this.seq++;
    const words = new Uint32Array(this.buffer, at, 2);
    const fields = new Float64Array(this.buffer, at + 8, 5);
    fields[0] = seq;
    fields[1] = f.epoch;
    fields[2] = f.index;
    fields[3] = f.size;
    fields[4] = f.nnz;
    words[0] = SLOT_MAGIC;
    words[1] = SLOT_VERSION;
    this.seqs[slot] = seq;
  }

  slotOf(batch: Batch): { slot: number; seq: number } | undefined {
    if (batch.format !== "csr" || batch.indices.buffer !== this.buffer) return undefined;
    const { slotBytes, offsets } = this.layout;
    const slot = Math.floor(batch.indices.byteOffset / slotBytes);
    if (batch.indices.byteOffset !== slot * slotBytes + offsets.indices) return undefined;
    const seq = this.seqs[slot];
    return seq === undefined || seq < 0 ? undefined : { slot, seq };
  }
}

/** Refuses a ring too small for the loader to make progress while its consumer holds a batch. */
export function checkRingSlots(slots: number, minFree: number): void {
  if (!Number.isSafeInteger(slots) || slots < minFree + 1)
    throw new DeltacellsError(
      `loader option sharedBatches.slots is ${slots} but the loader needs ${minFree} free slots to finish a batch while its consumer holds one: give at least ${minFree + 1}`,
      { tag: "InvalidInput", field: "sharedBatches.slots", expected: `>= ${minFree + 1}`, found: slots },
    );
}

function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
