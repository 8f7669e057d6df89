/** Messages between a {@link TilePool} and its workers. */
import { DeltacellsError, type DeltacellsErrorTag } from "../../errors.js";
import type { PreparedChunk } from "../encode.js";
import type { TileLayout } from "../layout.js";
import type { MappedView } from "../mapped.js";
import type { ScatterTarget } from "../scatter.js";

/** Decode chunks `[k0, k1)` of a tile (restricted to cells `[c0, c1)`) and checksum some bytes. */
export interface DecodeRequest {
  op: "decode";
  id: number;
  bytes: Uint8Array;
  /** The tile's layout, as the pool checked it (`inspectTile`): the worker does not inspect again. */
  layout: TileLayout;
  k0: number;
  k1: number;
  c0: number;
  c1: number;
  /** Global nonzero position written to output index 0. */
  base: number;
  values: "int32" | "float32";
  /** Shared output arrays to write into; when absent the worker returns its own (transferred). */
  indices?: Int32Array;
  data?: Int32Array | Float32Array;
  /**
   * Renumber the columns through the pool's map `id` (see `DecodeOptions.columns`). `map` travels
   * only with the first request of that id to each worker (shared memory where there is some);
   * the worker keeps it (see {@link WorkerColumnMaps}).
   */
  columns?: { id: number; map?: Int32Array };
  /** CRC-32 of `bytes[crcFrom, crcTo)`, returned for the pool to combine. */
  crcFrom: number;
  crcTo: number;
  object?: string;
}

/** How many column maps a worker keeps: the host and the worker evict the same oldest one. */
export const WORKER_COLUMN_MAPS = 4;

/**
 * The column maps one worker holds, by id, as both ends see them: the host's copy decides whether
 * a request must carry its map, the worker's holds the maps. Both see the same requests in the
 * same order and evict first-in first, so they agree without another message.
 */
export class WorkerColumnMaps {
  private readonly maps = new Map<number, Int32Array | undefined>();

  has(id: number): boolean {
    return this.maps.has(id);
  }

  get(id: number): Int32Array | undefined {
    return this.maps.get(id);
  }

  add(id: number, map?: Int32Array): void {
    this.maps.set(id, map);
    if (this.maps.size > WORKER_COLUMN_MAPS) this.maps.delete(this.maps.keys().next().value!);
  }
}

/** Decode a whole tile and write its rows to their slots (see `scatterTileSync`). */
export interface ScatterRequest {
  op: "scatter";
  id: number;
  bytes: Uint8Array;
  /** The tile's layout, checked by the caller (CRC excepted: the worker checks it). */
  layout: TileLayout;
  values: "int32" | "float32";
  slots: Float64Array;
  /** Shared memory only (the worker writes into it). */
  targets: PostedTarget[];
  /** As {@link DecodeRequest.columns}. */
  columns?: { id: number; map?: Int32Array };
  object?: string;
}

/**
 * A scatter target as posted: on SharedArrayBuffer as it is, or CSR arrays over a mapped file as
 * their descriptions (`mapped.ts`: the worker maps the file itself; the arrays would be copied).
 */
export type PostedTarget = ScatterTarget | { mapped: { indices: MappedView; data: MappedView } };

export interface CompressRequest {
  op: "compress";
  id: number;
  chunk: PreparedChunk;
  level: number;
}

/**
 * A job's claim cell, in memory the host and the worker share (see host.ts, `steal`): 0 while
 * the job waits in the worker's queue, 1 once the worker starts it, 2 once the host took it back
 * to run on a worker left idle. Whoever changes it from 0 first has the job.
 */
export interface Claim {
  cells: Int32Array;
  at: number;
}

export const CLAIM_WAITING = 0;
export const CLAIM_STARTED = 1;
export const CLAIM_RECALLED = 2;

/** A request as a worker receives it: with a claim cell when the host may take it back. */
export type Request = (DecodeRequest | ScatterRequest | CompressRequest) & { claim?: Claim };

export interface SerializedError {
  tag?: DeltacellsErrorTag;
  message: string;
  object?: string;
  field?: string;
  expected?: unknown;
  found?: unknown;
}

export type Response = (
  | {
      id: number;
      ok: true;
      crc?: number;
      indices?: Int32Array;
      data?: Int32Array | Float32Array;
      frames?: unknown;
      /** The job was not run here: the host had taken it back (its claim cell said so). */
      recalled?: true;
    }
  | { id: number; ok: false; error: SerializedError }
) & {
  /** The claim cell the request came with, free again. */
  claim?: number;
};

export function serializeError(err: unknown): SerializedError {
  if (err instanceof DeltacellsError) {
    return {
      tag: err._tag,
      message: err.message,
      object: err.object,
      field: err.field,
      expected: cloneable(err.expected),
      found: cloneable(err.found),
    };
  }
  return { message: err instanceof Error ? err.message : String(err) };
}

function cloneable(v: unknown): unknown {
  return typeof v === "bigint" ? v.toString() : v;
}

/** A worker's failure that is not a refusal of the data: it crashed, exited or threw a bug. */
export function workerFailed(message: string, found: unknown, cause?: unknown): DeltacellsError {
  return new DeltacellsError(message, {
    tag: "WorkerFailed",
    field: "worker",
    expected: "a running worker",
    found,
    cause,
  });
}

export function deserializeError(e: SerializedError): Error {
  if (e.tag === undefined) return workerFailed(`tile worker failed: ${e.message}`, e.message);
  return new DeltacellsError(e.message, {
    tag: e.tag,
    object: e.object,
    field: e.field,
    expected: e.expected,
    found: e.found,
  });
}
