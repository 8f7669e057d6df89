/**
 * The loader's options and its resumable state, checked once when the loader is created: every
 * refusal names the option, what was expected and what was found.
 */
import type { Dataset } from "../dataset/reader.js";
import { DeltacellsError } from "../errors.js";
import type { UnreadableTilePolicy } from "./feed.js";
import type { ColumnOrder } from "./genes.js";
import type { SharedBatchesOptions } from "./ring.js";

/** Options of {@link createLoader}. */
export interface LoaderOptions {
  /** Cells per batch (default 256). */
  batchSize?: number;
  /** Shuffle tiles and cells (default true). Off: each rank yields its cells in dataset order. */
  shuffle?: boolean;
  /** The shuffle's seed, a non-negative safe integer (default 0). Same seed and epoch: same batches. */
  seed?: number;
  /** The epoch the first iteration yields (default 0); later iterations go on with the next epochs. */
  epoch?: number;
  /** Batches of that epoch already yielded: the first iteration starts after them (default 0). */
  startBatch?: number;
  /** A state from `loader.state()`: continue exactly where that loader stopped (see {@link LoaderState}). */
  resume?: LoaderState;
  /**
   * How batches are ordered and handed to ranks (default `"default"`): each rank shuffles its own
   * share of the epoch. `"elastic"`: the epoch is one sequence of global batches, a function of the
   * seed, the epoch and `lanes` only; rank r of W yields global batches r, r + W, ...; and a state
   * saved at one world size resumes at any other that divides `lanes` (see docs/loader.md,
   * "Elastic order").
   */
  order?: LoaderOrder;
  /**
   * Elastic order: the lanes the epoch is cut into (default: `worldSize`), each a contiguous share
   * of the epoch's tiles with its own shuffle windows; global batch g comes from lane g mod lanes.
   * The world sizes the sequence runs on are the divisors of `lanes` (24: 1, 2, 3, 4, 6, 8, 12, 24);
   * a rank holds `lanes / worldSize` shuffle windows at once.
   */
  lanes?: number;
  /**
   * Elastic order: global batches of the epoch already consumed, by every rank together, at any
   * world size (a resume from plain numbers; `startBatch` K means K times `worldSize`).
   */
  startGlobalBatch?: number;
  /** Tiles whose cells are shuffled together (default 8): more mixes better and holds more memory. */
  bufferTiles?: number;
  /**
   * Drop the remainder instead of padding (default false). Padding: every rank yields `ceil(N / W)`
   * cells, a rank one short repeating a cell, the last batch possibly smaller. With `dropLast`:
   * `floor(N / W)` cells per rank cut to whole batches, the rest not yielded.
   */
  dropLast?: boolean;
  /** This process's rank, 0 .. worldSize - 1 (default 0). */
  rank?: number;
  /** Number of ranks sharing the epoch (default 1). */
  worldSize?: number;
  /**
   * Decode on a new pool of this many workers (worker_threads, or Web Workers in a browser),
   * stopped by `loader.close()`. Default: the dataset's own decoder (`openDataset(..., { threads })`).
   */
  threads?: number;
  /** Batches assembled ahead of the one being consumed (default 2). */
  prefetch?: number;
  /**
   * Bytes the loader may hold (default 512 MiB): tiles being fetched, decoded and kept for the
   * shuffle, counted exactly from the manifest, plus every batch buffer it can hold at once
   * (reserved from the densest tile, counted as allocated). Tiles are fetched ahead only as far as
   * this allows. A cap too small for one shuffle window and those batch buffers is refused when
   * the loader is created (see docs/loader.md, "Memory and prefetch").
   */
  memoryCap?: number;
  /** `"csr"` (default): `indptr` / `indices` / `data`; `"dense"`: float32 rows. */
  output?: "csr" | "dense";
  /** CSR values as int32 counts (default) or float32. Dense output is always float32. */
  values?: "int32" | "float32";
  /**
   * Output columns: gene names (`var_names.txt`) or indices in `columnOrder`'s numbering, in the
   * order given. Default: every gene.
   */
  genes?: readonly string[] | ArrayLike<number>;
  /**
   * How columns are numbered (default `"source"`): as in the AnnData the dataset was converted
   * from (the dataset's `gene_order.npy` undone), or `"dataset"`: as stored in the tiles (genes by
   * decreasing total counts, `var_names.txt` order; fastest, indices always sorted).
   */
  columnOrder?: ColumnOrder;
  /** Sort each CSR row's indices when the output order differs from the tiles' (default false: slower). */
  sortIndices?: boolean;
  /** Obs columns attached to each batch (default none). */
  obs?: string[];
  /** Category columns also as labels (strings), not only codes plus vocabulary (default false). */
  obsLabels?: boolean;
  /** Node: where obs columns are cached (see `dataset.obs`). */
  obsCacheDir?: string;
  /**
   * A tile that cannot be read or decoded once the store's retries are spent: `"error"` (default)
   * stops the epoch with an `UnreadableTile` error naming it; `"skip"` leaves its cells out (the
   * batches holding them are smaller, `batch.skipped` counts them) and lists it in `loader.skipped`.
   */
  onUnreadableTile?: UnreadableTilePolicy;
  /** Aborts creating the loader and every iteration of it: the iteration rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Node, CSR output: make the batches in this file, which another process maps (a ring of
   * slots; `loader.sharedBatches` describes it). A slot is written only once the batch it held is
   * released: until then the loader waits for one (see docs/loader.md, "Batches in shared memory").
   */
  sharedBatches?: SharedBatchesOptions;
}

