/**
 * What the dataset writer reads: a count matrix streamed as CSR row blocks plus its gene table.
 * These are structural types: `@deltacells/anndata`'s `MatrixSource` satisfies them without this
 * package depending on it; the row blocks and tables are the shared ones of `@deltacells/storage`.
 */

import type { CanonicalRowBlock, ColumnTable, ColumnTableReader, InputInventory } from "@deltacells/storage";

export type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  NumericArray,
  TableColumn,
  TableColumnReader,
} from "@deltacells/storage";

/**
 * An `obsm` entry as the anndata readers hand it over; only 2-D `dense` ones (`values` row-major,
 * `shape` [cells, k]) become obs columns.
 */
export interface SourceEmbedding {
  kind: string;
  shape: number[];
  values?: ArrayLike<number | bigint>;
}

/** A count matrix the writer can convert (cells x genes). */
export interface DatasetSource {
  readonly format: string;
  readonly location: string;
  readonly matrixPath: string;
  readonly nCells: number;
  readonly nGenes: number;
  /**
   * The axes the input names nothing along (their names are positions "0", "1", ...): a plain
   * Matrix Market file without names, a bare zarr array. A cell table of positions only gets no obs.
   */
  readonly unnamed?: { cells: boolean; genes: boolean };
  var(): Promise<ColumnTable>;
  /** The cell table (obs); a source without one converts without obs. */
  obs?(opts?: { exclude?: string[] }): Promise<ColumnTable>;
  /**
   * The cell table as columns read by row range; when present the writer uses it instead of
   * {@link obs} and reads one tile of each column at a time (bounded memory at any cell count).
   * Column types must be known without reading the rows (a numeric column's first row may be read).
   */
  obsReader?(opts?: { exclude?: string[] }): Promise<ColumnTableReader | undefined>;
  /** What the input holds besides the matrix, obs and var, for saying what was not stored. */
  inventory?(): Promise<InputInventory>;
  /** The keys of `obsm`, in store order. */
  obsmKeys?(): Promise<string[]>;
  /** The `obsm` entries named by `keys`, each read whole. */
  obsm?(keys?: string[]): Promise<Record<string, SourceEmbedding>>;
  /**
   * The cells as row blocks, in order. `rowStart`/`rowEnd` ask for cells `[rowStart, rowEnd)`
   * only: a source that can seek starts there (blocks keep their global `rowStart`); one that
   * cannot may ignore it, and the caller skips what it does not need.
   */
  rowBlocks(opts?: {
    blockCells?: number;
    signal?: AbortSignal;
    rowStart?: number;
    rowEnd?: number;
    /**
     * The caller is done with a block once it asks for the next, so a source may build later
     * blocks in the same memory (as `@deltacells/anndata`'s CSR readers do); a source may ignore it.
     */
    reuse?: boolean;
  }): AsyncIterable<CanonicalRowBlock>;
}
