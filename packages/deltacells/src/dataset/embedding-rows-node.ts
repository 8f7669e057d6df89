/**
 * Writing the companion's rows in embedding order (`convert --sporadik`, `append --sporadik`, see
 * ./embedding-rows.ts) in bounded memory, Node only: an external bucket sort. The companion's rows
 * are read once in cell order, a bounded range of rows at a time, and each is appended to the
 * temporary file of its destination bucket (a run of consecutive rows of the new order, as many as
 * take ~{@link EMBEDDING_ROWS_BUCKET_BYTES} in memory on average once read back); then each bucket in turn is read
 * back, its rows placed by destination, and handed as one row block to sporadik's streaming writer
 * (`writeStoreFromRowBlocks`). Memory is a bucket, a range of rows and the writer's chunks, plus two
 * int32 arrays per cell (the order and its inverse); the temporary files hold the companion's
 * nonzeros once (8 bytes each at int32), in a `.sporadik-spill-*` folder removed on success,
 * failure and, when asked, Ctrl-C, as the streaming writer's own. And checking a written store
 * against its dataset (`deltacells validate`).
 */
import { statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, resolve } from "node:path";
import {
  FileSpill,
  openReader,
  type RowBlock,
  type Selection,
  type StaleSpill,
  sweepStaleSpills,
  writeStoreFromRowBlocks,
} from "@deltacells/sporadik/node";
import { joinLocation, type Store } from "@deltacells/storage";
import { localPath } from "@deltacells/storage/node";
import { DeltacellsError } from "../errors.js";
import type { ObsFrame } from "../obs/frame.js";
import { companionOf } from "./companion.js";
import {
  EMBEDDING_ROWS_PATH,
  type EmbeddingRows,
  embeddingOrder,
  embeddingRowsColumns,
  embeddingRowsOf,
  nameEmbeddingRows,
  ORDER_KEY,
  orderDigest,
  orderNpy,
  rowsOf,
} from "./embedding-rows.js";
import { MANIFEST_KEY, nnzOf } from "./manifest.js";
import { decodeNpyInt32 } from "./npy.js";
import { openDataset } from "./open.js";
import type { Dataset } from "./reader.js";
import type { ValidationProblem } from "./validate.js";

/**
 * Bytes a bucket of {@link writeEmbeddingRows} takes in memory on average while its rows are
 * placed: 16 MiB, its file read back and the two arrays its rows are placed into, so a bucket
 * holds half of it in nonzeros (1,048,576 at int32), and the companion is read as many at a time.
 * Measured against 64 MiB (bench/RESULTS.md, "Writing them in bounded memory"): the rows' step
 * peaks ~60 MB lower, in the same time; more buckets are more temporary files, not more bytes.
 */
export const EMBEDDING_ROWS_BUCKET_BYTES = 16 * 2 ** 20;

/** Options of {@link writeEmbeddingRows}. */
export interface WriteEmbeddingRowsOptions<S extends Store> {
  /** Opens a location: the dataset's, its companion's and the new store's (a command counts their bytes). */
  openStore: (location: string) => S;
  /** zstd's content checksum in every chunk, as the companion's. Default true. */
  checksums?: boolean;
  /**
   * Folder under which the temporary folder (`.sporadik-spill-*`, 8 bytes per int32 nonzero) is
   * made. Default: beside a local dataset, else the system's temporary folder.
   */
  tmpDir?: string;
  /** Bytes a bucket takes in memory on average (its file and its rows placed). Default {@link EMBEDDING_ROWS_BUCKET_BYTES}. */
  bucketBytes?: number;
  /** Threads compressing chunks. Default: one per core. */
  threads?: number;
  /** Also remove the temporary folder on SIGINT and SIGTERM (a command line's choice). Default false. */
  removeOnSignal?: boolean;
  /** Told of each temporary folder a killed writer left there (removed, or kept while its owner may run). */
  onStaleSpill?: (spill: StaleSpill) => void;
  /** Told, before the first row is read, where the temporary files go and how large they get. */
  onTemporarySpace?: (space: EmbeddingRowsTemporarySpace) => void;
}

