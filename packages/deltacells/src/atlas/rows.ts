/**
 * Cells `[a, b)` of a source as row blocks, whether or not the source can start at `a`: blocks
 * before the range are skipped, blocks across its ends are cut, and the source's iterator is
 * closed as soon as `b` is reached. What a task reads of each of its inputs.
 */
import type { CanonicalRowBlock, DatasetSource } from "../dataset/source.js";
import { checkBlock, invalidInput } from "./scan.js";

/** Rows `[s, e)` of `block` (block-local) as a block of their own. */
function cut(block: CanonicalRowBlock, s: number, e: number): CanonicalRowBlock {
  if (s === 0 && e === block.nRows) return block;
  const lo = block.indptr[s]!;
  const hi = block.indptr[e]!;
  const indptr = new Float64Array(e - s + 1);
  for (let r = s; r <= e; r++) indptr[r - s] = block.indptr[r]! - lo;
  return {
    rowStart: block.rowStart + s,
    nRows: e - s,
    indptr,
    indices: block.indices.subarray(lo, hi),
    data: block.data.subarray(lo, hi),
  };
}

/** Cells `[a, b)` of `source` in order, as blocks that start at `a` and end at `b`. */
export async function* rowRange(
  source: DatasetSource,
  a: number,
  b: number,
  opts: { blockCells?: number; signal?: AbortSignal; reuse?: boolean } = {},
): AsyncGenerator<CanonicalRowBlock> {
  if (a >= b) return;
  let next = a;
  let expected: number | undefined;
  for await (const block of source.rowBlocks({ ...opts, rowStart: a, rowEnd: b })) {
    // The first block says whether the source started at `a` or at 0; from then on they follow.
    if (expected !== undefined) checkBlock(source.location, source.nCells, block, expected);
    else if (block.rowStart !== a && block.rowStart !== 0)
      checkBlock(source.location, source.nCells, block, a);
    expected = block.rowStart + block.nRows;
    const end = block.rowStart + block.nRows;
    if (end <= next) continue;
    const s = Math.max(0, next - block.rowStart);
    const e = Math.min(block.nRows, b - block.rowStart);
    if (block.rowStart + s !== next) checkBlock(source.location, source.nCells, block, next);
    yield cut(block, s, e);
    next = block.rowStart + e;
    if (next >= b) return;
  }
  if (next < b) throw invalidInput(source.location, `the source ended at cell ${next}, before cell ${b}`);
}
