/**
 * How requested obs columns become local: the hook `Dataset.obs` calls. The browser-safe default
 * keeps them in memory; the Node entry installs the local Arrow cache (`cache-node.ts`).
 */
import { loadArrow } from "./arrow-load.js";
import { ObsColumn } from "./frame.js";
import type { ObsShards } from "./read.js";
import type { ObsColumnSchema } from "./schema.js";

export interface ObsLoadOptions {
  /**
   * Node: the cache folder (default `$DELTACELLS_CACHE`, then `$XDG_CACHE_HOME/deltacells`, then
   * `~/.cache/deltacells`). Ignored in a browser, where columns stay in memory.
   */
  cacheDir?: string;
  signal?: AbortSignal;
}

/** Makes the given columns local and returns them, in the order asked. */
export type ObsLocalizer = (
  shards: ObsShards,
  columns: ObsColumnSchema[],
  opts: ObsLoadOptions,
) => Promise<ObsColumn[]>;

/** Columns read from the shards and held in memory (browsers; any store). */
export const memoryLocalizer: ObsLocalizer = async (shards, columns, opts) => {
  const { columnTable } = await loadArrow();
  return Promise.all(
    columns.map(async (c) => new ObsColumn(c, columnTable(c, await shards.readColumn(c, opts)))),
  );
};
