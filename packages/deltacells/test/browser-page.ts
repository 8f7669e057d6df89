/**
 * The page side of codec.browser.test.ts: the browser build of `@deltacells/core` (zstd from zstddec's
 * WASM, the TypeScript loops) decoding tiles fetched from the test server, on the page's thread
 * and on a TilePool of Web Workers. Every export returns JSON.
 */
import { createTilePool, type DecodedTile, type DecodeOptions, decodeTile, loadZstd } from "@deltacells/core";
import { caught, type ErrorInfo, errorInfo, plain } from "../../../test-utils/browser/page-helpers.js";
import type { TileContents } from "./codec-helpers.js";

/** A decoded tile in the golden JSON's spelling (a type only: the bundle never loads node:assert). */
export type Contents = TileContents;

function contentsOf(d: DecodedTile): Contents {
  return {
    n_cells: d.nCells,
    n_genes: d.nGenes,
    nnz: d.nnz,
    indptr: plain(d.indptr),
    indices: plain(d.indices),
    data: plain(d.data),
  };
}

async function fetchTile(url: string): Promise<Uint8Array> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** The tile with byte `at` (negative: from the end) flipped. */
async function damaged(url: string, at: number): Promise<Uint8Array> {
  const bytes = await fetchTile(url);
  const i = at < 0 ? bytes.length + at : at;
  bytes[i]! ^= 0x5a;
  return bytes;
}

/** The zstd implementation the codec picked in this page. */
export async function zstdName(): Promise<string> {
  return (await loadZstd()).name;
}

/** `decodeTile` on the page's thread. */
export async function decode(
  url: string,
  opts: Pick<DecodeOptions, "cells" | "values"> = {},
): Promise<Contents> {
  return contentsOf(await decodeTile(await fetchTile(url), opts));
}

/** The error `decodeTile` rejects with on a tile with one byte flipped. */
export async function decodeDamaged(url: string, at: number): Promise<ErrorInfo> {
  const bytes = await damaged(url, at);
  return caught(() => decodeTile(bytes, { object: "tiles/damaged.dct" }));
}

/** What a pool decode did in the page, besides its result. */
export interface PoolRun {
  result: Contents | ErrorInfo;
  /** The URLs of the Web Workers the pool started. */
  workers: string[];
  crossOriginIsolated: boolean;
  /** Whether the outputs were shared memory the workers wrote into. */
  sharedOutput: boolean;
}

/**
 * Decodes a tile (or one with byte `damageAt` flipped) on a pool of `threads` Web Workers.
 * The page's `Worker` is wrapped to record which workers the pool really started.
 */
export async function poolDecode(
  url: string,
  threads: number,
  opts: Pick<DecodeOptions, "cells" | "values"> & { damageAt?: number } = {},
): Promise<PoolRun> {
  const workers: string[] = [];
  const Original = globalThis.Worker;
  globalThis.Worker = class extends Original {
    constructor(src: string | URL, o?: WorkerOptions) {
      super(src, o);
      workers.push(String(src));
    }
  };
  const pool = createTilePool({ threads });
  try {
    const bytes = opts.damageAt === undefined ? await fetchTile(url) : await damaged(url, opts.damageAt);
    let result: Contents | ErrorInfo;
    let sharedOutput = false;
    try {
      const d = await pool.decode(bytes, {
        cells: opts.cells,
        values: opts.values,
        object: "tiles/pooled.dct",
      });
      sharedOutput = d.indices.buffer instanceof (globalThis.SharedArrayBuffer ?? class {});
      result = contentsOf(d);
    } catch (err) {
      result = errorInfo(err);
    }
    return { result, workers, crossOriginIsolated: globalThis.crossOriginIsolated, sharedOutput };
  } finally {
    await pool.close();
    globalThis.Worker = Original;
  }
}
