/**
 * A deep check of a dataset: the manifest (already checked on open), every tile fetched, size
 * checked and decoded with all of the codec's checks, every optional file present and consistent.
 * The statistics the manifest names are read and checked too (stats/validate.ts). Problems are
 * collected rather than thrown so that one report lists them all.
 */

import { isDeltacellsError } from "../errors.js";
import { validateObs } from "../obs/validate.js";
import { loadParquet } from "../parquet-load.js";
import { validateStats } from "../stats/validate.js";
import { tileKey, VAR_TABLE_KEY } from "./manifest.js";
import type { Dataset } from "./reader.js";

export interface ValidationProblem {
  /** The object concerned (a key in the dataset). */
  object: string;
  /** The error's tag (a storage error's too: `HttpStatus`, `RetriesExhausted`, ...), or "Error" for an untagged failure. */
  tag: string;
  message: string;
}

export interface ValidationReport {
  valid: boolean;
  tilesChecked: number;
  nnz: number;
  bytes: number;
  problems: ValidationProblem[];
}

/** A tagged error's tag (deltacells' own, or a store's: `HttpStatus`, `RetriesExhausted` ...), else "Error". */
function tagOf(err: unknown): string {
  if (isDeltacellsError(err)) return err._tag;
  const tag = (err as { _tag?: unknown } | null)?._tag;
  return typeof tag === "string" ? tag : "Error";
}

function problem(object: string, err: unknown): ValidationProblem {
  return {
    object,
    tag: tagOf(err),
    message: (err as Error).message ?? String(err),
  };
}

/**
 * Check everything; `onTile` is called after each tile (for progress). `concurrency` tiles are
 * fetched and decoded at once (default 4: with a `TilePool` as the decoder they decode in parallel).
 */
export async function validateDataset(
  ds: Dataset,
  opts: { onTile?: (done: number, total: number) => void; signal?: AbortSignal; concurrency?: number } = {},
): Promise<ValidationReport> {
  const problems: ValidationProblem[] = [];
  let nnz = 0;
  let bytes = 0;
  let checked = 0;
  let done = 0;
  // Each tile's sum of counts, for the statistics' cell totals (NaN where a tile cannot be read).
  const tileCounts = new Float64Array(ds.nTiles).fill(Number.NaN);
  const checkTile = async (i: number) => {
    try {
      const raw = await ds.tileBytes(i, { signal: opts.signal });
      bytes += raw.length;
      const tile = await ds.tileFromBytes(i, raw);
      nnz += tile.nnz;
      let counts = 0;
      for (let k = 0; k < tile.nnz; k++) counts += tile.data[k]!;
      tileCounts[i] = counts;
      tile.release();
      checked++;
    } catch (err) {
      problems.push(problem(tileKey(i), err));
    }
    opts.onTile?.(++done, ds.nTiles);
  };
  let next = 0;
  const worker = async () => {
    while (next < ds.nTiles) {
      opts.signal?.throwIfAborted();
      await checkTile(next++);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 4) }, worker));
  try {
    await ds.geneNames();
  } catch (err) {
    problems.push(problem("var_names.txt", err));
  }
  try {
    await ds.geneOrder();
  } catch (err) {
    problems.push(problem("gene_order.npy", err));
  }
  try {
    const table = await ds.varTableBytes();
    if (table) {
      const magic = (b: Uint8Array) => b[0] === 0x50 && b[1] === 0x41 && b[2] === 0x52 && b[3] === 0x31; // "PAR1"
      if (table.length < 12 || !magic(table) || !magic(table.subarray(table.length - 4))) {
        problems.push({
          object: VAR_TABLE_KEY,
          tag: "FormatError",
          message: `${VAR_TABLE_KEY} is not a parquet file (no PAR1 magic at both ends)`,
        });
      } else {
        const buffer = table.buffer.slice(
          table.byteOffset,
          table.byteOffset + table.byteLength,
        ) as ArrayBuffer;
        const { parquetMetadata } = await loadParquet();
        const rows = Number(parquetMetadata(buffer).num_rows);
        if (rows !== ds.nGenes) {
          problems.push({
            object: VAR_TABLE_KEY,
            tag: "InconsistentManifest",
            message: `${VAR_TABLE_KEY} has ${rows} rows but the dataset has ${ds.nGenes} genes`,
          });
        }
      }
    }
  } catch (err) {
    problems.push(problem(VAR_TABLE_KEY, err));
  }
  // Tiles beyond the manifest's count mean a writer left debris (or the manifest lost entries).
  const lister = (ds.store as { list?: (prefix: string) => Promise<string[]> }).list;
  if (typeof lister === "function") {
    try {
      const stray = (await lister.call(ds.store, "tiles/")).filter((k) => {
        const m = /^tiles\/tile_(\d{6})\.dct$/.exec(k);
        return !m || Number(m[1]) >= ds.nTiles;
      });
      for (const key of stray) {
        problems.push({
          object: key,
          tag: "InconsistentManifest",
          message: `${key} is not one of the manifest's ${ds.nTiles} tiles`,
        });
      }
    } catch {
      // Listing is optional (a plain HTTP server cannot list): nothing to check then.
    }
  }
  if (ds.manifest.has_obs) {
    try {
      problems.push(...(await validateObs(ds.store, ds.manifest, { signal: opts.signal })));
    } catch (err) {
      problems.push(problem("obs/", err));
    }
  }
  // The statistics the manifest names (`metadata.stats`), read whole and checked against each
  // other and against the tiles' counts.
  problems.push(...(await validateStats(ds, tileCounts, opts.signal)));
  problems.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : 0));
  return { valid: problems.length === 0, tilesChecked: checked, nnz, bytes, problems };
}
