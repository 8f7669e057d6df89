/**
 * The dataset's precomputed statistics (docs/stats.md): a few objects under `stats/` and their
 * index `stats/stats.json`, written last. The values are x = ln(1 + 10,000 · count / cell total)
 * (scanpy's `normalize_total(target_sum=1e4)` then `log1p`); per gene their sum, sum of squares and
 * nonzero count over every cell; per cell its total count; per category of each categorical obs
 * column and gene the same three sums over that category's cells. Every number a test between a
 * selection and the rest needs, where the rest is the total minus the selection.
 *
 * Each object is one zstd frame of little-endian arrays (the layouts below), named by its CRC-32
 * (`genes-1a2b3c4d.bin`): a new computation writes new keys, so the index in place always names
 * complete objects. The index records the version of the dataset it describes (its cells, genes,
 * nonzeros, a CRC-32 of its tile lists and the obs fingerprint): statistics of another version
 * (after `append`, or a conversion in place) are refused, not read as this one's.
 */
import { crc32 } from "../codec/crc32.js";
import { type DatasetManifest, nnzOf } from "../dataset/manifest.js";
import { DeltacellsError } from "../errors.js";
import { firstBytes } from "../first-bytes.js";

export const STATS_FORMAT = "deltacells-stats";
export const STATS_VERSION = 1;
/** The folder of the statistics inside the dataset, as `metadata.stats` names it. */
export const STATS_PATH = "stats";
/** The index, relative to the statistics' folder. */
export const STATS_INDEX = "stats.json";
/** Counts per cell are scaled to this total before the logarithm (scanpy's `target_sum`). */
export const TARGET_SUM = 10_000;
/**
 * Categorical columns with more categories are left out (listed in `skipped`): a column's object
 * holds 20 bytes per category and gene, and a column of per-cell labels is no grouping.
 */
export const MAX_STATS_CATEGORIES = 1000;

/** One stored object: its key (relative to `stats/`), stored and decoded sizes, CRC-32 of the stored bytes. */
export interface StatsObject {
  key: string;
  bytes: number;
  size: number;
  crc32: string;
}

/** The version of the dataset a set of statistics describes. */
export interface StatsDatasetVersion {
  n_cells: number;
  n_genes: number;
  nnz: number;
  /** CRC-32 (hex) of the JSON of `[tile_cells, tile_nnz, tile_bytes]`. */
  tiles_crc32: string;
  obs_fingerprint: string | null;
}

/** One categorical obs column's statistics. */
export interface StatsColumn extends StatsObject {
  name: string;
  /** Categories (the obs schema's vocabulary, in its order). */
  categories: number;
  /** Cells whose value is missing (in no category). */
  missing: number;
}

/** `stats/stats.json`. */
export interface StatsIndex {
  format: typeof STATS_FORMAT;
  version: typeof STATS_VERSION;
  target_sum: number;
  /** The order of the genes in every per-gene array: the source's (undone through `gene_order.npy`) or the dataset's. */
  gene_order: "source" | "dataset";
  dataset: StatsDatasetVersion;
  genes: StatsObject;
  cells: StatsObject & { dtype: "float32" | "float64" };
  columns: StatsColumn[];
  skipped: { name: string; reason: string }[];
}

/** The version fields of `manifest`, as an index records them. */
export function datasetVersion(manifest: DatasetManifest): StatsDatasetVersion {
  const tiles = new TextEncoder().encode(
    JSON.stringify([manifest.tile_cells, manifest.tile_nnz, manifest.tile_bytes]),
  );
  return {
    n_cells: manifest.n_cells,
    n_genes: manifest.n_genes,
    nnz: nnzOf(manifest),
    tiles_crc32: hex32(crc32(tiles)),
    obs_fingerprint: manifest.has_obs ? (manifest.obs_fingerprint ?? null) : null,
  };
}

export function hex32(v: number): string {
  return (v >>> 0).toString(16).padStart(8, "0");
}

/** Bytes of `n` uint32 values padded to a multiple of 8 (so the float64 arrays after them stay aligned). */
export function u32Bytes(n: number): number {
  return Math.ceil((4 * n) / 8) * 8;
}

/** Decoded size of the genes object: sum, sum_sq (float64), nnz (uint32, padded), counts (float64). */
export function genesSize(nGenes: number): number {
  return 8 * nGenes * 3 + u32Bytes(nGenes);
}

/** Decoded size of a column's object: cells (uint32, padded), then sum, sum_sq (float64) and nnz (uint32) per category and gene. */
export function columnSize(nCategories: number, nGenes: number): number {
  return u32Bytes(nCategories) + 8 * nCategories * nGenes * 2 + 4 * nCategories * nGenes;
}

/** Decoded size of the cell totals. */
export function cellsSize(nCells: number, dtype: "float32" | "float64"): number {
  return (dtype === "float32" ? 4 : 8) * nCells;
}

