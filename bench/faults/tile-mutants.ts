/**
 * Tile mutants: bit flips, byte runs set to 0x00/0xFF, truncations and extensions of a dataset's
 * tile, aimed at each region of the format (header, CRC, chunk table, indptr, the byte-plane
 * frames, the exception frames). Each mutant is read back through `ds.cells()` (a random range
 * of the tile's cells; one case in four decoding on a worker pool) or, one case in 20,
 * `deltacells export` to Matrix Market, and compared with
 * the unmutated answer: the same numbers, or a tagged error naming the tile.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CellRows, createTilePool } from "@deltacells/core";
import { openDataset } from "@deltacells/core/node";
import { exportCommand } from "../../packages/cli/src/export/command.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { workDir, writeSynthetic } from "./fixtures.js";
import { type CaseResult, judgeError, withTimeout } from "./outcome.js";

type Region = "header" | "crc" | "table" | "indptr" | "planes" | "exceptions";

/** The byte ranges [start, end) of each region of one tile, read off its header and chunk table. */
export function tileRegions(tile: Uint8Array): Record<Region, [number, number][]> {
  const v = new DataView(tile.buffer, tile.byteOffset, tile.byteLength);
  const nCells = Number(v.getBigUint64(16, true));
  const nChunks = v.getUint32(36, true);
  const indptrOff = Number(v.getBigUint64(40, true));
  const regions: Record<Region, [number, number][]> = {
    header: [
      [0, 56],
      [60, 64],
    ],
    crc: [[56, 60]],
    table: [[64, 64 + 96 * nChunks]],
    indptr: [[indptrOff, indptrOff + 8 * (nCells + 1)]],
    planes: [],
    exceptions: [],
  };
  for (let k = 0; k < nChunks; k++) {
    const word = (i: number) => Number(v.getBigUint64(64 + 96 * k + 8 * i, true));
    regions.planes.push([word(4), word(4) + word(5)], [word(6), word(6) + word(7)]);
    for (const i of [8, 10]) if (word(i + 1) > 0) regions.exceptions.push([word(i), word(i) + word(i + 1)]);
  }
  return regions;
}

type Mutate = (tile: Uint8Array, at: number, rnd: () => number) => Uint8Array;

/**
 * Byte damage at a seeded offset, each returning a damaged copy: one or two bits flipped, a run
 * of 1-16 bytes set to 0x00 or 0xFF, a truncation there, 1-64 random bytes appended. The obs cache
 * class damages its files the same ways.
 */
export const MUTATIONS: Record<"flip" | "fill" | "truncate" | "extend", Mutate> = {
  flip: (tile, at, rnd) => {
    const out = tile.slice();
    out[at]! ^= 1 << Math.floor(rnd() * 8);
    if (rnd() < 0.5)
      out[Math.min(out.length - 1, at + 1 + Math.floor(rnd() * 8))]! ^= 1 << Math.floor(rnd() * 8);
    return out;
  },
  fill: (tile, at, rnd) => {
    const out = tile.slice();
    out.fill(rnd() < 0.5 ? 0 : 0xff, at, Math.min(out.length, at + 1 + Math.floor(rnd() * 16)));
    return out;
  },
  truncate: (tile, at) => tile.slice(0, at),
  extend: (tile, _at, rnd) => {
    const out = new Uint8Array(tile.length + 1 + Math.floor(rnd() * 64));
    out.set(tile);
    for (let i = tile.length; i < out.length; i++) out[i] = Math.floor(rnd() * 256);
    return out;
  },
};

function sameRows(a: CellRows, b: CellRows): boolean {
  if (a.nCells !== b.nCells || a.indices.length !== b.indices.length) return false;
  for (let i = 0; i <= a.nCells; i++) if (a.indptr[i] !== b.indptr[i]) return false;
  for (let i = 0; i < a.indices.length; i++) {
    if (a.indices[i] !== b.indices[i] || a.data[i] !== b.data[i]) return false;
  }
  return true;
}