/** How batches are ordered and handed to ranks (see {@link LoaderOptions.order}). */
export type LoaderOrder = "default" | "elastic";

/**
 * Where a loader is, as plain JSON: pass it back as `resume` to a new loader over the same dataset
 * and it yields exactly the batches this one had not yet yielded. The settings that decide batch
 * boundaries are part of it; a loader refuses a state whose settings contradict its options.
 */
export interface LoaderState {
  seed: number;
  epoch: number;
  /** Batches of `epoch` already yielded. */
  batchesYielded: number;
  batchSize: number;
  shuffle: boolean;
  bufferTiles: number;
  dropLast: boolean;
  rank: number;
  worldSize: number;
  /** The dataset's cell count, so a state is not applied to another dataset by mistake. */
  nCells: number;
  /** Elastic order only (absent in the default order). */
  order?: "elastic";
  /** Elastic order: the lanes, which fix the global batch sequence. */
  lanes?: number;
  /**
   * Elastic order: the global batches of `epoch` consumed by every rank together (`worldSize`, the
   * world size the state was saved at, times the batches each yielded, from where it started). A
   * loader resumed from it at any world size dividing `lanes` yields the global batches from this
   * one on, each exactly once; `rank` and `worldSize` are then the new loader's own options.
   */
  globalBatchesConsumed?: number;
}

/** Options with every default applied. */
export interface LoaderSettings {
  batchSize: number;
  shuffle: boolean;
  seed: number;
  epoch: number;
  startBatch: number;
  bufferTiles: number;
  dropLast: boolean;
  rank: number;
  worldSize: number;
  order: LoaderOrder;
  /** Elastic order: the lanes (`worldSize` in the default order, where each rank is one). */
  lanes: number;
  /** Elastic order: global batches of the first epoch already consumed (0 in the default order). */
  startGlobalBatch: number;
  threads: number | undefined;
  prefetch: number;
  memoryCap: number;
  output: "csr" | "dense";
  values: "int32" | "float32";
  columnOrder: ColumnOrder;
  sortIndices: boolean;
  obs: string[];
  obsLabels: boolean;
  onUnreadableTile: UnreadableTilePolicy;
  sharedBatches: { fd: number; slots: number | undefined } | undefined;
}

export const DEFAULT_BATCH_SIZE = 256;
export const DEFAULT_BUFFER_TILES = 8;
export const DEFAULT_PREFETCH = 2;
export const DEFAULT_MEMORY_CAP = 512 * 1024 * 1024;