/** The temporary space of {@link writeEmbeddingRows}. */
export interface EmbeddingRowsTemporarySpace {
  /** The folder the temporary folder goes under (absolute). */
  folder: string;
  /** Bytes the buckets take there at most (every nonzero once, with each row's 8-byte header). */
  bytes: number;
  /** Bytes free on its disk, when the system says. */
  available: number | undefined;
}

/** What {@link writeEmbeddingRows} wrote. */
export interface WriteEmbeddingRowsResult<S extends Store> {
  /** The new store, as `openStore` opened it. */
  store: S;
  /** The manifest's record: path, embedding, digest. */
  rows: EmbeddingRows;
  nnz: number;
  /** Buckets the rows were sorted through. */
  buckets: number;
  /** Bytes written to the temporary files. */
  bytesSpilled: number;
}

/** One numeric obs column for every cell as float32, as the viewer holds it (nulls NaN). */
function float32Column(frame: ObsFrame, name: string, nCells: number): Float32Array {
  const column = frame.columns.find((c) => c.name === name)!;
  const values = new Float32Array(nCells);
  let at = 0;
  for (let t = 0; t < column.table.batches.length; t++) {
    const tile = column.tile(t);
    const raw = tile.toArray() as ArrayLike<number | bigint>;
    for (let i = 0; i < tile.length; i++) values[at + i] = tile.isValid(i) ? Number(raw[i]) : Number.NaN;
    at += tile.length;
  }
  return values;
}

/**
 * The order of the cells along the embedding. Its own function so that the obs columns and their
 * float32 copies (16 bytes a cell besides Arrow's) are garbage once it returns, not held while the
 * rows are sorted.
 */
async function orderOf(ds: Dataset, embedding: [string, string]): Promise<Uint32Array> {
  const frame = await ds.obs(embedding);
  return embeddingOrder(
    float32Column(frame, embedding[0], ds.nCells),
    float32Column(frame, embedding[1], ds.nCells),
  );
}

function freeBytes(folder: string): number | undefined {
  try {
    const fs = statfsSync(folder);
    return fs.bavail * fs.bsize;
  } catch {
    return undefined;
  }
}

/** A row's header in a bucket file: its row in the new order and its number of nonzeros (uint32 each). */
const HEADER = 8;

/** Nonzeros of the companion read at once, in cell order: a bucket's worth at most, and no more than 4 M. */
function sourceNonzeros(bucketNonzeros: number): number {
  return Math.max(1, Math.min(bucketNonzeros, 4 * 2 ** 20));
}

type Typed = Selection["indices"] | Selection["data"];

function bytesOf(a: Typed, from: number, to: number): Uint8Array {
  const size = a.BYTES_PER_ELEMENT;
  return new Uint8Array(a.buffer, a.byteOffset + from * size, (to - from) * size);
}

/**
 * Writes the rows of the dataset at `location` in embedding order at `location/sporadik-rows/`
 * (from its companion, which it needs; one layout, axis 0, the companion's chunking and dtypes,
 * with `order.npy`, the cell of each row), then names them in the manifest
 * (`metadata.sporadik_rows`, with the order's digest). The embedding is `X_umap` when obs has it, else the first `KEY_0`/`KEY_1` pair.
 * A store already named (written again, after an append) is unnamed before the first object is
 * written over, and named again with the new digest once complete: a failure or a kill at any
 * point leaves the manifest naming no rows in embedding order, or complete ones of its cells.
 * Memory is bounded by `bucketBytes`, not by the dataset (see the module); the bytes are the same
 * whatever `bucketBytes`. Refused (`NotFound`) for a dataset without a companion or an embedding.
 *
 *     await writeEmbeddingRows("pbmc", { openStore: (l) => new FolderStore(l) });
 */
