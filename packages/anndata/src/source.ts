/**
 * The part every {@link MatrixSource} shares: block-size defaults and turning the builder's
 * errors into input errors that name the cell, the gene and the matrices worth trying instead.
 */

import type { BlockSize, CellRange } from "./blocks.js";
import { BadCount, BadGeneIndex } from "./canonical.js";
import {
  AnndataError,
  NotCountsError,
  type NotCountsReason,
  type OtherMatrixSample,
  objectIn,
} from "./errors.js";
import type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  Embedding,
  Embeddings,
  InputFormat,
  InputInventory,
  MatrixSource,
  RowBlockOptions,
} from "./types.js";

export const DEFAULT_BLOCK_CELLS = 4096;
/**
 * Nonzeros per block at most by default, where the layout tells them (CSR, dense): ~8 MiB of
 * indices and counts whatever the cells hold (bench/RESULTS.md, "Peak memory of a conversion").
 */
export const DEFAULT_BLOCK_NNZ = 1 << 20;

export abstract class BaseSource implements MatrixSource {
  private varIndex: string[] | undefined;

  abstract readonly format: InputFormat;
  abstract readonly location: string;
  abstract readonly matrixPath: string;
  abstract readonly nCells: number;
  abstract readonly nGenes: number;
  /** Stored entries of a sparse matrix (see {@link MatrixSource.nnz}); undefined for a dense one. */
  get nnz(): number | undefined {
    return undefined;
  }
  /** Every axis is named, unless the reader says otherwise. */
  readonly unnamed: { cells: boolean; genes: boolean } = { cells: false, genes: false };
  /** Other matrices of the input that may hold raw counts ("layers/counts", "raw/X"). */
  protected alternatives: string[] = [];

  /**
   * The first value of matrix `path` (one of {@link alternatives}) that is not a count, among its
   * first stored values, or undefined when those are all counts (or it cannot be read): a refusal
   * suggests only the matrices worth trying. Inputs with no other matrix keep this default.
   */
  protected async firstNonCount(
    _path: string,
  ): Promise<{ reason: NotCountsReason; value: number } | undefined> {
    return undefined;
  }

  protected abstract readVar(): Promise<ColumnTable>;
  protected abstract readObs(exclude: ReadonlySet<string>): Promise<ColumnTable>;
  /** The row blocks; a reader that can seek yields only those of `range` (others may ignore it). */
  protected abstract blocks(
    size: BlockSize,
    signal?: AbortSignal,
    range?: CellRange,
  ): AsyncGenerator<CanonicalRowBlock>;
  abstract close(): Promise<void>;

  /** obsm keys; inputs without obsm keep this default. */
  protected async readObsmKeys(): Promise<string[]> {
    return [];
  }

  /** One obsm entry, called only with a key from {@link readObsmKeys}. */
  protected readObsmEntry(key: string): Promise<Embedding> {
    return Promise.reject(
      new AnndataError(`${this.location}: has no obsm entry ${JSON.stringify(key)}.`, {
        tag: "MissingMatrix",
        object: this.location,
      }),
    );
  }

  /** Nothing besides the matrix, obs and var; AnnData inputs say what they hold. */
  async inventory(): Promise<InputInventory> {
    return { matrices: [], groups: [], obsm: [] };
  }

  obsmKeys(): Promise<string[]> {
    return this.readObsmKeys();
  }

  async obsm(keys?: string[]): Promise<Embeddings> {
    const all = await this.readObsmKeys();
    const out: [string, Embedding][] = [];
    for (const key of keys ?? all) {
      if (!all.includes(key)) {
        throw new AnndataError(
          `${this.location}: has no obsm entry ${JSON.stringify(key)}.` +
            (all.length > 0 ? ` Available: ${all.join(", ")}.` : " It has no obsm entries at all."),
          { tag: "MissingMatrix", object: objectIn(this.location, `obsm/${key}`) },
        );
      }
      out.push([key, await this.readObsmEntry(key)]);
    }
    // fromEntries defines own properties: a key such as "__proto__" stays an entry
    return Object.fromEntries(out);
  }

  async var(): Promise<ColumnTable> {
    const t = await this.readVar();
    this.varIndex = t.index;
    return t;
  }

  async obs(opts: { exclude?: string[] } = {}): Promise<ColumnTable> {
    // the index is not kept: a million names would stay alive for the whole conversion; a cell's
    // name for an error message is read again (see cellName)
    return this.readObs(new Set(opts.exclude));
  }

  /**
   * The name of cell `i`, for an error message. This default reads obs, which is only its index
   * in inputs without obs columns; AnnData inputs read the one index entry.
   */
  protected async cellName(i: number): Promise<string | undefined> {
    return (await this.readObs(new Set())).index[i];
  }

  async obsReader(opts: { exclude?: string[] } = {}): Promise<ColumnTableReader | undefined> {
    return this.readObsReader(new Set(opts.exclude));
  }

  /** obs read by row range; inputs that cannot read ranges cheaply keep this default. */
  protected async readObsReader(_exclude: ReadonlySet<string>): Promise<ColumnTableReader | undefined> {
    return undefined;
  }

  async *rowBlocks(opts: RowBlockOptions = {}): AsyncGenerator<CanonicalRowBlock> {
    const size: BlockSize = {
      cells: Math.max(1, Math.floor(opts.blockCells ?? DEFAULT_BLOCK_CELLS)),
      nnz: Math.max(1, Math.floor(opts.blockNnz ?? DEFAULT_BLOCK_NNZ)),
      reuse: opts.reuse === true,
    };
    try {
      const range =
        opts.rowStart !== undefined || opts.rowEnd !== undefined
          ? { start: opts.rowStart ?? 0, end: opts.rowEnd ?? this.nCells }
          : undefined;
      yield* this.blocks(size, opts.signal, range);
    } catch (err) {
      throw await this.explain(err);
    }
  }

  /** Turns builder errors into input errors that name the cell and gene. */
  private async explain(err: unknown): Promise<unknown> {
    if (err instanceof BadCount) {
      const alternatives: string[] = [];
      const notCountsEither: OtherMatrixSample[] = [];
      for (const matrix of this.alternatives) {
        const found = await this.firstNonCount(matrix).catch(() => undefined);
        if (found) notCountsEither.push({ matrix, ...found });
        else alternatives.push(matrix);
      }
      return NotCountsError.of({
        location: this.location,
        object: this.matrixPath,
        reason: err.reason,
        value: err.value,
        cell: err.cell,
        cellName: await this.nameOf("obs", err.cell),
        gene: err.gene,
        geneName: await this.nameOf("var", err.gene),
        alternatives,
        notCountsEither,
      });
    }
    if (err instanceof BadGeneIndex) {
      return new AnndataError(
        `${this.location}: ${this.matrixPath}: cell ${err.cell} has gene index ${err.gene}, outside [0, ${err.nGenes}).`,
        { tag: "MalformedInput", object: objectIn(this.location, this.matrixPath), cause: err },
      );
    }
    return err;
  }

  private async nameOf(which: "obs" | "var", i: number): Promise<string | undefined> {
    try {
      if (which === "obs") return await this.cellName(i);
      return (this.varIndex ?? (await this.var()).index)[i];
    } catch {
      return undefined;
    }
  }
}
