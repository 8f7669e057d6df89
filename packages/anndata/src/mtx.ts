/**
 * Matrix Market inputs as a {@link MatrixSource}. Node-only.
 *
 * - A 10x folder (`matrix.mtx[.gz]` genes x cells, `features.tsv[.gz]` or `genes.tsv`,
 *   `barcodes.tsv[.gz]`): var index = gene symbols (2nd column), columns gene_ids (1st) and
 *   feature_types (3rd, when present), as scanpy's read_10x_mtx makes them; symbols are not made
 *   unique (var_names_make_unique is a separate step in scanpy too).
 * - A plain `.mtx[.gz]` file, genes x cells as 10x and Seurat write it, or cells x genes with
 *   `transpose`; names are positions ("0", "1", ...) as anndata's read_mtx gives them, unless
 *   files naming the genes (one a line, or a 10x `features.tsv`) and the cells are given.
 *
 * Memory: the file is streamed. The first `rowBlocks` call checks (one parsing pass) whether the
 * entries come grouped by cell in increasing order, as Cell Ranger writes them; if so every
 * iteration streams blocks straight from the file; otherwise the entries go through a
 * {@link CellBucketSpill} (in memory when small, temporary files otherwise).
 */

import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createGunzip, gunzipSync } from "node:zlib";
import type { BlockSize } from "./blocks.js";
import { RowBlockBuilder } from "./canonical.js";
import { AnndataError } from "./errors.js";
import { BaseSource } from "./source.js";
import { CellBucketSpill } from "./spill.js";
import type { CanonicalRowBlock, ColumnTable, TableColumn } from "./types.js";

interface MtxHeader {
  rows: number;
  cols: number;
  nnz: number;
  field: "integer" | "real" | "pattern";
}

async function* lines(path: string): AsyncGenerator<string> {
  const raw = createReadStream(path);
  const gz = path.endsWith(".gz");
  const input = gz ? raw.pipe(createGunzip()) : raw;
  if (gz) raw.on("error", (e) => input.destroy(e));
  const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    yield* rl;
  } finally {
    rl.close();
    raw.destroy();
  }
}

async function readHeader(path: string): Promise<MtxHeader> {
  let banner: string | undefined;
  for await (const line of lines(path)) {
    if (banner === undefined) {
      banner = line;
      const parts = line.trim().toLowerCase().split(/\s+/);
      if (parts[0] !== "%%matrixmarket" || parts[1] !== "matrix") {
        throw new AnndataError(
          `${path}: not a Matrix Market file (banner ${JSON.stringify(line.slice(0, 60))}).`,
          { tag: "MalformedInput", object: path },
        );
      }
      if (parts[2] !== "coordinate") {
        throw new AnndataError(
          `${path}: Matrix Market "${parts[2]}" (dense) files are not supported; expected "coordinate".`,
          { tag: "Unsupported", object: path },
        );
      }
      const field = parts[3];
      if (field !== "integer" && field !== "real" && field !== "pattern") {
        throw new AnndataError(
          `${path}: Matrix Market field "${field}" is not supported (integer, real or pattern).`,
          { tag: "Unsupported", object: path },
        );
      }
      if ((parts[4] ?? "general") !== "general") {
        throw new AnndataError(
          `${path}: Matrix Market symmetry "${parts[4]}" is not supported; expected "general".`,
          { tag: "Unsupported", object: path },
        );
      }
      continue;
    }
    if (line.startsWith("%") || line.trim() === "") continue;
    const nums = line.trim().split(/\s+/).map(Number);
    if (nums.length !== 3 || !nums.every((n) => Number.isInteger(n) && n >= 0)) {
      throw new AnndataError(`${path}: bad size line ${JSON.stringify(line)}.`, {
        tag: "MalformedInput",
        object: path,
      });
    }
    const b = (banner ?? "").trim().toLowerCase().split(/\s+/);
    return {
      rows: nums[0] as number,
      cols: nums[1] as number,
      nnz: nums[2] as number,
      field: b[3] as MtxHeader["field"],
    };
  }
  throw new AnndataError(`${path}: Matrix Market file without a size line.`, {
    tag: "MalformedInput",
    object: path,
  });
}

/** A batch of parsed entries, 0-based, as (cell, gene, value). */
interface EntryBatch {
  n: number;
  cells: Int32Array;
  genes: Int32Array;
  values: Float64Array;
}

const BATCH = 1 << 16;

/**
 * Streams the entries in batches, parsed straight from the bytes: plain integers are read digit
 * by digit; anything else in the value column (decimals, exponents, signs) goes through Number().
 */
