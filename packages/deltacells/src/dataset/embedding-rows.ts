/**
 * The companion's rows in embedding order: a second sporadik store of the same counts whose
 * axis-0 rows are the cells sorted along a Hilbert curve over one embedding (`X_umap` by default),
 * named by the manifest's `metadata.sporadik_rows`. A lasso takes cells that are near one another
 * in the embedding; in the dataset's order they are scattered over every chunk of the companion's
 * row layout (10,000 cells of 1,000,000 touch ~1,400 of its ~1,400 chunks), in this order they are
 * a few runs (26 chunks), so the read is bounded by the selection, not by the dataset.
 *
 * The order is a pure function of the embedding's float32 coordinates, computed here for both
 * sides: the writer sorts the rows with it, the viewer maps a selection's cells to rows with it
 * (from the coordinates it draws, so no per-cell array is read), and the digest recorded beside
 * the path proves both computed the same order. `order.npy` in the store lists the cell of each
 * row for readers that do not compute it (numpy, Python sporadik).
 */
import type { Store } from "@deltacells/storage";
import { DeltacellsError } from "../errors.js";
import { type DatasetManifest, encodeManifest, MANIFEST_KEY, parseManifest } from "./manifest.js";
import { encodeNpyInt32 } from "./npy.js";
import type { Dataset } from "./reader.js";

/** The store's `order.npy`: the cell of each row. */
export const ORDER_KEY = "order.npy";

/** Where `deltacells convert --sporadik` (and `append --sporadik`) writes the store of rows in embedding order. */
export const EMBEDDING_ROWS_PATH = "sporadik-rows";

/** What `metadata.sporadik_rows` records. */
export interface EmbeddingRows {
  /** The store, relative to the dataset. */
  path: string;
  /** The obs columns of the embedding the rows are ordered by (x, then y). */
  embedding: [string, string];
  /** {@link orderDigest} of the order: a viewer computing another order (other coordinates) does not use the store. */
  digest: string;
}

/** A relative path of plain names, none starting with a dot: it cannot leave the dataset's prefix. */
const INSIDE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/** The cell order's bits per axis of the Hilbert curve: key (2 x bits) and cell fit in a double. */
function curveBits(nCells: number): number {
  const cellBits = Math.max(1, Math.ceil(Math.log2(Math.max(2, nCells))));
  return Math.max(1, Math.min(16, Math.floor((53 - cellBits) / 2)));
}

/** Position of (x, y) along a Hilbert curve over a 2^bits x 2^bits grid. */
function hilbertKey(x: number, y: number, bits: number): number {
  let d = 0;
  for (let s = 1 << (bits - 1); s > 0; s >>>= 1) {
    const rx = (x & s) > 0 ? 1 : 0;
    const ry = (y & s) > 0 ? 1 : 0;
    d += s * s * ((3 * rx) ^ ry);
    if (ry === 0) {
      if (rx === 1) {
        x = s - 1 - x;
        y = s - 1 - y;
      }
      const t = x;
      x = y;
      y = t;
    }
  }
  return d;
}

/**
 * The cells in embedding order: along a Hilbert curve over the bounding box of the finite
 * coordinates (cells in one grid square by cell index), cells without both coordinates last in
 * cell order. Deterministic for the same float32 coordinates.
 */
export function embeddingOrder(x: Float32Array, y: Float32Array): Uint32Array {
  const n = x.length;
  if (y.length !== n) {
    throw new DeltacellsError(`an embedding's two columns have ${n} and ${y.length} values`, {
      tag: "InvalidInput",
      expected: "two columns of one length",
      found: [n, y.length],
    });
  }
  let x0 = Number.POSITIVE_INFINITY;
  let x1 = Number.NEGATIVE_INFINITY;
  let y0 = Number.POSITIVE_INFINITY;
  let y1 = Number.NEGATIVE_INFINITY;
  for (let c = 0; c < n; c++) {
    const a = x[c]!;
    const b = y[c]!;
    if (!Number.isFinite(a) || !Number.isFinite(b)) continue;
    if (a < x0) x0 = a;
    if (a > x1) x1 = a;
    if (b < y0) y0 = b;
    if (b > y1) y1 = b;
  }
  const bits = curveBits(n);
  const top = 2 ** bits - 1;
  const cellSpan = 2 ** Math.max(1, Math.ceil(Math.log2(Math.max(2, n))));
  const sx = x1 > x0 ? top / (x1 - x0) : 0;
  const sy = y1 > y0 ? top / (y1 - y0) : 0;
  // One double per cell: its curve position above, its index below (exact below 2^53).
  const keys = new Float64Array(n);
  const last = 4 ** bits;
  for (let c = 0; c < n; c++) {
    const a = x[c]!;
    const b = y[c]!;
    const key =
      Number.isFinite(a) && Number.isFinite(b)
        ? hilbertKey(Math.min(top, Math.floor((a - x0) * sx)), Math.min(top, Math.floor((b - y0) * sy)), bits)
        : last;
    keys[c] = key * cellSpan + c;
  }
  keys.sort();
  const order = new Uint32Array(n);
  for (let p = 0; p < n; p++) order[p] = keys[p]! % cellSpan;
  return order;
}

