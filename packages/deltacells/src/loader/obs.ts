/**
 * Obs columns on batches. The columns are localized once when the loader is created
 * (`dataset.obs`: the local Arrow cache in Node, memory in a browser), never read from the shards
 * while training; each batch then gathers its cells' values from the tiles' record batches.
 */
import type { Vector } from "apache-arrow";
import { DeltacellsError } from "../errors.js";
import type { ObsColumn } from "../obs/frame.js";
import type { ObsArrowType } from "../obs/schema.js";

/** One obs column of a batch, one entry per cell of the batch. */
export type BatchObsColumn =
  | {
      kind: "category";
      /** Codes into `categories` (the dataset-wide vocabulary); -1 is missing. */
      codes: Int32Array;
      categories: readonly string[];
      /** The labels (`categories[code]`, null when missing), with the loader's `obsLabels` option. */
      labels?: (string | null)[];
    }
  | {
      kind: "numeric";
      /** The column's Arrow type in the dataset. */
      arrowType: ObsArrowType;
      /** The values; NaN where missing. Integer columns beyond 2^53 are refused, never rounded. */
      values: Float64Array;
      /** 1 where a value is present, 0 where missing; null when none is missing in this batch. */
      valid: Uint8Array | null;
    }
  | { kind: "bool"; values: Uint8Array; valid: Uint8Array | null }
  | { kind: "string"; values: (string | null)[] };

/** One tile's rows of one column, ready to gather from. */
interface TileColumn {
  vector: Vector;
  /** The raw values when the column is a number type without nulls in this tile (the fast path). */
  raw: ArrayLike<number> | null;
}

/** Gathers the obs values of a batch's cells. */
export class ObsGather {
  constructor(
    private readonly columns: readonly ObsColumn[],
    private readonly labels: boolean,
  ) {}

  get names(): string[] {
    return this.columns.map((c) => c.name);
  }

  /** Tile t's rows of every column (views, no copy). */
  tile(t: number): TileColumn[] {
    return this.columns.map((c) => {
      const vector = c.tile(t);
      const numberType = c.kind === "category" || (c.kind === "numeric" && !isBig(c.arrowType));
      const raw = numberType && vector.nullCount === 0 ? (vector.toArray() as ArrayLike<number>) : null;
      return { vector, raw };
    });
  }

  /** Empty columns for up to `n` cells. */
  start(n: number): BatchObsBuilder {
    return new BatchObsBuilder(this.columns, n, this.labels);
  }
}

function isBig(t: ObsArrowType): boolean {
  return t === "int64" || t === "uint64";
}

/** The obs columns of one batch while it is assembled. */
export class BatchObsBuilder {
  private readonly out: (Int32Array | Float64Array | Uint8Array | (string | null)[])[];
  private readonly valid: (Uint8Array | null)[];
  private readonly missing: number[];

  constructor(
    private readonly columns: readonly ObsColumn[],
    n: number,
    private readonly labels: boolean,
  ) {
    this.out = columns.map((c) =>
      c.kind === "category"
        ? new Int32Array(n)
        : c.kind === "numeric"
          ? new Float64Array(n)
          : c.kind === "bool"
            ? new Uint8Array(n)
            : new Array<string | null>(n),
    );
    this.valid = columns.map((c) => (c.kind === "numeric" || c.kind === "bool" ? new Uint8Array(n) : null));
    this.missing = columns.map(() => 0);
  }

  /** Cell `i` of the batch is row `row` of the tile whose columns are `tile`. */
  put(i: number, tile: TileColumn[], row: number): void {
    for (let k = 0; k < tile.length; k++) {
      const src = tile[k]!;
      const out = this.out[k]!;
      const valid = this.valid[k];
      if (src.raw !== null) {
        (out as Int32Array | Float64Array)[i] = src.raw[row]!;
        if (valid) valid[i] = 1;
        continue;
      }
      const v = src.vector.get(row) as number | bigint | boolean | string | null;
      if (v === null || v === undefined) {
        this.missing[k]!++;
        if (out instanceof Float64Array) out[i] = Number.NaN;
        else if (Array.isArray(out)) out[i] = null;
        else if (out instanceof Int32Array) out[i] = -1;
        continue;
      }
      if (valid) valid[i] = 1;
      if (typeof v === "bigint") {
        const n = Number(v);
        if (!Number.isSafeInteger(n)) throw unsafe(this.columns[k]!, v);
        (out as Float64Array)[i] = n;
      } else if (typeof v === "boolean") (out as Uint8Array)[i] = v ? 1 : 0;
      else (out as (string | number)[])[i] = v;
    }
  }

  /** The columns of the first `n` cells. */
  finish(n: number): Record<string, BatchObsColumn> {
    const result: Record<string, BatchObsColumn> = {};
    this.columns.forEach((c, k) => {
      const out = this.out[k]!;
      const v = this.valid[k];
      const valid = this.missing[k]! > 0 && v ? v.subarray(0, n) : null;
      if (c.kind === "category") {
        const codes = (out as Int32Array).subarray(0, n);
        const col: BatchObsColumn = { kind: "category", codes, categories: c.categories ?? [] };
        if (this.labels) col.labels = c.labels(codes);
        result[c.name] = col;
      } else if (c.kind === "numeric")
        result[c.name] = {
          kind: "numeric",
          arrowType: c.arrowType,
          values: (out as Float64Array).subarray(0, n),
          valid,
        };
      else if (c.kind === "bool")
        result[c.name] = { kind: "bool", values: (out as Uint8Array).subarray(0, n), valid };
      else result[c.name] = { kind: "string", values: (out as (string | null)[]).slice(0, n) };
    });
    return result;
  }
}

/** A copy of a batch's obs columns (its own arrays; the vocabularies are shared, being the dataset's). */
export function copyObs(obs: Record<string, BatchObsColumn>): Record<string, BatchObsColumn> {
  const out: Record<string, BatchObsColumn> = {};
  for (const [name, c] of Object.entries(obs)) {
    if (c.kind === "category")
      out[name] = { ...c, codes: c.codes.slice(), ...(c.labels && { labels: c.labels.slice() }) };
    else if (c.kind === "string") out[name] = { ...c, values: c.values.slice() };
    else if (c.kind === "numeric")
      out[name] = { ...c, values: c.values.slice(), valid: c.valid?.slice() ?? null };
    else out[name] = { ...c, values: c.values.slice(), valid: c.valid?.slice() ?? null };
  }
  return out;
}

function unsafe(c: ObsColumn, v: bigint): DeltacellsError {
  return new DeltacellsError(
    `obs column ${JSON.stringify(c.name)} holds ${v}, beyond the integers a float64 holds exactly (2^53): the loader will not round it; leave the column out of obs`,
    { tag: "InvalidInput", field: c.name, expected: "|value| <= 2^53", found: String(v) },
  );
}