function bad(
  object: string,
  message: string,
  field: string,
  expected: unknown,
  found: unknown,
  joiner = ": ",
) {
  return new DeltacellsError(`${object}${joiner}${message}`, {
    tag: "FormatError",
    object,
    field,
    expected,
    found,
  });
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isHex32 = (v: unknown): v is string => typeof v === "string" && /^[0-9a-f]{8}$/.test(v);
const isKey = (v: unknown): v is string =>
  typeof v === "string" && /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/.test(v);

/**
 * Parses and checks `stats/stats.json`: its format and version, every field's type, and each
 * object's decoded size against the shapes it declares. Whether it describes the dataset at hand
 * is {@link checkStatsVersion}'s question.
 */
export function parseStatsIndex(bytes: Uint8Array, object: string): StatsIndex {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new DeltacellsError(
      `${object} is not valid JSON (it starts with ${firstBytes(bytes)}): compute the statistics again with \`deltacells stats DATASET\``,
      { tag: "FormatError", object, found: firstBytes(bytes), cause },
    );
  }
  const m = json as Record<string, unknown>;
  if (m === null || typeof m !== "object" || m.format !== STATS_FORMAT) {
    throw bad(
      object,
      `format is ${JSON.stringify(m?.format)}, expected "${STATS_FORMAT}"`,
      "format",
      STATS_FORMAT,
      m?.format,
    );
  }
  if (m.version !== STATS_VERSION) {
    throw new DeltacellsError(
      `${object} holds statistics of version ${JSON.stringify(m.version)}; this reader understands version ${STATS_VERSION} only (upgrade deltacells, or compute them again with \`deltacells stats DATASET\`)`,
      { tag: "UnsupportedVersion", object, field: "version", expected: STATS_VERSION, found: m.version },
    );
  }
  if (m.target_sum !== TARGET_SUM)
    throw bad(
      object,
      `target_sum is ${m.target_sum}, expected ${TARGET_SUM}`,
      "target_sum",
      TARGET_SUM,
      m.target_sum,
    );
  if (m.gene_order !== "source" && m.gene_order !== "dataset")
    throw bad(object, "gene_order must be source or dataset", "gene_order", "source | dataset", m.gene_order);
  const d = m.dataset as Record<string, unknown> | undefined;
  if (
    !d ||
    !isCount(d.n_cells) ||
    !isCount(d.n_genes) ||
    !isCount(d.nnz) ||
    !isHex32(d.tiles_crc32) ||
    !(d.obs_fingerprint === null || typeof d.obs_fingerprint === "string")
  )
    throw bad(
      object,
      "dataset must record n_cells, n_genes, nnz, tiles_crc32 and obs_fingerprint",
      "dataset",
      "the dataset's version",
      d,
    );
  const nCells = d.n_cells;
  const nGenes = d.n_genes;
  const checkObject = (o: unknown, field: string, size: number): void => {
    const r = o as Record<string, unknown> | undefined;
    if (!r || !isKey(r.key) || !isCount(r.bytes) || !isCount(r.size) || !isHex32(r.crc32))
      throw bad(object, `${field} must name an object (key, bytes, size, crc32)`, field, "an object", o);
    if (r.size !== size)
      throw bad(
        object,
        `${field} declares ${r.size} decoded bytes, its shape makes ${size}`,
        `${field}.size`,
        size,
        r.size,
      );
  };
  checkObject(m.genes, "genes", genesSize(nGenes));
  const cells = m.cells as Record<string, unknown> | undefined;
  if (cells?.dtype !== "float32" && cells?.dtype !== "float64")
    throw bad(
      object,
      "cells.dtype must be float32 or float64",
      "cells.dtype",
      "float32 | float64",
      cells?.dtype,
    );
  checkObject(cells, "cells", cellsSize(nCells, cells.dtype));
  if (!Array.isArray(m.columns)) throw bad(object, "columns must be a list", "columns", "a list", m.columns);
  m.columns.forEach((c: Record<string, unknown>, i: number) => {
    const field = `columns[${i}]`;
    if (typeof c?.name !== "string" || !isCount(c.categories) || c.categories < 1 || !isCount(c.missing))
      throw bad(object, `${field} must have a name, categories >= 1 and missing`, field, "a column", c);
    checkObject(c, field, columnSize(c.categories, nGenes));
  });
  if (
    !Array.isArray(m.skipped) ||
    !m.skipped.every((s) => typeof s?.name === "string" && typeof s?.reason === "string")
  )
    throw bad(object, "skipped must be a list of {name, reason}", "skipped", "a list", m.skipped);
  return m as unknown as StatsIndex;
}

/**
 * Refuses statistics that describe another version of the dataset (`StaleStats`): cells appended,
 * or the dataset converted again in place since they were computed.
 */
export function checkStatsVersion(index: StatsIndex, manifest: DatasetManifest, object: string): void {
  const want = datasetVersion(manifest);
  const got = index.dataset;
  for (const field of ["n_cells", "n_genes", "nnz", "tiles_crc32", "obs_fingerprint"] as const) {
    if (got[field] !== want[field]) {
      throw new DeltacellsError(
        `${object} describes another version of the dataset (its ${field} is ${JSON.stringify(got[field])}, the manifest's ${JSON.stringify(want[field])}): the dataset changed since the statistics were computed (cells appended, or converted again). Compute them again with \`deltacells stats DATASET\``,
        { tag: "StaleStats", object, field: `dataset.${field}`, expected: want[field], found: got[field] },
      );
    }
  }
}

/** The stored bytes of `entry`, checked (size, CRC-32); throws a `FormatError` naming the object. */
export function checkStored(entry: StatsObject, bytes: Uint8Array | undefined, object: string): Uint8Array {
  if (bytes === undefined) {
    throw new DeltacellsError(
      `${object} is missing, though stats.json names it: the statistics are damaged. Compute them again with \`deltacells stats DATASET\``,
      { tag: "NotFound", object },
    );
  }
  if (bytes.length !== entry.bytes) {
    throw bad(
      object,
      `has ${bytes.length} bytes, stats.json says ${entry.bytes}: the object is damaged or was replaced; compute the statistics again with \`deltacells stats DATASET\``,
      "bytes",
      entry.bytes,
      bytes.length,
      " ",
    );
  }
  const crc = hex32(crc32(bytes));
  if (crc !== entry.crc32) {
    throw bad(
      object,
      `has CRC-32 ${crc}, stats.json says ${entry.crc32}: the object is damaged; compute the statistics again with \`deltacells stats DATASET\``,
      "crc32",
      entry.crc32,
      crc,
      " ",
    );
  }
  return bytes;
}