export async function writeEmbeddingRows<S extends Store>(
  location: string,
  options: WriteEmbeddingRowsOptions<S>,
): Promise<WriteEmbeddingRowsResult<S>> {
  const datasetStore = options.openStore(location);
  const ds = await openDataset(datasetStore);
  const manifestObject = `${ds.url}/manifest.json`;
  const rel = companionOf(ds);
  if (rel === undefined) {
    throw new DeltacellsError(
      `${manifestObject} names no sporadik companion (metadata.sporadik), from which the rows in embedding order are written: convert with --sporadik and --sporadik-rows together`,
      {
        tag: "NotFound",
        object: manifestObject,
        field: "metadata.sporadik",
        expected: "a sporadik companion",
        found: undefined,
      },
    );
  }
  const embedding = await embeddingRowsColumns(ds);
  if (embedding === undefined) {
    throw new DeltacellsError(
      `${ds.url} has no embedding in obs (a KEY_0/KEY_1 pair of numeric columns such as X_umap_0/X_umap_1) to order its rows by: convert with --obsm X_umap (or the embedding's key), or without --sporadik-rows`,
      {
        tag: "NotFound",
        object: `${ds.url}/obs`,
        field: "obs columns",
        expected: "a numeric KEY_0/KEY_1 pair (X_umap_0, X_umap_1)",
        found: ds.manifest.has_obs ? "no such pair" : "no obs",
      },
    );
  }
  const n = ds.nCells;
  const order = await orderOf(ds, embedding);
  const rowOf = rowsOf(order);
  const companionLocation = joinLocation(location, rel);
  // Read once, in order: a cache of decoded chunks (64 MiB by default) would hold only chunks
  // already done with.
  const reader = await openReader(options.openStore(companionLocation), { axis: 0, cacheBytes: 0 });
  const { info } = reader;
  const nnz = info.nnz;

  const bytesPerNonzero = bytesOfDtype(info.indexDtype) + bytesOfDtype(info.dtype);
  const bucketNonzeros = Math.max(
    1,
    Math.floor((options.bucketBytes ?? EMBEDDING_ROWS_BUCKET_BYTES) / (2 * bytesPerNonzero)),
  );
  const rowsPerBucket = Math.max(1, Math.floor(n / Math.max(1, Math.ceil(nnz / bucketNonzeros))));
  const nBuckets = Math.max(1, Math.ceil(n / rowsPerBucket));

  const local = localPath(location);
  const tmpParent = resolve(options.tmpDir ?? (local !== undefined ? dirname(local) : tmpdir()));
  for (const stale of await sweepStaleSpills(tmpParent)) options.onStaleSpill?.(stale);
  options.onTemporarySpace?.({
    folder: tmpParent,
    bytes: nnz * bytesPerNonzero + n * HEADER,
    available: freeBytes(tmpParent),
  });
  const spill = await FileSpill.create(tmpParent, { removeOnSignal: options.removeOnSignal === true });
  try {
    const files = await bucketRows(
      reader,
      rowOf,
      rowsPerBucket,
      nBuckets,
      sourceNonzeros(bucketNonzeros),
      spill,
    );
    // A store the manifest names is written over in place: unnamed first, so a cut run leaves a
    // dataset that names no rows in embedding order (the companion serves), never torn ones.
    if (embeddingRowsOf(ds) !== undefined) await nameEmbeddingRows(datasetStore, undefined);
    const rowsLocation = joinLocation(location, EMBEDDING_ROWS_PATH);
    const store = options.openStore(rowsLocation);
    const result = await writeStoreFromRowBlocks(store, sortedBlocks(files, n, rowsPerBucket, info), {
      shape: [info.shape[0]!, info.shape[1]!],
      axes: [0],
      dtype: info.dtype,
      nnz,
      checksums: options.checksums ?? true,
      tmpDir: tmpParent,
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      removeOnSignal: options.removeOnSignal === true,
    });
    await store.set(ORDER_KEY, orderNpy(order));
    const rows: EmbeddingRows = { path: EMBEDDING_ROWS_PATH, embedding, digest: orderDigest(order) };
    await nameEmbeddingRows(datasetStore, rows);
    return { store, rows, nnz: result.nnz, buckets: nBuckets, bytesSpilled: spill.bytesSpilled };
  } finally {
    await spill.dispose();
  }
}

