/**
 * The loader's batches as Arrow record batches (`deltacells stream`): one row per cell, `cell`
 * (int64), `indices` and `counts` (list<int32>, or with dense output only `counts` as a
 * fixed_size_list<float32>), then the obs columns in their dataset types (categories as
 * dictionaries of one shared vocabulary, so it crosses the stream once). The arrays are views of
 * the batch's buffers, never copies of the nonzeros: the caller writes them out before releasing
 * the batch. A batch in a shared batch file's slot (`deltacells stream --shm-fd`) leaves its rows
 * there: {@link ArrowBatches.slotBatch}.
 */
import type { NumericArray } from "@deltacells/storage";
import {
  Bool,
  type Data,
  DataType,
  Dictionary,
  Field,
  FixedSizeList,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  List,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
  type Vector,
  vectorFromArray,
} from "apache-arrow";
import type { ObsColumnSchema } from "../obs/schema.js";
import { type Batch, int64Of } from "./batch.js";
import type { BatchObsColumn } from "./obs.js";

/** Arrow lists index their values with int32: a batch holds fewer than 2^31 nonzeros (or dense values). */
export const MAX_LIST_VALUES = 2 ** 31 - 1;

const NUMERIC: Record<string, { type: () => DataType; array: (n: number) => NumericArray }> = {
  int8: { type: () => new Int8(), array: (n) => new Int8Array(n) },
  int16: { type: () => new Int16(), array: (n) => new Int16Array(n) },
  int32: { type: () => new Int32(), array: (n) => new Int32Array(n) },
  int64: { type: () => new Int64(), array: (n) => new BigInt64Array(n) },
  uint8: { type: () => new Uint8(), array: (n) => new Uint8Array(n) },
  uint16: { type: () => new Uint16(), array: (n) => new Uint16Array(n) },
  uint32: { type: () => new Uint32(), array: (n) => new Uint32Array(n) },
  uint64: { type: () => new Uint64(), array: (n) => new BigUint64Array(n) },
  float: { type: () => new Float32(), array: (n) => new Float32Array(n) },
  double: { type: () => new Float64(), array: (n) => new Float64Array(n) },
};

/** How one obs column is encoded: its Arrow field, and for a category the vocabulary sent once. */
interface ObsEncoding {
  schema: ObsColumnSchema;
  field: Field;
  vocabulary?: Vector<Utf8>;
}

/** What the stream's schema describes beyond the columns (JSON in the schema metadata). */
export interface StreamDescription {
  /** The gene of each output column (`var_names.txt`; the source index as text when there are none). */
  genes: string[];
  /** Everything else a consumer may check: dataset, settings, batches, padding (see the stream's help). */
  info: Record<string, unknown>;
}

/** Builds the record batches of one stream: the schema first, then one batch per loader batch. */
export class ArrowBatches {
  readonly schema: Schema;
  private readonly obs: ObsEncoding[];
  private readonly listField = new Field("item", new Int32(), false);
  private readonly floatField = new Field("item", new Float32(), false);

  constructor(
    dense: boolean,
    private readonly nGenes: number,
    obs: readonly ObsColumnSchema[],
    description: StreamDescription,
    /** CSR counts as list<float32> (the loader's `values: "float32"`) instead of list<int32>. */
    private readonly float32 = false,
  ) {
    this.obs = obs.map((c, i) => obsEncoding(c, i));
    const counts = dense
      ? new Field("counts", new FixedSizeList(nGenes, this.floatField), false)
      : float32
        ? new Field("counts", new List(this.floatField), false)
        : new Field("counts", new List(this.listField), false);
    const fields = [
      new Field("cell", new Int64(), false),
      ...(dense ? [] : [new Field("indices", new List(this.listField), false)]),
      counts,
      ...this.obs.map((o) => o.field),
    ];
    this.schema = new Schema(
      fields,
      new Map([
        ["deltacells.genes", JSON.stringify(description.genes)],
        ["deltacells.stream", JSON.stringify(description.info)],
      ]),
    );
  }

  /** The vocabulary of category column `name`, as sent with the first batch. */
  vocabulary(name: string): Vector<Utf8> | undefined {
    return this.obs.find((o) => o.schema.name === name)?.vocabulary;
  }

