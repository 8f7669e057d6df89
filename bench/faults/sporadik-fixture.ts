/**
 * A small chunked sporadik store (both layouts, 64-element chunks so every array has several)
 * and what its slices must read as, for the classes that damage or hammer it.
 */

import { layoutFromCoords, openReader, type Selection, writeStore } from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";
import { mulberry32 } from "../../test-utils/prng.js";

export const SHAPE = [120, 90] as const;

/** Every slice of one axis: positions and values per slice, as plain numbers. */
export type Slices = { positions: number[]; values: number[] }[];

/**
 * Writes the store into `dir` and returns the expected slices along each axis. Byte-addressable:
 * one uncompressed chunk per array, read with Range requests. Checksums: zstd's content checksum
 * in every chunk (chunked stores only).
 */
export async function writeSporadik(
  dir: string,
  seed: number,
  byteAddressable = false,
  checksums = false,
): Promise<Slices[]> {
  const rnd = mulberry32(seed);
  const rows: number[] = [];
  const cols: number[] = [];
  const values: number[] = [];
  for (let r = 0; r < SHAPE[0]; r++) {
    if (r % 11 === 5) continue; // empty slices too
    for (let c = 0; c < SHAPE[1]; c++) {
      if (rnd() < 0.12) {
        rows.push(r);
        cols.push(c);
        values.push(1 + Math.floor(rnd() * 300));
      }
    }
  }
  const layouts = [0, 1].map((axis) =>
    layoutFromCoords(SHAPE, [Int32Array.from(rows), Int32Array.from(cols)], Int32Array.from(values), axis),
  );
  await writeStore(
    new FolderStore(dir),
    layouts,
    byteAddressable ? { byteAddressable } : { chunk: 64, checksums },
  );
  return layouts.map((l) => {
    const out: Slices = [];
    for (let p = 0; p + 1 < l.indptr.length; p++) {
      const a = Number(l.indptr[p]);
      const b = Number(l.indptr[p + 1]);
      out.push({
        positions: Array.from(l.indices.subarray(a, b), Number),
        values: Array.from(l.data.subarray(a, b) as ArrayLike<number>, Number),
      });
    }
    return out;
  });
}

/** The slices of `selection` as plain numbers, row by row. */
export function slicesOf(selection: Selection): Slices {
  const out: Slices = [];
  for (let i = 0; i + 1 < selection.indptr.length; i++) {
    const a = Number(selection.indptr[i]);
    const b = Number(selection.indptr[i + 1]);
    out.push({
      positions: Array.from(selection.indices.subarray(a, b), Number),
      values: Array.from(selection.data.subarray(a, b) as ArrayLike<number>, Number),
    });
  }
  return out;
}

export function sameSlices(a: Slices, b: Slices): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Every slice along `axis`, read through the public reader from the folder. */
export async function readAll(dir: string, axis: number): Promise<Slices> {
  const reader = await openReader(new FolderStore(dir), { axis });
  return slicesOf(await reader.slicesOver(0, SHAPE[axis]!));
}