function invalid(field: string, expected: string, found: unknown, extra = ""): DeltacellsError {
  return new DeltacellsError(
    `loader option ${field} must be ${expected}, found ${JSON.stringify(found)}${extra}`,
    { tag: "InvalidInput", field, expected, found },
  );
}

function integer(field: string, v: unknown, min: number, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min)
    throw invalid(field, `an integer >= ${min}`, v);
  return v;
}

function oneOf<T extends string>(field: string, v: unknown, allowed: readonly T[], fallback: T): T {
  if (v === undefined) return fallback;
  if (!allowed.includes(v as T)) throw invalid(field, allowed.map((a) => JSON.stringify(a)).join(" or "), v);
  return v as T;
}

function bool(field: string, v: unknown, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== "boolean") throw invalid(field, "true or false", v);
  return v;
}

function sharedBatchesOf(o: SharedBatchesOptions | undefined): LoaderSettings["sharedBatches"] {
  if (o === undefined) return undefined;
  if (o === null || typeof o !== "object" || o.fd === undefined)
    throw invalid("sharedBatches", "{ fd, slots? }: an open file descriptor", o);
  return {
    fd: integer("sharedBatches.fd", o.fd, 0, 0),
    slots: o.slots === undefined ? undefined : integer("sharedBatches.slots", o.slots, 1, 1),
  };
}

/** The state fields that decide batch boundaries: a resumed loader's options must agree with them. */
const STATE_FIELDS = ["seed", "batchSize", "shuffle", "bufferTiles", "dropLast"] as const;
/** In the default order a rank's batches also depend on its rank and world size. */
const RANK_FIELDS = ["rank", "worldSize"] as const;

function contradicts(field: string, state: unknown, option: unknown): DeltacellsError {
  return invalid(
    field,
    `${JSON.stringify(state)} (the value in the resumed state)`,
    option,
    ": the batches would differ",
  );
}