function bytesOfDtype(dtype: string): number {
  return /64$/.test(dtype) ? 8 : /16$/.test(dtype) ? 2 : /8$/.test(dtype) ? 1 : 4;
}

/** A bucket's file and how its records read back. */
type BucketFile = Awaited<ReturnType<FileSpill["create"]>> | undefined;

/**
 * Pass one: the companion's rows in cell order, a range of about `rangeNonzeros` at a time, each
 * row appended to its bucket's file as (row, count, indices, values). Empty rows are not written:
 * a row no record names is empty.
 */
async function bucketRows(
  reader: Awaited<ReturnType<typeof openReader>>,
  rowOf: Uint32Array,
  rowsPerBucket: number,
  nBuckets: number,
  rangeNonzeros: number,
  spill: FileSpill,
): Promise<BucketFile[]> {
  const n = rowOf.length;
  const files: BucketFile[] = new Array(nBuckets).fill(undefined);
  // Rows per range, adapted to the nonzeros per row just read (no per-cell indptr in memory).
  let span = Math.max(1, Math.min(n, 4096));
  for (let start = 0; start < n; ) {
    const stop = Math.min(n, start + span);
    const part = await reader.slicesOver(start, stop);
    const read = Number(part.indptr[stop - start]);
    const parts: Uint8Array[][] = new Array(nBuckets);
    for (let c = start; c < stop; c++) {
      const lo = Number(part.indptr[c - start]);
      const hi = Number(part.indptr[c - start + 1]);
      if (hi === lo) continue;
      const row = rowOf[c]!;
      const b = Math.floor(row / rowsPerBucket);
      const header = new Uint8Array(HEADER);
      const view = new DataView(header.buffer);
      view.setUint32(0, row, true);
      view.setUint32(4, hi - lo, true);
      (parts[b] ??= []).push(header, bytesOf(part.indices, lo, hi), bytesOf(part.data, lo, hi));
    }
    for (let b = 0; b < nBuckets; b++) {
      const these = parts[b];
      if (these === undefined) continue;
      files[b] ??= await spill.create(`bucket-${b}`);
      await files[b]!.append(these);
    }
    span = read > 0 ? Math.max(1, Math.floor((rangeNonzeros * (stop - start)) / read)) : span * 2;
    start = stop;
  }
  return files;
}

/**
 * Pass two: each bucket read back whole, its rows placed by destination, yielded as one CSR row
 * block (rows of the new order `b * rowsPerBucket` onwards); the file is removed once read.
 */
async function* sortedBlocks(
  files: BucketFile[],
  n: number,
  rowsPerBucket: number,
  info: Awaited<ReturnType<typeof openReader>>["info"],
): AsyncGenerator<RowBlock> {
  const indexSize = bytesOfDtype(info.indexDtype);
  const valueSize = bytesOfDtype(info.dtype);
  for (let b = 0; b < files.length; b++) {
    const first = b * rowsPerBucket;
    const nRows = Math.min(n, first + rowsPerBucket) - first;
    const file = files[b];
    const bytes = file === undefined ? new Uint8Array(0) : await file.read(0, file.bytes);
    await file?.remove();
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const counts = new Float64Array(nRows);
    const recordAt = new Float64Array(nRows).fill(-1);
    for (let at = 0; at < bytes.byteLength; ) {
      const row = view.getUint32(at, true) - first;
      const count = view.getUint32(at + 4, true);
      counts[row] = count;
      recordAt[row] = at;
      at += HEADER + count * (indexSize + valueSize);
    }
    const indptr = new Float64Array(nRows + 1);
    for (let r = 0; r < nRows; r++) indptr[r + 1] = indptr[r]! + counts[r]!;
    const total = indptr[nRows]!;
    const indices = new Uint8Array(total * indexSize);
    const data = new Uint8Array(total * valueSize);
    for (let r = 0; r < nRows; r++) {
      const at = recordAt[r]!;
      if (at < 0) continue;
      const count = counts[r]!;
      const from = at + HEADER;
      indices.set(bytes.subarray(from, from + count * indexSize), indptr[r]! * indexSize);
      data.set(
        bytes.subarray(from + count * indexSize, from + count * (indexSize + valueSize)),
        indptr[r]! * valueSize,
      );
    }
    yield {
      nRows,
      indptr,
      indices: typedOver(info.indexDtype, indices) as RowBlock["indices"],
      data: typedOver(info.dtype, data) as RowBlock["data"],
    };
  }
}