async function* entryBatches(
  path: string,
  h: MtxHeader,
  cellsAreColumns: boolean,
): AsyncGenerator<EntryBatch> {
  const raw = createReadStream(path, { highWaterMark: 1 << 20 });
  const gz = path.endsWith(".gz");
  const input = gz ? raw.pipe(createGunzip({ chunkSize: 1 << 20 })) : raw;
  if (gz) raw.on("error", (e) => input.destroy(e));
  let batch: EntryBatch = {
    n: 0,
    cells: new Int32Array(BATCH),
    genes: new Int32Array(BATCH),
    values: new Float64Array(BATCH),
  };
  let count = 0;
  let lineNo = 0;
  let seenSize = false;
  let carry = new Uint8Array(0);
  const fields: number[] = [0, 0];
  const dec = new TextDecoder();
  const bad = (line: Uint8Array) =>
    new AnndataError(
      `${path}: line ${lineNo} (${JSON.stringify(dec.decode(line).slice(0, 80))}) is not an entry within ${h.rows} x ${h.cols}.`,
      { tag: "MalformedInput", object: path },
    );
  /** Parses one line; returns false when the batch is full after it. */
  const parseLine = (buf: Uint8Array, start: number, end: number): void => {
    lineNo++;
    if (end > start && buf[end - 1] === 13) end--; // CRLF
    if (start === end || buf[start] === 37) return; // empty or % comment
    if (!seenSize) {
      seenSize = true;
      return;
    }
    let p = start;
    for (let f = 0; f < 2; f++) {
      while (p < end && (buf[p] === 32 || buf[p] === 9)) p++;
      let v = 0;
      const s0 = p;
      while (p < end) {
        const c = buf[p] as number;
        if (c < 48 || c > 57) break;
        v = v * 10 + (c - 48);
        p++;
      }
      if (p === s0) throw bad(buf.subarray(start, end));
      fields[f] = v;
    }
    const r = fields[0] as number;
    const c = fields[1] as number;
    let value = 1;
    if (h.field !== "pattern") {
      while (p < end && (buf[p] === 32 || buf[p] === 9)) p++;
      const s0 = p;
      let v = 0;
      let plain = true;
      while (p < end && buf[p] !== 32 && buf[p] !== 9) {
        const d = buf[p] as number;
        if (d >= 48 && d <= 57) v = v * 10 + (d - 48);
        else plain = false;
        p++;
      }
      if (p === s0) throw bad(buf.subarray(start, end));
      value = plain && p - s0 < 16 ? v : Number(dec.decode(buf.subarray(s0, p)));
    }
    if (!(r >= 1 && r <= h.rows && c >= 1 && c <= h.cols) || Number.isNaN(value))
      throw bad(buf.subarray(start, end));
    const i = batch.n++;
    batch.cells[i] = cellsAreColumns ? c - 1 : r - 1;
    batch.genes[i] = cellsAreColumns ? r - 1 : c - 1;
    batch.values[i] = value;
    count++;
  };
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let buf: Uint8Array = chunk;
      if (carry.length > 0) {
        buf = new Uint8Array(carry.length + chunk.length);
        buf.set(carry);
        buf.set(chunk, carry.length);
      }
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl >= 0; nl = buf.indexOf(10, start)) {
        parseLine(buf, start, nl);
        start = nl + 1;
        if (batch.n === BATCH) {
          yield batch;
          batch = {
            n: 0,
            cells: new Int32Array(BATCH),
            genes: new Int32Array(BATCH),
            values: new Float64Array(BATCH),
          };
        }
      }
      carry = buf.slice(start);
    }
    if (carry.length > 0) parseLine(carry, 0, carry.length);
    if (batch.n > 0) yield batch;
  } finally {
    raw.destroy();
  }
  if (count !== h.nnz) {
    throw new AnndataError(`${path}: the size line announces ${h.nnz} entries, the file has ${count}.`, {
      tag: "MalformedInput",
      object: path,
    });
  }
}

/** The rows of a tab-separated file, gunzipped when it starts with gzip's signature. */
async function readTsv(path: string): Promise<string[][]> {
  let bytes: Uint8Array = await readFile(path);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  const text = new TextDecoder().decode(bytes);
  const rows = text.split("\n");
  if (rows[rows.length - 1] === "") rows.pop();
  return rows.map((r) => r.replace(/\r$/, "").split("\t"));
}

/**
 * The gene table of a 10x `features.tsv` (or `genes.tsv`), as scanpy's read_10x_mtx makes it:
 * var index = gene symbols (2nd column), columns gene_ids (1st) and feature_types (3rd, when
 * present). A file of one column holds the names (and, in a 10x folder, the gene_ids too).
 */
