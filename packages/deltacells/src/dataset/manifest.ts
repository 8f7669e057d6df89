/**
 * `manifest.json`: the dataset's table of contents, written last by the writer. Parsing checks
 * every count against every other one, so a reader that got this far can trust the numbers it
 * uses to locate cells.
 */
import { DeltacellsError } from "../errors.js";
import { firstBytes } from "../first-bytes.js";

export const DATASET_FORMAT = "deltacells-dataset";
export const DATASET_VERSION = 2;
export const MANIFEST_KEY = "manifest.json";
export const GENE_ORDER_KEY = "gene_order.npy";
export const VAR_NAMES_KEY = "var_names.txt";
export const VAR_TABLE_KEY = "var.parquet";

/** The store key of tile `i` (`tiles/tile_000042.dct`). */
export function tileKey(i: number): string {
  return `tiles/tile_${String(i).padStart(6, "0")}.dct`;
}

/** The manifest's fields, named as in the spec (snake_case, as stored). */
export interface DatasetManifest {
  format: typeof DATASET_FORMAT;
  version: typeof DATASET_VERSION;
  n_cells: number;
  n_genes: number;
  tile_size: number;
  tile_cells: number[];
  tile_nnz: number[];
  tile_bytes: number[];
  n_chunks: number;
  zstd_level: number;
  has_gene_order: boolean;
  has_var_names: boolean;
  has_var_table: boolean;
  has_obs: boolean;
  obs_tiles_per_file?: number;
  obs_shard_bytes?: number[];
  obs_shard_sha256?: string[];
  obs_fingerprint?: string;
  metadata: Record<string, unknown>;
  [extra: string]: unknown;
}

function inconsistent(object: string, field: string, message: string, expected: unknown, found: unknown) {
  return new DeltacellsError(`${object}: ${message}`, {
    tag: "InconsistentManifest",
    object,
    field,
    expected,
    found,
  });
}

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Parse and check a manifest. `object` names it in errors (the store URL plus key). Refuses an
 * unknown format or version, missing or mistyped fields, per-tile lists of the wrong length, sums
 * that disagree with `n_cells`, tiles that break the tile-size rule, and incomplete obs fields.
 */
export function parseManifest(bytes: Uint8Array, object: string): DatasetManifest {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    // JSON.parse's own message quotes the text raw: a binary object would garble the terminal
    throw new DeltacellsError(
      `${object} is not valid JSON (it starts with ${firstBytes(bytes)}): it is not a dataset manifest; convert the dataset again`,
      { tag: "FormatError", object, found: firstBytes(bytes), cause },
    );
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new DeltacellsError(`${object} is not a JSON object`, {
      tag: "FormatError",
      object,
      found: typeof json,
    });
  }
  const m = json as Record<string, unknown>;
  if (m.format !== DATASET_FORMAT) {
    throw new DeltacellsError(
      `${object} has format ${JSON.stringify(m.format)}, expected "${DATASET_FORMAT}": this is not a deltacells dataset`,
      { tag: "FormatError", object, field: "format", expected: DATASET_FORMAT, found: m.format },
    );
  }
  if (m.version !== DATASET_VERSION) {
    throw new DeltacellsError(
      `${object} is a deltacells dataset of version ${JSON.stringify(m.version)}; this reader understands version ${DATASET_VERSION} only (upgrade deltacells)`,
      { tag: "UnsupportedVersion", object, field: "version", expected: DATASET_VERSION, found: m.version },
    );
  }
  const need = (field: string, ok: (v: unknown) => boolean, what: string) => {
    if (!ok(m[field])) {
      throw inconsistent(
        object,
        field,
        `field ${field} must be ${what}, found ${JSON.stringify(m[field])}`,
        what,
        m[field],
      );
    }
  };
  const countList = (v: unknown) => Array.isArray(v) && v.every(isCount);
  const bool = (v: unknown) => typeof v === "boolean";
  need("n_cells", isCount, "a non-negative integer");
  need("n_genes", (v) => isCount(v) && v >= 1 && v <= 2 ** 31, "an integer in 1 .. 2^31");
  need("tile_size", (v) => isCount(v) && v >= 1, "a positive integer");
  need("tile_cells", countList, "a list of non-negative integers");
  need("tile_nnz", countList, "a list of non-negative integers");
  need("tile_bytes", countList, "a list of non-negative integers");
  need("n_chunks", isCount, "a non-negative integer");
  need("zstd_level", (v) => typeof v === "number" && Number.isInteger(v), "an integer");
  for (const f of ["has_gene_order", "has_var_names", "has_var_table", "has_obs"])
    need(f, bool, "true or false");
  need("metadata", (v) => v !== null && typeof v === "object" && !Array.isArray(v), "a JSON object");

  const man = m as unknown as DatasetManifest;
  const nTiles = man.tile_cells.length;
  for (const f of ["tile_nnz", "tile_bytes"] as const) {
    if (man[f].length !== nTiles) {
      throw inconsistent(
        object,
        f,
        `${f} has ${man[f].length} entries but tile_cells has ${nTiles}`,
        nTiles,
        man[f].length,
      );
    }
  }
  const sum = man.tile_cells.reduce((a, b) => a + b, 0);
  if (sum !== man.n_cells) {
    throw inconsistent(
      object,
      "tile_cells",
      `tile_cells sum to ${sum} but n_cells is ${man.n_cells}`,
      man.n_cells,
      sum,
    );
  }
  for (let i = 0; i < nTiles; i++) {
    const c = man.tile_cells[i]!;
    const last = i === nTiles - 1;
    if (last ? c < 1 || c > man.tile_size : c !== man.tile_size) {
      throw inconsistent(
        object,
        "tile_cells",
        `tile ${i} holds ${c} cells; every tile but the last must hold exactly tile_size = ${man.tile_size} and the last 1 .. tile_size`,
        last ? `1..${man.tile_size}` : man.tile_size,
        c,
      );
    }
  }
  if (man.has_obs) {
    need("obs_tiles_per_file", (v) => isCount(v) && v >= 1, "a positive integer");
    const k = man.obs_tiles_per_file!;
    const shards = Math.ceil(nTiles / k);
    need("obs_shard_bytes", countList, "a list of non-negative integers");
    need(
      "obs_shard_sha256",
      (v) => Array.isArray(v) && v.every((s) => typeof s === "string" && /^[0-9a-f]{64}$/.test(s)),
      "a list of SHA-256 hex digests",
    );
    need("obs_fingerprint", (v) => typeof v === "string" && /^[0-9a-f]{24}$/.test(v), "24 hex characters");
    for (const f of ["obs_shard_bytes", "obs_shard_sha256"] as const) {
      const len = man[f]!.length;
      if (len !== shards) {
        throw inconsistent(
          object,
          f,
          `${f} has ${len} entries but ${nTiles} tiles at ${k} per shard make ${shards}`,
          shards,
          len,
        );
      }
    }
  }
  return man;
}

/**
 * The dataset's total number of stored nonzeros: the sum of the manifest's `tile_nnz`. The
 * manifest has no total of its own (each tile's count is what a reader checks), so every
 * summary, progress total and size estimate adds these up here.
 */
export function nnzOf(manifest: Pick<DatasetManifest, "tile_nnz">): number {
  let nnz = 0;
  for (const n of manifest.tile_nnz) nnz += n;
  return nnz;
}

/** Serialize a manifest as the writer stores it (compact JSON, one line). */
export function encodeManifest(man: DatasetManifest): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(man)}\n`);
}