/** The options with defaults applied and `resume` merged in, or a refusal. */
export function settingsOf(ds: Dataset, o: LoaderOptions): LoaderSettings {
  const merged: LoaderOptions = { ...o };
  if (o.resume !== undefined) {
    const s = o.resume;
    if (s === null || typeof s !== "object") throw invalid("resume", "a state from loader.state()", s);
    if (s.nCells !== ds.nCells)
      throw invalid(
        "resume",
        `a state of a dataset of ${ds.nCells} cells`,
        s.nCells,
        ` (cells of the dataset the state came from; this is ${ds.url})`,
      );
    const elastic = s.order === "elastic";
    if (o.order !== undefined && o.order !== (s.order ?? "default"))
      throw contradicts("order", s.order ?? "default", o.order);
    const fields = elastic ? [...STATE_FIELDS, "lanes" as const] : [...STATE_FIELDS, ...RANK_FIELDS];
    for (const f of fields) {
      if (o[f] !== undefined && o[f] !== s[f]) throw contradicts(f, s[f], o[f]);
      (merged as Record<string, unknown>)[f] = s[f];
    }
    if (o.epoch !== undefined || o.startBatch !== undefined || o.startGlobalBatch !== undefined)
      throw invalid(
        "epoch",
        "absent when resuming (the state says where to start)",
        o.epoch ?? o.startBatch ?? o.startGlobalBatch,
      );
    merged.epoch = s.epoch;
    if (elastic) {
      merged.order = "elastic";
      // The world size may change: the state's only when the options give none.
      merged.rank = o.rank ?? (o.worldSize === undefined ? s.rank : undefined);
      merged.worldSize = o.worldSize ?? s.worldSize;
      merged.startGlobalBatch = s.globalBatchesConsumed;
    } else merged.startBatch = s.batchesYielded;
  }
  const worldSize = integer("worldSize", merged.worldSize, 1, 1);
  const rank = integer("rank", merged.rank, 0, 0);
  if (rank >= worldSize) throw invalid("rank", `below worldSize (${worldSize})`, rank);
  const order = oneOf("order", merged.order, ["default", "elastic"] as const, "default");
  const elastic = order === "elastic";
  if (!elastic && merged.lanes !== undefined)
    throw invalid("lanes", 'absent unless order is "elastic"', merged.lanes, '; pass order: "elastic"');
  if (!elastic && merged.startGlobalBatch !== undefined)
    throw invalid(
      "startGlobalBatch",
      'absent unless order is "elastic" (use startBatch)',
      merged.startGlobalBatch,
    );
  const lanes = elastic ? integer("lanes", merged.lanes, 1, worldSize) : worldSize;
  if (lanes % worldSize !== 0)
    throw invalid(
      "worldSize",
      `a divisor of lanes (${lanes}): ${divisors(lanes).join(", ")}`,
      worldSize,
      "; the lanes fix the batch sequence, so a run at another world size needs lanes a multiple of it (set lanes on the first run)",
    );
  if (merged.startBatch !== undefined && merged.startGlobalBatch !== undefined)
    throw invalid(
      "startGlobalBatch",
      "absent with startBatch (they say the same thing)",
      merged.startGlobalBatch,
    );
  const startBatch = integer("startBatch", merged.startBatch, 0, 0);
  const startGlobalBatch = elastic
    ? integer("startGlobalBatch", merged.startGlobalBatch, 0, startBatch * worldSize)
    : 0;
  const output = oneOf("output", merged.output, ["csr", "dense"] as const, "csr");
  const threads = merged.threads === undefined ? undefined : integer("threads", merged.threads, 1, 1);
  const obs = merged.obs ?? [];
  if (!Array.isArray(obs) || obs.some((c) => typeof c !== "string"))
    throw invalid("obs", "a list of column names", obs);
  const settings: LoaderSettings = {
    batchSize: integer("batchSize", merged.batchSize, 1, DEFAULT_BATCH_SIZE),
    shuffle: bool("shuffle", merged.shuffle, true),
    seed: integer("seed", merged.seed, 0, 0),
    epoch: integer("epoch", merged.epoch, 0, 0),
    startBatch: elastic ? Math.floor(startGlobalBatch / worldSize) : startBatch,
    bufferTiles: integer("bufferTiles", merged.bufferTiles, 1, DEFAULT_BUFFER_TILES),
    dropLast: bool("dropLast", merged.dropLast, false),
    rank,
    worldSize,
    order,
    lanes,
    startGlobalBatch,
    threads,
    prefetch: integer("prefetch", merged.prefetch, 0, DEFAULT_PREFETCH),
    memoryCap: integer("memoryCap", merged.memoryCap, 1, DEFAULT_MEMORY_CAP),
    output,
    values:
      output === "dense" ? "float32" : oneOf("values", merged.values, ["int32", "float32"] as const, "int32"),
    columnOrder: oneOf("columnOrder", merged.columnOrder, ["source", "dataset"] as const, "source"),
    sortIndices: bool("sortIndices", merged.sortIndices, false),
    obs,
    obsLabels: bool("obsLabels", merged.obsLabels, false),
    onUnreadableTile: oneOf("onUnreadableTile", merged.onUnreadableTile, ["error", "skip"] as const, "error"),
    sharedBatches: sharedBatchesOf(merged.sharedBatches),
  };
  if (output === "dense" && settings.sharedBatches !== undefined)
    throw invalid(
      "sharedBatches",
      'absent with output "dense" (a shared batch file holds CSR batches)',
      "given",
    );
  if (output === "dense" && merged.values === "int32")
    throw invalid("values", '"float32" (or absent) with output "dense"', merged.values);
  if (!settings.dropLast && ds.nCells < lanes)
    throw elastic
      ? invalid(
          "lanes",
          `at most the dataset's ${ds.nCells} cells (each lane needs a cell of its own to pad with)`,
          lanes,
          "; use fewer lanes or dropLast",
        )
      : invalid(
          "worldSize",
          `at most the dataset's ${ds.nCells} cells (each rank needs a cell of its own to pad with)`,
          worldSize,
          "; use fewer ranks or dropLast",
        );
  return settings;
}

/** The divisors of n, increasing. */
function divisors(n: number): number[] {
  const out: number[] = [];
  for (let d = 1; d <= n; d++) if (n % d === 0) out.push(d);
  return out;
}