  /**
   * `batch` as a record batch whose buffers are views of the batch's own arrays. With `slot` (the
   * batch is in that slot of a shared batch file, `deltacells stream --shm-fd`), its indices and
   * counts stay there: the lists are empty and the metadata names the slot and its sequence number.
   */
  recordBatch(batch: Batch, slot?: { slot: number; seq: number }): RecordBatch {
    const n = batch.size;
    const children: Data[] = [
      makeData({ type: new Int64(), length: n, data: int64Of(batch.cells.subarray(0, n)) }),
    ];
    if (slot !== undefined) {
      const offsets = new Int32Array(n + 1);
      const ints = makeData({
        type: new List(this.listField),
        length: n,
        nullCount: 0,
        valueOffsets: offsets,
        child: makeData({ type: new Int32(), length: 0, data: new Int32Array(0) }),
      });
      const floats = makeData({
        type: new List(this.floatField),
        length: n,
        nullCount: 0,
        valueOffsets: offsets,
        child: makeData({ type: new Float32(), length: 0, data: new Float32Array(0) }),
      });
      children.push(ints, this.float32 ? floats : ints);
    } else if (batch.format === "dense") {
      const values = batch.values.subarray(0, n * this.nGenes);
      children.push(
        makeData({
          type: this.schema.fields[1]!.type as FixedSizeList<Float32>,
          length: n,
          nullCount: 0,
          child: makeData({ type: new Float32(), length: values.length, data: values }),
        }),
      );
    } else {
      const nnz = batch.indptr[n]!;
      const offsets = Int32Array.from(batch.indptr.subarray(0, n + 1));
      const list = (values: Int32Array) =>
        makeData({
          type: new List(this.listField),
          length: n,
          nullCount: 0,
          valueOffsets: offsets,
          child: makeData({ type: new Int32(), length: nnz, data: values }),
        });
      const floats = (values: Float32Array) =>
        makeData({
          type: new List(this.floatField),
          length: n,
          nullCount: 0,
          valueOffsets: offsets,
          child: makeData({ type: new Float32(), length: nnz, data: values }),
        });
      const data = batch.data.subarray(0, nnz);
      children.push(
        list(batch.indices.subarray(0, nnz)),
        // The counts in the schema's type, converted only when the loader's differ.
        this.float32
          ? floats(data instanceof Float32Array ? data : Float32Array.from(data))
          : list(data instanceof Int32Array ? data : Int32Array.from(data)),
      );
    }
    for (const o of this.obs) children.push(obsData(o, batch.obs[o.schema.name]!, n));
    return new RecordBatch(
      this.schema,
      makeData({ type: new Struct(this.schema.fields), length: n, nullCount: 0, children }),
      batchMetadata(batch, slot && { slot: slot.slot, seq: slot.seq }),
    );
  }

  /**
   * The record batch of a batch whose rows, cell numbers and obs are all in `slot` of a shared
   * batch file (every obs column a category: see `SharedBatchesLayout.obs`): no rows, the
   * metadata naming the slot, its sequence number and the batch's `size`. Its cost does not grow
   * with the batch: the consumer reads everything from the slot.
   */
  slotBatch(batch: Batch, slot: { slot: number; seq: number }): RecordBatch {
    return new RecordBatch(
      this.schema,
      makeData({ type: new Struct(this.schema.fields), length: 0, nullCount: 0, children: this.noRows() }),
      batchMetadata(batch, { slot: slot.slot, seq: slot.seq, size: batch.size }),
    );
  }

  private empty: Data[] | undefined;

  /** Each column with no rows (category columns keeping the vocabulary already sent), made once. */
  noRows(): Data[] {
    this.empty ??= this.schema.fields.map((f) =>
      DataType.isDictionary(f.type)
        ? makeData({
            type: f.type,
            length: 0,
            nullCount: 0,
            data: new Int32Array(0),
            dictionary: this.vocabulary(f.name),
          })
        : vectorFromArray([], f.type).data[0]!,
    );
    return this.empty;
  }
}

/** A batch's `deltacells.batch` metadata, with `more` (where its rows are) at its end. */
function batchMetadata(batch: Batch, more?: Record<string, number>): Map<string, string> {
  return new Map([
    [
      "deltacells.batch",
      JSON.stringify({
        epoch: batch.epoch,
        index: batch.index,
        ...(batch.globalIndex !== undefined && { global_index: batch.globalIndex }),
        padded: batch.padded,
        skipped: batch.skipped,
        ...(batch.format === "csr" && { sorted_indices: batch.sortedIndices }),
        ...more,
      }),
    ],
  ]);
}

/** The metadata key of the stream's last record batch, which only a complete epoch carries. */
export const END_KEY = "deltacells.end";

/** What the stream's last record batch says (JSON in its `deltacells.end` metadata). */
export interface StreamEnd {
  epoch: number;
  rank: number;
  world_size: number;
  /** The record batches written before it (the epoch's batches from `start_batch` on). */
  batches: number;
  /** Their rows, padding included. */
  rows: number;
  /** Elastic order (`--order elastic`): where the batches sit in the epoch's global sequence. */
  order?: "elastic";
  lanes?: number;
  /** The epoch's global batches; a batch's `global_index` at or past it is padding. */
  global_batches?: number;
  /** Global batches consumed before this run (`--start-global-batch`). */
  start_global_batch?: number;
  /** This rank's first global batch: it wrote `first_global_batch + k * world_size`, k < batches. */
  first_global_batch?: number;
}

