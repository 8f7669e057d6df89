/**
 * The shapes every input reader produces: canonical CSR row blocks and column tables.
 * Browser-safe (no Node imports).
 */

/**
 * A run of consecutive cells as canonical CSR: per cell, gene indices strictly increasing, no
 * explicit zeros, counts non-negative integers that fit int32.
 */
export interface RowBlock {
  /** Index of the first cell of the block in the source. */
  rowStart: number;
  /** Number of cells in the block (may be 0 only for an input with no cells). */
  nRows: number;
  /** Offsets into `indices`/`data`, length `nRows + 1`, starting at 0. */
  indptr: Float64Array;
  /** Gene (column) indices, strictly increasing within each cell. */
  indices: Int32Array;
  /** Counts, all > 0. */
  data: Int32Array;
}

/** Numeric typed arrays a numeric table column may hold. */
export type NumericValues =
  | Float64Array
  | Float32Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigInt64Array;

/** One column of an obs/var table. `nulls[i] === 1` marks a missing value (pandas NA). */
export type TableColumn =
  | { name: string; kind: "numeric"; values: NumericValues; nulls?: Uint8Array }
  | { name: string; kind: "bool"; values: Uint8Array; nulls?: Uint8Array }
  | { name: string; kind: "string"; values: (string | null)[] }
  | {
      name: string;
      kind: "category";
      /** Codes into `categories`, -1 = missing. */
      codes: Int32Array;
      categories: string[];
      ordered: boolean;
    };

/** A data frame as anndata holds it: a string index (with its name) and typed columns. */
export interface ColumnTable {
  /** Name of the pandas index (`_index` attribute), or null when unnamed. */
  indexName: string | null;
  index: string[];
  columns: TableColumn[];
}

/** Every input format the readers understand. */
export type InputFormat = "h5ad" | "anndata-zarr" | "10x-h5" | "10x-mtx" | "mtx" | "zarr-array";

/** Options of {@link MatrixSource.rowBlocks}. */
export interface RowBlockOptions {
  /** Cells per block (default 4096). Memory per block is about blockCells x nonzeros per cell. */
  blockCells?: number;
  signal?: AbortSignal;
}

/** An opened count matrix, cells x genes, streamed as row blocks. */
export interface MatrixSource {
  readonly format: InputFormat;
  /** The path the source was opened from. */
  readonly location: string;
  /** Where the matrix lives inside the input, e.g. "X", "layers/counts", "raw/X", "matrix", "mm10/". */
  readonly matrixPath: string;
  readonly nCells: number;
  readonly nGenes: number;
  /**
   * One row per gene, in source order. For 10x inputs the index holds gene symbols (not made
   * unique) and the columns are gene_ids, feature_types (and genome), as scanpy's read_10x_* make them.
   */
  var(): Promise<ColumnTable>;
  /** One row per cell. */
  obs(): Promise<ColumnTable>;
  /** Canonical CSR blocks, in order, covering all cells, with bounded memory. */
  rowBlocks(opts?: RowBlockOptions): AsyncIterable<RowBlock>;
  close(): Promise<void>;
}

/** Options of `openInput`. */
export interface OpenInputOptions {
  /** Read `layers/NAME` instead of X (AnnData inputs). */
  layer?: string;
  /** Read `raw/X` (or the legacy `raw.X`) instead of X (AnnData inputs). */
  raw?: boolean;
  /** The plain Matrix Market file is cells x genes (the default is genes x cells, as 10x and Seurat write). */
  transpose?: boolean;
  /** Skip detection. */
  format?: InputFormat;
  /** Genome group of a multi-genome Cell Ranger v2 HDF5 file. */
  genome?: string;
}