function featureTable(feat: string[][], idsOfNames: boolean): ColumnTable {
  const col = (k: number) => feat.map((r) => r[k] ?? "");
  const named = feat.every((r) => r.length >= 2);
  if (!named && !idsOfNames) return { indexName: null, index: col(0), columns: [] };
  const columns: TableColumn[] = [{ name: "gene_ids", kind: "string", values: col(0) }];
  if (feat.every((r) => r.length >= 3))
    columns.push({ name: "feature_types", kind: "string", values: col(2) });
  return { indexName: null, index: named ? col(1) : col(0), columns };
}

/** A names file given for one axis of a plain Matrix Market file, checked against its length. */
async function namesFile(
  file: string,
  mtx: string,
  axis: "genes" | "cells",
  n: number,
  transpose: boolean,
): Promise<string[][]> {
  let rows: string[][];
  try {
    rows = await readTsv(file);
  } catch (cause) {
    throw new AnndataError(
      `${file}: cannot read the ${axis === "genes" ? "gene" : "cell"} names: ${(cause as Error).message}.`,
      {
        tag: "MalformedInput",
        object: file,
        cause,
      },
    );
  }
  if (rows.length !== n) {
    const side = (axis === "genes") !== transpose ? "rows" : "columns";
    throw new AnndataError(
      `${file}: names ${rows.length} ${axis}, but ${mtx} has ${n} ${axis} (its ${side}${transpose ? ", read cells x genes" : ", read genes x cells as 10x writes it"}): give the file of this matrix, or ${transpose ? "leave out" : "add"} transpose if the matrix is ${transpose ? "genes x cells" : "cells x genes"}.`,
      { tag: "MalformedInput", object: file, expected: n, found: rows.length },
    );
  }
  return rows;
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

async function firstExisting(dir: string, names: string[]): Promise<string | undefined> {
  for (const n of names) if (await exists(join(dir, n))) return join(dir, n);
  return undefined;
}

/**
 * Opens a plain Matrix Market file; `names.genes` and `names.cells` are files naming its genes
 * and cells (see `OpenInputOptions.geneNames`), read with the tables.
 */
export async function openMtx(
  path: string,
  transpose: boolean,
  names: { genes?: string; cells?: string } = {},
): Promise<MtxSource> {
  const h = await readHeader(path);
  const cellsAreColumns = !transpose;
  const nCells = cellsAreColumns ? h.cols : h.rows;
  const nGenes = cellsAreColumns ? h.rows : h.cols;
  const positions = (n: number) => Array.from({ length: n }, (_, i) => String(i));
  const unnamed = { cells: names.cells === undefined, genes: names.genes === undefined };
  return new MtxSource("mtx", path, path, h, cellsAreColumns, nCells, nGenes, unnamed, async () => ({
    var:
      names.genes === undefined
        ? { indexName: null, index: positions(nGenes), columns: [] }
        : featureTable(await namesFile(names.genes, path, "genes", nGenes, transpose), false),
    obs: {
      indexName: null,
      index:
        names.cells === undefined
          ? positions(nCells)
          : (await namesFile(names.cells, path, "cells", nCells, transpose)).map((r) => r[0] ?? ""),
      columns: [],
    },
  }));
}

/** Opens a 10x Matrix Market folder. */
export async function openTenxMtx(dir: string): Promise<MtxSource> {
  const matrix = await firstExisting(dir, ["matrix.mtx.gz", "matrix.mtx"]);
  const features = await firstExisting(dir, ["features.tsv.gz", "features.tsv", "genes.tsv.gz", "genes.tsv"]);
  const barcodes = await firstExisting(dir, ["barcodes.tsv.gz", "barcodes.tsv"]);
  if (matrix === undefined || features === undefined || barcodes === undefined) {
    const missing = [
      matrix === undefined ? "matrix.mtx[.gz]" : "",
      features === undefined ? "features.tsv[.gz] or genes.tsv" : "",
      barcodes === undefined ? "barcodes.tsv[.gz]" : "",
    ].filter(Boolean);
    throw new AnndataError(`${dir}: a 10x Matrix Market folder needs ${missing.join(", ")}.`, {
      tag: "MalformedInput",
      object: dir,
    });
  }
  const h = await readHeader(matrix);
  const nGenes = h.rows;
  const nCells = h.cols;
  const tables = async () => {
    const feat = await readTsv(features);
    const bc = await readTsv(barcodes);
    if (feat.length !== nGenes || bc.length !== nCells) {
      throw new AnndataError(
        `${dir}: matrix is ${nGenes} genes x ${nCells} cells, but there are ${feat.length} features and ${bc.length} barcodes.`,
        { tag: "MalformedInput", object: dir },
      );
    }
    return {
      var: featureTable(feat, true),
      obs: { indexName: null, index: bc.map((r) => r[0] ?? ""), columns: [] },
    };
  };
  const unnamed = { cells: false, genes: false };
  return new MtxSource("10x-mtx", dir, matrix, h, true, nCells, nGenes, unnamed, tables);
}

export class MtxSource extends BaseSource {
  private ordered: boolean | undefined;
  private tableCache: Promise<{ var: ColumnTable; obs: ColumnTable }> | undefined;
  /** Bytes per spill bucket (tests lower it to exercise the temporary files). */
  spillBytes: number | undefined;

  constructor(
    readonly format: "mtx" | "10x-mtx",
    readonly location: string,
    private readonly file: string,
    private readonly header: MtxHeader,
    private readonly cellsAreColumns: boolean,
    readonly nCells: number,
    readonly nGenes: number,
    override readonly unnamed: { cells: boolean; genes: boolean },
    private readonly loadTables: () => Promise<{ var: ColumnTable; obs: ColumnTable }>,
  ) {
    super();
  }

  /** The size line's entry count (a general coordinate file lists each entry once). */
  override get nnz(): number {
    return this.header.nnz;
  }

  get matrixPath(): string {
    return this.format === "10x-mtx" ? (this.file.split("/").pop() ?? this.file) : "matrix";
  }

  private tables(): Promise<{ var: ColumnTable; obs: ColumnTable }> {
    this.tableCache ??= this.loadTables();
    return this.tableCache;
  }

  protected async readVar(): Promise<ColumnTable> {
    return (await this.tables()).var;
  }

  protected async readObs(): Promise<ColumnTable> {
    return (await this.tables()).obs;
  }

  /** Whether the entries come grouped by cell, cells increasing (one parsing pass, cached). */
  private async isOrdered(): Promise<boolean> {
    if (this.ordered === undefined) {
      let prev = -1;
      let ok = true;
      scan: for await (const b of entryBatches(this.file, this.header, this.cellsAreColumns)) {
        for (let i = 0; i < b.n; i++) {
          const cell = b.cells[i] as number;
          if (cell < prev) {
            ok = false;
            break scan;
          }
          prev = cell;
        }
      }
      this.ordered = ok;
    }
    return this.ordered;
  }

  protected async *blocks(size: BlockSize, signal?: AbortSignal): AsyncGenerator<CanonicalRowBlock> {
    if (await this.isOrdered()) yield* this.streamed(size.cells, signal);
    else yield* this.spilled(size.cells, signal);
  }

  private async *streamed(blockCells: number, signal?: AbortSignal): AsyncGenerator<CanonicalRowBlock> {
    let start = 0;
    let b = new RowBlockBuilder(0, Math.min(blockCells, this.nCells), this.nGenes);
    // closes cells up to (excluding) `cell`, yielding full blocks
    const advance = function* (this: MtxSource, cell: number): Generator<CanonicalRowBlock> {
      while (b.currentCell < cell) {
        b.endRow();
        if (b.rowsDone === b.nRows) {
          yield b.finish();
          start += b.nRows;
          b = new RowBlockBuilder(start, Math.min(blockCells, this.nCells - start), this.nGenes);
        }
      }
    };
    for await (const batch of entryBatches(this.file, this.header, this.cellsAreColumns)) {
      signal?.throwIfAborted();
      const { cells, genes, values } = batch;
      for (let i = 0; i < batch.n; i++) {
        const cell = cells[i] as number;
        if (cell !== b.currentCell) yield* advance.call(this, cell);
        b.push(genes[i] as number, values[i] as number);
      }
    }
    yield* advance.call(this, this.nCells);
    if (this.nCells === 0) yield b.finish();
  }

  private async *spilled(blockCells: number, signal?: AbortSignal): AsyncGenerator<CanonicalRowBlock> {
    const spill = new CellBucketSpill(this.nCells, this.nGenes, {
      blockCells,
      nnzHint: this.header.nnz,
      spillBytes: this.spillBytes,
    });
    try {
      for await (const batch of entryBatches(this.file, this.header, this.cellsAreColumns)) {
        signal?.throwIfAborted();
        for (let i = 0; i < batch.n; i++)
          spill.add(batch.cells[i] as number, batch.genes[i] as number, batch.values[i] as number);
      }
      yield* spill.blocks(signal);
    } finally {
      spill.dispose();
    }
  }

  async close(): Promise<void> {}
}
