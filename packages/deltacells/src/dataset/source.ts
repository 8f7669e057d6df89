/**
 * What the dataset writer reads: a count matrix streamed as CSR row blocks plus its gene table.
 * These are structural types: `@deltacells/anndata`'s `MatrixSource` satisfies them without this
 * package depending on it.
 */

/** A block of consecutive cells in canonical CSR: sorted indices, no stored zeros, counts >= 0. */
export interface SourceRowBlock {
  /** Global index of the block's first cell. */
  rowStart: number;
  nRows: number;
  /** `nRows + 1` offsets into `indices`/`data`, starting at 0. */
  indptr: ArrayLike<number>;
  indices: Int32Array;
  data: Int32Array;
}

/** One column of a table, as the anndata readers hand it over. */
export type SourceColumn =
  | {
      name: string;
      kind: "numeric";
      values:
        | Int8Array
        | Uint8Array
        | Int16Array
        | Uint16Array
        | Int32Array
        | Uint32Array
        | Float32Array
        | Float64Array
        | BigInt64Array
        | BigUint64Array;
      nulls?: Uint8Array;
      /** From a pandas nullable array (anndata's nullable-* encodings): exported as one again. */
      nullable?: boolean;
    }
  | { name: string; kind: "bool"; values: Uint8Array; nulls?: Uint8Array; nullable?: boolean }
  | {
      name: string;
      kind: "string";
      values: (string | null)[];
      nullable?: boolean;
      /** A column that was not text in the input: its type there (`datetime64[ns]`), here as ISO-8601 text. */
      textFrom?: string;
    }
  | { name: string; kind: "category"; codes: Int32Array; categories: string[]; ordered: boolean };

/** A table with a string index (a pandas DataFrame as stored by anndata). */
export interface SourceTable {
  indexName: string | null;
  index: string[];
  columns: SourceColumn[];
  /**
   * The columns left out, unread, because `exclude` named them: a source that honours `exclude`
   * lists them here, since the writer refuses an excluded name that is in neither list.
   */
  excluded?: string[];
}

/** Numeric values of a table column. */
export type SourceNumericValues = Extract<SourceColumn, { kind: "numeric" }>["values"];

/**
 * One column of a cell table read by row range (`read(a, b)`: rows `[a, b)`), so that the writer
 * holds one tile of it at a time instead of the whole column.
 */
export type SourceColumnReader =
  | {
      name: string;
      kind: "numeric";
      read(a: number, b: number): Promise<{ values: SourceNumericValues; nulls?: Uint8Array }>;
      /** From a pandas nullable array (anndata's nullable-* encodings): exported as one again. */
      nullable?: boolean;
    }
  | {
      name: string;
      kind: "bool";
      read(a: number, b: number): Promise<{ values: Uint8Array; nulls?: Uint8Array }>;
      nullable?: boolean;
    }
  | {
      name: string;
      kind: "string";
      read(a: number, b: number): Promise<(string | null)[]>;
      nullable?: boolean;
      /** As in {@link SourceColumn}. */
      textFrom?: string;
    }
  | {
      name: string;
      kind: "category";
      categories: string[];
      ordered: boolean;
      read(a: number, b: number): Promise<Int32Array>;
    };

/** A cell table read by row range; every column has exactly one row per cell. */
export interface SourceTableReader {
  indexName: string | null;
  index(a: number, b: number): Promise<string[]>;
  columns: SourceColumnReader[];
  /** As in {@link SourceTable.excluded}. */
  excluded?: string[];
}

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
  var(): Promise<SourceTable>;
  /** The cell table (obs); a source without one converts without obs. */
  obs?(opts?: { exclude?: string[] }): Promise<SourceTable>;
  /**
   * The cell table as columns read by row range; when present the writer uses it instead of
   * {@link obs} and reads one tile of each column at a time (bounded memory at any cell count).
   * Column types must be known without reading the rows (a numeric column's first row may be read).
   */
  obsReader?(opts?: { exclude?: string[] }): Promise<SourceTableReader | undefined>;
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
  }): AsyncIterable<SourceRowBlock>;
}