/**
 * The obs columns the rows in embedding order of `ds` are sorted by: `X_umap_0`/`X_umap_1` when
 * obs has them, else the first `KEY_0`/`KEY_1` pair of numeric columns; undefined without one
 * (what `convert --sporadik` checks before writing them by default).
 */
export async function embeddingRowsColumns(ds: Dataset): Promise<[string, string] | undefined> {
  if (!ds.manifest.has_obs) return undefined;
  const schema = await ds.obsSchema();
  const numeric = new Set(schema.columns.filter((c) => c.kind === "numeric").map((c) => c.name));
  const pairs = [...numeric]
    .map((n) => /^(.+)_0$/.exec(n)?.[1])
    .filter((base): base is string => base !== undefined && numeric.has(`${base}_1`))
    .sort((a, b) => Number(b === "X_umap") - Number(a === "X_umap") || (a < b ? -1 : a > b ? 1 : 0));
  const base = pairs[0];
  return base === undefined ? undefined : [`${base}_0`, `${base}_1`];
}

/** Row of each cell in `order` (its inverse). */
export function rowsOf(order: Uint32Array): Uint32Array {
  const rows = new Uint32Array(order.length);
  for (let p = 0; p < order.length; p++) rows[order[p]!] = p;
  return rows;
}

/** `order` as the store's `order.npy` (int32, what `numpy.load` reads). */
export function orderNpy(order: Uint32Array): Uint8Array {
  return encodeNpyInt32(new Int32Array(order.buffer, order.byteOffset, order.length));
}

/** FNV-1a (32-bit) over the order, as 8 hex digits: the two sides computed the same order. */
export function orderDigest(order: Uint32Array): string {
  let h = 0x811c9dc5;
  for (let p = 0; p < order.length; p++) {
    let v = order[p]!;
    for (let k = 0; k < 4; k++) {
      h = Math.imul(h ^ (v & 0xff), 0x01000193) >>> 0;
      v >>>= 8;
    }
  }
  return h.toString(16).padStart(8, "0");
}

function inconsistent(url: string, found: unknown): DeltacellsError {
  return new DeltacellsError(
    `${url}/manifest.json: metadata.sporadik_rows must be {"path": a relative path inside the dataset, "embedding": [two obs columns], "digest": 8 hex digits}, got ${JSON.stringify(found)}; convert again with --sporadik-rows`,
    {
      tag: "InconsistentManifest",
      object: `${url}/manifest.json`,
      field: "metadata.sporadik_rows",
      expected: "{path, embedding, digest}",
      found,
    },
  );
}

/**
 * The store of rows in embedding order a manifest names (`metadata.sporadik_rows`), or undefined
 * when it names none; refused as `InconsistentManifest` when malformed or leaving the dataset.
 */
export function embeddingRowsOf(ds: { url: string; manifest: DatasetManifest }): EmbeddingRows | undefined {
  const raw = ds.manifest.metadata.sporadik_rows;
  if (raw === undefined) return undefined;
  const r = raw as Partial<EmbeddingRows> | null;
  if (
    r === null ||
    typeof r !== "object" ||
    typeof r.path !== "string" ||
    !INSIDE.test(r.path) ||
    !Array.isArray(r.embedding) ||
    r.embedding.length !== 2 ||
    !r.embedding.every((c) => typeof c === "string") ||
    typeof r.digest !== "string" ||
    !/^[0-9a-f]{8}$/.test(r.digest)
  ) {
    throw inconsistent(ds.url, raw);
  }
  return { path: r.path, embedding: [r.embedding[0]!, r.embedding[1]!], digest: r.digest };
}

/**
 * Names the store of rows in embedding order in the manifest of the dataset in `store`, once the
 * store is complete: a reader finds no such store, or a complete one. `undefined` removes the
 * name, before a named store is written over (so a cut write leaves it unnamed, never named and
 * torn).
 */
export async function nameEmbeddingRows(store: Store, rows: EmbeddingRows | undefined): Promise<void> {
  const object = `${store.url}/${MANIFEST_KEY}`;
  const bytes = await store.get(MANIFEST_KEY);
  if (bytes === undefined)
    throw new DeltacellsError(`${object} vanished while the rows in embedding order were written`, {
      tag: "ConcurrentChange",
      object,
    });
  const manifest = parseManifest(bytes, object);
  const { sporadik_rows: _named, ...rest } = manifest.metadata;
  manifest.metadata = rows === undefined ? rest : { ...rest, sporadik_rows: { ...rows } };
  await store.set(MANIFEST_KEY, encodeManifest(manifest));
}