async function run({ seed, long, cases, log }: RunOptions): Promise<CaseResult[]> {
  const total = cases ?? (long ? 16_000 : 1_500);
  const work = workDir("tiles");
  try {
    const dir = join(work.dir, "ds");
    await writeSynthetic(dir, seed);
    const reference = await openDataset(dir);
    const nTiles = reference.nTiles;
    // Plain copies: a Buffer's slice() is a view, and the mutations must not touch the originals.
    const tiles = Array.from(
      { length: nTiles },
      (_, i) => new Uint8Array(readFileSync(join(dir, `tiles/tile_${String(i).padStart(6, "0")}.dct`))),
    );
    const regions = tiles.map(tileRegions);
    const exportOf = async (range: string) => {
      const out = join(work.dir, `export-${range.replace(":", "-")}.mtx`);
      await exportCommand([dir, out, "--cells", range, "--quiet"]);
      return readFileSync(out, "utf8");
    };
    const results: CaseResult[] = [];
    const pool = createTilePool({ threads: 1 });
    const rnd = mulberry32(seed);
    const regionNames = Object.keys(regions[0]!) as Region[];
    // Extensions are all alike (a size the manifest contradicts): one draw in seven.
    const mutationNames = ["flip", "fill", "truncate", "flip", "fill", "truncate", "extend"];
    for (let n = 0; n < total; n++) {
      const t = Math.floor(rnd() * nTiles);
      const mutation = mutationNames[Math.floor(rnd() * mutationNames.length)]!;
      let region: Region | "tail" = regionNames[Math.floor(rnd() * regionNames.length)]!;
      let ranges = regions[t]![region];
      if (ranges.length === 0) region = "planes";
      ranges = regions[t]![region];
      const [lo, hi] = ranges[Math.floor(rnd() * ranges.length)]!;
      const at = lo + Math.floor(rnd() * (hi - lo));
      if (mutation === "extend") region = "tail";
      const key = `tiles/tile_${String(t).padStart(6, "0")}.dct`;
      const path = join(dir, key);
      const mutant = MUTATIONS[mutation as keyof typeof MUTATIONS](tiles[t]!, at, rnd);
      const start = reference.tileStart(t);
      const end = reference.limits[t]!;
      const a = start + Math.floor(rnd() * (end - start));
      const b = a + 1 + Math.floor(rnd() * (end - a));
      const via = n % 20 === 19 ? "export" : n % 4 === 1 ? "cells on a pool" : "cells";
      const id = `${n}: tile ${t} ${region} ${mutation} at ${at}, cells ${a}:${b} via ${via}`;
      const kind = `${region}/${mutation}`;
      const outcome = await withTimeout(20_000, async (): Promise<Omit<CaseResult, "id" | "kind">> => {
        try {
          if (via === "export") {
            const want = await exportOf(`${a}:${b}`);
            writeFileSync(path, mutant);
            const got = await exportOf(`${a}:${b}`);
            return got === want ? { outcome: "correct" } : { outcome: "wrong", detail: "export differs" };
          }
          // A handle opened now: the previous case rewrote (restored) a tile, which a handle opened
          // before refuses (DatasetChanged), as it must.
          const want = await (await openDataset(dir)).cells(a, b);
          writeFileSync(path, mutant);
          const ds = await openDataset(dir, via === "cells" ? {} : { decoder: pool });
          const got = await ds.cells(a, b);
          return sameRows(got, want) ? { outcome: "correct" } : { outcome: "wrong", detail: "cells differ" };
        } catch (err) {
          // Every handle here is opened after its tile was written: DatasetChanged would mean the
          // version check refuses a dataset that did not change under it, hiding the decoder.
          if ((err as { _tag?: string })._tag === "DatasetChanged")
            return { outcome: "refused-unclear", detail: `refused as changed: ${(err as Error).message}` };
          return judgeError(err, [key]);
        }
      });
      results.push(outcome === "timeout" ? { id, kind, outcome: "hang" } : { id, kind, ...outcome });
      writeFileSync(path, tiles[t]!);
      if ((n + 1) % 1000 === 0) log(`tile-mutants: ${n + 1}/${total}`);
    }
    await pool.close();
    return results;
  } finally {
    work.dispose();
  }
}

export const tileMutants: FaultClass = {
  name: "tile-mutants",
  summary:
    "bit flips, 0x00/0xFF runs, truncations and extensions in each region of a tile, read through ds.cells() and export",
  run,
};