const TYPED: Record<string, new (buffer: ArrayBuffer) => Typed> = {
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array as never,
  uint64: BigUint64Array as never,
  float32: Float32Array,
  float64: Float64Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
};

function typedOver(dtype: string, bytes: Uint8Array): Typed {
  const make = TYPED[dtype];
  if (make === undefined) {
    throw new DeltacellsError(
      `the companion's values are ${dtype}, which the rows in embedding order do not handle`,
      {
        tag: "InvalidInput",
        expected: Object.keys(TYPED),
        found: dtype,
      },
    );
  }
  return new make(bytes.buffer as ArrayBuffer);
}

/**
 * Rows {@link validateEmbeddingRows} compares with the companion's: every row of a dataset of at
 * most this many cells, else this many spread evenly over the rows (one batched read of each
 * store: a sample's cells are scattered over every chunk of the companion).
 */
export const EMBEDDING_ROWS_SAMPLE = 4096;

/** What {@link validateEmbeddingRows} found. */
export interface EmbeddingRowsValidation {
  problems: ValidationProblem[];
  /** Whether the manifest names rows in embedding order (false: nothing was checked). */
  checked: boolean;
  /** Rows compared with the companion's (all of them, or a sample: {@link EMBEDDING_ROWS_SAMPLE}). */
  compared: number;
}

/**
 * Checks the rows in embedding order the manifest of `ds` (at `location`) names against the
 * record and the dataset: the store's block describes the companion's matrix (its shape and
 * nonzeros, axis 0), `order.npy` is a permutation of the cells whose digest is the one recorded,
 * the order computed again from the dataset's embedding has that digest too, and each row compared
 * (every one, or {@link EMBEDDING_ROWS_SAMPLE} spread evenly) is the companion's row of the cell
 * `order.npy` puts there. The store's own chunks (checksums, indices) are the sporadik validator's
 * to read whole. Problems are returned, never thrown.
 */
