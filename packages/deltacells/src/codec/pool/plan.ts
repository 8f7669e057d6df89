/**
 * How a pool splits one tile's decode between workers: contiguous groups of chunks with similar
 * nonzero counts, one per worker, and the tile's CRC span cut into as many parts.
 */
import { HEADER_SIZE } from "../format.js";
import type { TileLayout } from "../layout.js";

/** One worker's share: chunks `[k0, k1)` and the CRC of bytes `[crcFrom, crcTo)`. */
export interface DecodePart {
  k0: number;
  k1: number;
  crcFrom: number;
  crcTo: number;
  /** Output position of the part's first nonzero (where a returned part is copied in). */
  at: number;
}

/**
 * The parts of decoding cells `[c0, c1)` of a checked tile over at most `workers` workers, those
 * that would otherwise idle (one part when none would: one task per tile is then cheapest). Always at least one part,
 * which carries the whole CRC for a tile without chunks.
 */
export function planDecode(layout: TileLayout, c0: number, c1: number, workers: number): DecodePart[] {
  const full = c0 === 0 && c1 === layout.header.nCells;
  const ks: number[] = [];
  layout.chunks.forEach((ch, k) => {
    if (full || (ch.cellLo < c1 && ch.cellHi > c0)) ks.push(k);
  });
  const groups = splitChunks(layout, ks, Math.max(1, Math.min(workers, ks.length)));
  const crcSpan = layout.header.totalSize - HEADER_SIZE;
  const parts = Math.max(1, groups.length);
  const cut = (i: number) => HEADER_SIZE + Math.floor((crcSpan * i) / parts);
  const base = layout.indptr[c0]!;
  return (groups.length > 0 ? groups : [[]]).map((g, i) => {
    const k0 = g[0] ?? 0;
    const ch = layout.chunks[k0];
    return {
      k0,
      k1: g.length > 0 ? g[g.length - 1]! + 1 : 0,
      crcFrom: cut(i),
      crcTo: cut(i + 1),
      at: layout.indptr[Math.max(c0, ch?.cellLo ?? c0)]! - base,
    };
  });
}

/** Contiguous groups of chunk indices with roughly equal nonzeros. */
function splitChunks(layout: TileLayout, ks: number[], parts: number): number[][] {
  if (ks.length === 0) return [];
  const weight = (k: number) => {
    const ch = layout.chunks[k]!;
    return ch.nnzHi - ch.nnzLo + 1;
  };
  const total = ks.reduce((a, k) => a + weight(k), 0);
  const groups: number[][] = [];
  let acc = 0;
  let cur: number[] = [];
  for (const k of ks) {
    cur.push(k);
    acc += weight(k);
    if (acc >= (total * (groups.length + 1)) / parts && groups.length < parts - 1) {
      groups.push(cur);
      cur = [];
    }
  }
  if (cur.length > 0) groups.push(cur);
  return groups;
}