/**
 * The metadata key of the record batch (no rows) that starts each epoch after the first of a
 * stream that serves several (`deltacells stream --serve`): what that epoch holds.
 */
export const EPOCH_KEY = "deltacells.epoch";

/** What an epoch served after the first holds (JSON in its `deltacells.epoch` batch). */
export interface StreamEpoch {
  epoch: number;
  start_batch: number;
  batches: number;
  cells: number;
  padded: number;
  dropped: number;
}

/**
 * The stream's last record batch: no rows, metadata `deltacells.end`. Arrow's end-of-stream
 * marker cannot say an epoch is complete: a reader sees a producer killed between two messages
 * as a clean end. Category columns keep the vocabulary already sent (no dictionary is resent).
 */
export function endBatch(arrow: ArrowBatches, end: StreamEnd): RecordBatch {
  return markerBatch(arrow, END_KEY, end);
}

/** The record batch (no rows, `deltacells.epoch`) that starts an epoch served after the first. */
export function epochBatch(arrow: ArrowBatches, epoch: StreamEpoch): RecordBatch {
  return markerBatch(arrow, EPOCH_KEY, epoch);
}

/** A record batch of no rows whose metadata `key` holds `value` as JSON. */
function markerBatch(arrow: ArrowBatches, key: string, value: unknown): RecordBatch {
  const fields = arrow.schema.fields;
  return new RecordBatch(
    arrow.schema,
    makeData({ type: new Struct(fields), length: 0, nullCount: 0, children: arrow.noRows() }),
    new Map([[key, JSON.stringify(value)]]),
  );
}

function obsEncoding(c: ObsColumnSchema, i: number): ObsEncoding {
  if (c.kind === "category") {
    const type = new Dictionary(new Utf8(), new Int32(), i, false);
    return {
      schema: c,
      field: new Field(c.name, type, true),
      vocabulary: vectorFromArray(c.categories ?? [], new Utf8()),
    };
  }
  if (c.kind === "numeric")
    return { schema: c, field: new Field(c.name, NUMERIC[c.arrow_type]!.type(), true) };
  if (c.kind === "bool") return { schema: c, field: new Field(c.name, new Bool(), true) };
  return { schema: c, field: new Field(c.name, new Utf8(), true) };
}

/** Nonzero entries as set bits, least significant bit first (Arrow's bit order). */
function packBits(values: ArrayLike<number>, n: number): Uint8Array {
  const bits = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) if (values[i]) bits[i >> 3]! |= 1 << (i & 7);
  return bits;
}

/** 1 per valid entry -> an Arrow validity bitmap and null count (no bitmap when none is missing). */
function validity(valid: ArrayLike<number> | null, n: number): { bits?: Uint8Array; nulls: number } {
  if (valid === null) return { nulls: 0 };
  let nulls = 0;
  for (let i = 0; i < n; i++) if (!valid[i]) nulls++;
  return nulls === 0 ? { nulls } : { bits: packBits(valid, n), nulls };
}

/** One batch's values of an obs column in the column's Arrow type. */
function obsData(o: ObsEncoding, col: BatchObsColumn, n: number): Data {
  const type = o.field.type;
  if (col.kind === "category") {
    const codes = col.codes.subarray(0, n);
    let valid: Uint8Array | null = null;
    for (let i = 0; i < n; i++) {
      if (codes[i]! < 0) {
        valid ??= new Uint8Array(n).fill(1);
        valid[i] = 0;
      }
    }
    const { bits, nulls } = validity(valid, n);
    return makeData({
      type,
      length: n,
      nullCount: nulls,
      nullBitmap: bits,
      data: codes,
      dictionary: o.vocabulary,
    });
  }
  if (col.kind === "numeric") {
    const out = NUMERIC[o.schema.arrow_type]!.array(n);
    const big = out instanceof BigInt64Array || out instanceof BigUint64Array;
    // The loader gives numbers as float64 (integers beyond 2^53 refused): exact in every type here.
    for (let i = 0; i < n; i++) {
      const v = col.values[i]!;
      if (big) (out as BigInt64Array)[i] = BigInt(Number.isNaN(v) ? 0 : v);
      else (out as Float64Array)[i] = v;
    }
    const { bits, nulls } = validity(col.valid, n);
    return makeData({ type, length: n, nullCount: nulls, nullBitmap: bits, data: out } as never);
  }
  if (col.kind === "bool") {
    const { bits, nulls } = validity(col.valid, n);
    return makeData({
      type: new Bool(),
      length: n,
      nullCount: nulls,
      nullBitmap: bits,
      data: packBits(col.values, n),
    });
  }
  return vectorFromArray(col.values.slice(0, n), new Utf8()).data[0]!;
}
