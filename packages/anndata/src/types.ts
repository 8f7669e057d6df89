/**
 * The shapes every input reader produces: canonical CSR row blocks and column tables.
 * Browser-safe (no Node imports).
 */

import type {
  InputInventory,
  NumericArray,
  CanonicalRowBlock as SharedCanonicalRowBlock,
  ColumnTable as SharedColumnTable,
  ColumnTableReader as SharedColumnTableReader,
  TableColumn as SharedTableColumn,
  TableColumnReader as SharedTableColumnReader,
  StoreOptions,
  ZarrReadable,
} from "@deltacells/storage";

/**
 * A run of consecutive cells as canonical CSR (see `CanonicalRowBlock` in @deltacells/storage):
 * per cell, gene indices strictly increasing, no explicit zeros, counts positive integers that
 * fit int32; `indptr` a Float64Array starting at 0.
 */
export type CanonicalRowBlock = SharedCanonicalRowBlock<Float64Array>;

/** Numeric typed arrays a numeric table column may hold (every one but BigUint64Array). */
export type NumericValues = Exclude<NumericArray, BigUint64Array>;

/** One column of an obs/var table (see `TableColumn` in @deltacells/storage). */
export type TableColumn = SharedTableColumn<NumericValues>;

/** One column of a data frame read by row range (see `TableColumnReader` in @deltacells/storage). */
export type TableColumnReader = SharedTableColumnReader<NumericValues>;

/** A data frame read by row range: its index's name, the index and the columns. */
export type ColumnTableReader = SharedColumnTableReader<NumericValues>;

/** A data frame as anndata holds it: a string index (with its name) and typed columns. */
export type ColumnTable = SharedColumnTable<NumericValues>;

/**
 * One `obsm` entry (a per-cell matrix: an embedding such as X_pca or X_umap, or a per-cell table),
 * read whole. The first axis is the cells, in source order.
 */
export type Embedding =
  | {
      kind: "dense";
      name: string;
      /** `[nCells, k]` for the usual 2-d entries; other ranks are kept as stored. */
      shape: number[];
      /** numpy name of the stored element type: "float32", "float64", "int32", "int64", "bool", ... */
      dtype: string;
      /** Row-major values (int64 as BigInt64Array, bool as 0/1 Uint8Array). */
      values: NumericValues;
    }
  | {
      kind: "sparse";
      name: string;
      shape: [nCells: number, k: number];
      /** numpy name of the stored type of the values. */
      dtype: string;
      /**
       * CSR, values as stored (not canonicalized: duplicates and explicit zeros kept). A csc_matrix
       * entry is converted, entries of a row in increasing column order, as scipy's `tocsr()`.
       */
      indptr: Float64Array;
      indices: Int32Array;
      data: NumericValues;
    }
  | {
      kind: "table";
      name: string;
      /** `[nCells, number of columns]`. */
      shape: [number, number];
      /** A dataframe entry (its index is normally the obs names). */
      table: ColumnTable;
    };

/** obsm entries by key, in store order. */
export type Embeddings = Record<string, Embedding>;

/** Every input format the readers understand. */
export type InputFormat = "h5ad" | "anndata-zarr" | "10x-h5" | "10x-mtx" | "mtx" | "zarr-array";