export async function validateEmbeddingRows<S extends Store>(
  ds: Dataset,
  location: string,
  options: { openStore: (location: string) => S; sample?: number },
): Promise<EmbeddingRowsValidation> {
  const manifestObject = `${ds.url}/${MANIFEST_KEY}`;
  const problems: ValidationProblem[] = [];
  const fail = (object: string, tag: string, message: string) => {
    problems.push({ object, tag, message });
    return { problems, checked: true, compared: 0 };
  };
  const tagOf = (err: unknown) => (err as { _tag?: string })._tag ?? "Error";
  let named: EmbeddingRows | undefined;
  try {
    named = embeddingRowsOf(ds);
  } catch (err) {
    return fail(manifestObject, tagOf(err), (err as Error).message);
  }
  if (named === undefined) return { problems, checked: false, compared: 0 };
  const url = `${ds.url}/${named.path}`;
  const again = "convert again with --sporadik";
  const store = options.openStore(joinLocation(location, named.path));
  let reader: Awaited<ReturnType<typeof openReader>>;
  try {
    reader = await openReader(store, { axis: 0 });
  } catch (err) {
    return fail(
      url,
      tagOf(err),
      `the manifest names rows in embedding order at ${JSON.stringify(named.path)}, which cannot be read: ${(err as Error).message}`,
    );
  }
  const nnz = nnzOf(ds.manifest);
  const [cells, genes] = reader.info.shape;
  if (cells !== ds.nCells || genes !== ds.nGenes || reader.info.nnz !== nnz) {
    return fail(
      `${url}/zarr.json`,
      "InconsistentManifest",
      `the rows in embedding order hold a [${reader.info.shape.join(", ")}] matrix of ${reader.info.nnz} nonzeros, the dataset [${ds.nCells}, ${ds.nGenes}] of ${nnz}: they are another matrix's; ${again}`,
    );
  }
  const orderObject = `${url}/${ORDER_KEY}`;
  const bytes = await store.get(ORDER_KEY).catch(() => undefined);
  if (bytes === undefined)
    return fail(orderObject, "NotFound", `${orderObject} is missing (the cell of each row); ${again}`);
  let order: Uint32Array;
  try {
    const values = decodeNpyInt32(bytes, orderObject);
    order = new Uint32Array(values.buffer, values.byteOffset, values.length);
  } catch (err) {
    return fail(orderObject, tagOf(err), (err as Error).message);
  }
  const seen = new Uint8Array(ds.nCells);
  const repeated = order.length === ds.nCells ? order.findIndex((c) => c >= ds.nCells || seen[c]!++ > 0) : -1;
  if (order.length !== ds.nCells || repeated >= 0) {
    return fail(
      orderObject,
      "InconsistentManifest",
      order.length !== ds.nCells
        ? `${orderObject} lists ${order.length} cells, the dataset has ${ds.nCells}; ${again}`
        : `${orderObject} is not a permutation of the cells (row ${repeated} names cell ${order[repeated]}, out of range or named twice); ${again}`,
    );
  }
  const digest = orderDigest(order);
  if (digest !== named.digest)
    fail(
      orderObject,
      "InconsistentManifest",
      `the order in ${orderObject} has digest ${digest}, the manifest records ${named.digest}: a viewer computing the order from the embedding would map cells to other rows; ${again}`,
    );
  try {
    const computed = orderDigest(await orderOf(ds, named.embedding));
    if (computed !== named.digest)
      fail(
        manifestObject,
        "InconsistentManifest",
        `the order of the cells along ${named.embedding.join("/")} has digest ${computed}, metadata.sporadik_rows records ${named.digest}: the rows are sorted by another embedding than obs holds; ${again}`,
      );
  } catch (err) {
    fail(
      manifestObject,
      tagOf(err),
      `the embedding metadata.sporadik_rows names (${named.embedding.join("/")}) cannot be read from obs: ${(err as Error).message}`,
    );
  }
  const rel = companionOf(ds);
  if (rel === undefined)
    return fail(
      manifestObject,
      "InconsistentManifest",
      `${manifestObject} names rows in embedding order but no sporadik companion (metadata.sporadik), whose rows they are; ${again}`,
    );
  const limit = Math.max(1, options.sample ?? EMBEDDING_ROWS_SAMPLE);
  const k = Math.min(ds.nCells, limit);
  const rows = Array.from({ length: k }, (_, i) => Math.floor((i * ds.nCells) / k));
  try {
    const companion = await openReader(options.openStore(joinLocation(location, rel)), { axis: 0 });
    const [mine, theirs] = await Promise.all([
      reader.slicesAt(rows),
      companion.slicesAt(rows.map((p) => order[p]!)),
    ]);
    for (let i = 0; i < k; i++) {
      const [a0, a1] = [Number(mine.indptr[i]), Number(mine.indptr[i + 1])];
      const [b0, b1] = [Number(theirs.indptr[i]), Number(theirs.indptr[i + 1])];
      let same = a1 - a0 === b1 - b0;
      for (let j = 0; same && j < a1 - a0; j++)
        same = mine.indices[a0 + j] === theirs.indices[b0 + j] && mine.data[a0 + j] === theirs.data[b0 + j];
      if (!same)
        return fail(
          url,
          "InconsistentManifest",
          `row ${rows[i]} of the rows in embedding order is not the companion's row of cell ${order[rows[i]!]}, which order.npy puts there: they hold other counts; ${again}`,
        );
    }
  } catch (err) {
    // The chunk a reader names is relative to its store.
    const object = (err as { object?: string }).object;
    const inStore = object?.startsWith("/") ? `${url}${object}` : object;
    return fail(inStore ?? url, tagOf(err), (err as Error).message);
  }
  return { problems, checked: true, compared: k };
}
