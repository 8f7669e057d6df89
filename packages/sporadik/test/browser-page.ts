/**
 * The page side of reader.browser.test.ts: the sporadik reader over the browser-safe HttpStore, in
 * headless Chromium. Every export returns JSON.
 */

import { openReader, type Slice } from "@deltacells/sporadik";
import { HttpStore } from "@deltacells/storage";
import { plain } from "../../../test-utils/browser/page-helpers.js";

/** Everything a test compares between the page and Node for one layout of a store. */
export interface LayoutReads {
  shape: number[];
  indexedAxis: number;
  slices: { positions: number[]; values: number[] }[];
  batch: { positions: number[]; indptr: number[]; indices: number[]; data: number[] };
  maxima: number[];
}

function plainSlice(s: Slice): { positions: number[]; values: number[] } {
  return { positions: plain(s.positions), values: plain(s.values) };
}

/**
 * Opens the store at `url` along `axis` and reads `positions` one by one with `sliceAt`, `batch`
 * with `slicesAt`, and the layout's maxima.
 */
export async function readLayout(
  url: string,
  axis: number,
  positions: number[],
  batch: number[],
): Promise<LayoutReads> {
  const reader = await openReader(new HttpStore(url), { axis });
  const slices = [];
  for (const p of positions) slices.push(plainSlice(await reader.sliceAt(p)));
  const selection = await reader.slicesAt(batch);
  return {
    shape: [...reader.store.shape],
    indexedAxis: reader.axis,
    slices,
    batch: {
      positions: plain(selection.positions),
      indptr: plain(selection.indptr),
      indices: plain(selection.indices),
      data: plain(selection.data),
    },
    maxima: plain(await reader.maxima()),
  };
}