/** Options of {@link MatrixSource.rowBlocks}. */
export interface RowBlockOptions {
  /** Cells per block at most (default 4096). */
  blockCells?: number;
  /**
   * Nonzeros per block at most (default 1,048,576; a cell with more is a block of its own), for the
   * layouts that tell them before or as the rows are read: CSR (h5ad, AnnData zarr, 10x HDF5) and
   * dense. CSC and Matrix Market inputs cut by cells only.
   */
  blockNnz?: number;
  signal?: AbortSignal;
  /**
   * Only cells `[rowStart, rowEnd)`: CSR and dense matrices (h5ad, AnnData zarr, 10x HDF5) start
   * there; CSC and Matrix Market inputs cannot seek and yield every block (skip what is before).
   * Blocks keep their index in the whole matrix (`rowStart`).
   */
  rowStart?: number;
  rowEnd?: number;
  /**
   * The consumer is done with a block (and every view of its arrays) once it asks for the next:
   * the reader may then build later blocks in the same memory. A conversion's memory then stays
   * flat instead of following the garbage of every block (8 bytes per nonzero). The arrays of a
   * block given back are detached, so a block kept past that reads as empty (length 0) and
   * copying it throws: it never shows another block's numbers. Keep data by copying it
   * (`block.data.slice()`) before asking for the next block. CSR inputs (h5ad, AnnData zarr, 10x
   * HDF5) reuse; the others ignore it. Default false: every block is its own.
   */
  reuse?: boolean;
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
   * The entries a sparse matrix stores, known without reading it (scipy's `nnz`: explicit zeros
   * and duplicates count), so an upper bound on the nonzeros {@link rowBlocks} yields (its
   * canonical blocks drop zeros and sum duplicates): size temporary space and index widths by it.
   * Undefined for a dense matrix.
   */
  readonly nnz?: number;
  /**
   * The axes the input names nothing along: their names are positions ("0", "1", ...), as
   * anndata's read_mtx gives them (a plain Matrix Market file without names files, a bare zarr
   * array). A cell table of positions only is not stored.
   */
  readonly unnamed: { cells: boolean; genes: boolean };
  /**
   * One row per gene, in source order. For 10x inputs the index holds gene symbols (not made
   * unique) and the columns are gene_ids, feature_types (and genome), as scanpy's read_10x_* make them.
   */
  var(): Promise<ColumnTable>;
  /**
   * One row per cell. Columns named in `exclude` are not read; columns no {@link TableColumn} can
   * hold are refused together in an `UnsupportedColumnsError` naming them.
   */
  obs(opts?: { exclude?: string[] }): Promise<ColumnTable>;
  /**
   * The same table read by row range, for inputs that read ranges cheaply (h5ad); undefined for
   * the others (use {@link obs}). Column types and categories are read here, rows on demand.
   */
  obsReader(opts?: { exclude?: string[] }): Promise<ColumnTableReader | undefined>;
  /** The keys of `obsm` (per-cell embeddings), in store order; [] for inputs without obsm. */
  obsmKeys(): Promise<string[]>;
  /**
   * The `obsm` entries named by `keys` (all of them by default), each read whole; nothing of the
   * count matrix is read. An entry whose encoding cannot be represented (awkward arrays, string
   * or record arrays, ...) is an `Unsupported` error naming the key and the encoding: list the
   * keys and read the others by name. A key that does not exist is a `MissingMatrix` error.
   * Inputs without obsm (10x, Matrix Market, bare zarr arrays) return `{}`.
   */
  obsm(keys?: string[]): Promise<Embeddings>;
  /**
   * What the input holds besides the matrix read, its obs and var: so that a conversion can say
   * what it did not keep. Read from metadata only (no values).
   */
  inventory(): Promise<InputInventory>;
  /** Canonical CSR blocks, in order, covering all cells, with bounded memory. */
  rowBlocks(opts?: RowBlockOptions): AsyncIterable<CanonicalRowBlock>;
  close(): Promise<void>;
}

/** What an input holds besides the matrix read (see {@link MatrixSource.inventory}). */
export type { InputInventory } from "@deltacells/storage";

/** Options of `openInput`. */
export interface OpenInputOptions {
  /** Read `layers/NAME` instead of X (AnnData inputs). */
  layer?: string;
  /** Read `raw/X` (or the legacy `raw.X`) instead of X (AnnData inputs). */
  raw?: boolean;
  /** The plain Matrix Market file is cells x genes (the default is genes x cells, as 10x and Seurat write). */
  transpose?: boolean;
  /**
   * Plain Matrix Market file: a file naming its genes, one a line, or a 10x `features.tsv` (id,
   * name, type: read as a 10x folder's), gzipped or not. The rows of the file are the genes.
   */
  geneNames?: string;
  /** Plain Matrix Market file: a file naming its cells, one a line (a 10x `barcodes.tsv`), gzipped or not. */
  cellNames?: string;
  /** Skip detection. */
  format?: InputFormat;
  /** Genome group of a multi-genome Cell Ranger v2 HDF5 file. */
  genome?: string;
  /**
   * Opens an `s3://` or `http(s)://` input as a store, so zarr inputs are read over the network
   * (e.g. `openStore` of `@deltacells/storage/node`). Without it a URL input is refused.
   */
  openStore?: (url: string) => RemoteStore;
  /**
   * HDF5 inputs (.h5ad, 10x .h5): seconds one HDF5 call (a group listing, one block's read) may
   * take before reading stops with a `Stalled` error (default 60; 0 waits for ever). HDF5 reads
   * run in a worker thread, so a damaged file that makes HDF5 loop cannot hang the process.
   */
  hdf5Timeout?: number;
}

/**
 * The part of a storage-layer store a remote zarr input is read through: `get`, and where the
 * store has them `getRange` (format detection asks for zero bytes to learn whether an object
 * exists, a HEAD request or a file's status in the storage layer, rather than downloading it; a
 * store without it is asked with `get`) and `list` (group members: obsm, layers).
 */
export interface RemoteStore extends ZarrReadable {
  list?(prefix?: string, opts?: StoreOptions): Promise<string[]>;
}
