/**
 * The scan of one input: everything a plan needs from it, read in one pass over its counts (the
 * same pass one-input conversion makes first): its shape, gene keys and gene table, each gene's
 * total count and number of cells, and its cell table's columns with their kinds, types and
 * category vocabularies. The scan holds one row block and one gene-length array at a time.
 */
import type { CanonicalRowBlock, ColumnTable, DatasetSource, TableColumn } from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";
import { sha256Hex } from "../obs/fingerprint.js";
import { numericArrowType, planObs } from "../obs/plan.js";
import { type ObsWriteOptions, openObs } from "../obs/prepare.js";
import { DEFAULT_MAX_CATEGORIES, type ObsArrowType, type ObsKind } from "../obs/schema.js";
import { geneKeys } from "./keys.js";

/** How an input was identified when it was scanned: checked again by each task that reads it. */
export interface InputIdentity {
  /** Bytes of the file (or of a folder's files), or null where that is unknown (a URL). */
  bytes: number | null;
  /** The latest modification time (ISO 8601), or null where unknown. */
  mtime: string | null;
}

/** Refuses an input whose identity is not the one recorded when it was scanned (unknown on either side passes). */
export function checkIdentity(
  location: string,
  planned: InputIdentity | null,
  found: InputIdentity | null,
): void {
  if (planned === null || found === null) return;
  if (planned.bytes === found.bytes && planned.mtime === found.mtime) return;
  throw invalidInput(
    location,
    `it changed since the plan was made (${found.bytes} bytes, modified ${found.mtime}; it was ${planned.bytes} bytes, modified ${planned.mtime}): make the plan again, or restore the input`,
    { field: "identity", expected: planned, found },
  );
}

/** One column of an input's cell table, as that input has it. */
export interface ColumnScan {
  name: string;
  /** The kind this input stores (a categorical with too many categories is a string already). */
  kind: ObsKind;
  arrowType: ObsArrowType;
  categories: string[] | null;
  ordered: boolean;
  nullable: boolean;
  /** A text column that was not text in the input: its type there (a datetime64 kept as ISO-8601). */
  textFrom?: string;
}

/** A gene table column as the merge sees it: its kind, type and categories. */
export function columnScanOf(c: TableColumn): ColumnScan {
  switch (c.kind) {
    case "numeric":
      return {
        name: c.name,
        kind: "numeric",
        arrowType: numericArrowType(c.values),
        categories: null,
        ordered: false,
        nullable: c.nullable === true,
      };
    case "category":
      return {
        name: c.name,
        kind: "category",
        arrowType: "int32",
        categories: c.categories,
        ordered: c.ordered,
        nullable: false,
      };
    case "bool":
      return {
        name: c.name,
        kind: "bool",
        arrowType: "bool",
        categories: null,
        ordered: false,
        nullable: c.nullable === true,
      };
    case "string":
      return {
        name: c.name,
        kind: "string",
        arrowType: "string",
        categories: null,
        ordered: false,
        nullable: c.nullable === true,
      };
  }
}

/** What the scan learned about an input's cell table. */
export interface ObsScan {
  indexName: string | null;
  /** The column the index goes to when unnamed (`obs_names`, `barcode`). */
  indexColumn: string;
  /** The columns kept (the excluded ones left out), in order. */
  columns: ColumnScan[];
  /** Every column name, excluded ones included: an exclude naming none of any input's is refused. */
  available: string[];
  /** The embeddings chosen (2-D dense obsm entries) and their widths. */
  embeddings: { key: string; width: number }[];
  /** obsm keys asked for by name that this input lacks. */
  missingObsm: string[];
}

/** Everything a plan needs from one input. */
export interface InputScan {
  location: string;
  format: string;
  matrixPath: string;
  nCells: number;
  nGenes: number;
  /** Entries the row blocks held (what the tile size is chosen from). */
  entries: number;
  identity: InputIdentity | null;
  /** The key of each gene, in the input's order, and the SHA-256 of the keys, one a line. */
  keys: string[];
  keysSha256: string;
  var: ColumnTable;
  /** Per gene: its total count, and the number of cells where it is not 0. */
  totals: Float64Array;
  geneNnz: Float64Array;
  obs: ObsScan | null;
}

export interface ScanOptions {
  /** Match genes on this var column instead of the var index. */
  varKey?: string;
  obs?: ObsWriteOptions;
  /**
   * One input of several: obs excludes and obsm keys it does not have are recorded, not refused
   * (the plan checks them against every input).
   */
  tolerant?: boolean;
  identity?: InputIdentity | null;
  blockCells?: number;
  signal?: AbortSignal;
  /** Cells of this input read so far. */
  onProgress?: (cellsDone: number) => void;
}

/** The SHA-256 of gene keys, one a line: what a task checks an input against before reading it. */
export async function keysDigest(keys: string[]): Promise<string> {
  return sha256Hex(new TextEncoder().encode(keys.join("\n")));
}

/** A refusal of the input at `source`, `InvalidInput`. */
export function invalidInput(
  location: string,
  message: string,
  fields: { field?: string; expected?: unknown; found?: unknown } = {},
): DeltacellsError {
  return new DeltacellsError(`${location}: ${message}`, { tag: "InvalidInput", object: location, ...fields });
}

/** Refuses a block that does not start where the previous one ended or runs past the cells announced. */
export function checkBlock(
  location: string,
  nCells: number,
  block: CanonicalRowBlock,
  expectedStart: number,
): void {
  if (block.rowStart !== expectedStart) {
    throw invalidInput(
      location,
      `row blocks out of order: expected a block starting at cell ${expectedStart}, got ${block.rowStart}`,
      { field: "rowStart", expected: expectedStart, found: block.rowStart },
    );
  }
  if (block.rowStart + block.nRows > nCells) {
    throw invalidInput(
      location,
      `row block ${block.rowStart}+${block.nRows} runs past the ${nCells} cells announced`,
    );
  }
}

/** Refuses the entry `k` of a row of `block` that breaks canonical CSR of raw counts. */
function refuseEntry(
  location: string,
  nGenes: number,
  cell: number,
  g: number | undefined,
  v: number | undefined,
): never {
  const what =
    g === undefined || v === undefined
      ? "the row runs past its block's indices or counts (indptr promises more entries than the arrays hold)"
      : g >= nGenes || g < 0
        ? `gene index ${g} is outside 0 .. ${nGenes - 1}`
        : v < 0
          ? `count ${v} is negative`
          : "gene indices are not strictly increasing";
  throw invalidInput(
    location,
    `cell ${cell}, gene ${g}: ${what}; the reader must hand over canonical CSR of raw counts`,
  );
}

/** The counts pass: per gene its total and its cells, checking the canonical-CSR promise. */
async function countGenes(
  source: DatasetSource,
  opts: ScanOptions,
): Promise<{ totals: Float64Array; geneNnz: Float64Array; entries: number }> {
  const { nGenes, nCells, location } = source;
  const totals = new Float64Array(nGenes);
  const geneNnz = new Float64Array(nGenes);
  let next = 0;
  let entries = 0;
  // nothing of a block is kept: the source may build the next one in its memory
  const blocks = source.rowBlocks({ blockCells: opts.blockCells, signal: opts.signal, reuse: true });
  for await (const block of blocks) {
    checkBlock(location, nCells, block, next);
    const { indptr, indices, data } = block;
    for (let r = 0; r < block.nRows; r++) {
      const lo = indptr[r]!;
      const hi = indptr[r + 1]!;
      entries += hi - lo;
      let prev = -1;
      for (let k = lo; k < hi; k++) {
        const g = indices[k]!;
        const v = data[k]!;
        // Written so that a missing entry (undefined: arrays shorter than indptr says) fails too.
        if (!(g > prev && g < nGenes && v >= 0)) refuseEntry(location, nGenes, block.rowStart + r, g, v);
        prev = g;
        totals[g]! += v;
        if (v !== 0) geneNnz[g]!++;
      }
    }
    next += block.nRows;
    opts.onProgress?.(next);
  }
  if (next !== nCells)
    throw invalidInput(location, `the source announced ${nCells} cells but yielded ${next}`);
  return { totals, geneNnz, entries };
}

/** The obs part of a scan: the input's columns as one-input conversion would plan them. */
async function scanObs(source: DatasetSource, opts: ScanOptions): Promise<ObsScan | null> {
  const opened = await openObs(source, opts.obs, opts.tolerant);
  if (opened === undefined) return null;
  const { table, embeddings } = opened;
  // Planned exactly as one input's obs is: the category codes checked, the numeric types read.
  const planned = await planObs({
    location: source.location,
    nCells: source.nCells,
    table,
    indexColumn: opened.indexColumn,
    embeddings,
    maxCategories: opts.obs?.maxCategories ?? DEFAULT_MAX_CATEGORIES,
  });
  const columns = table.columns.map((c, i): ColumnScan => {
    const s = planned[i + 1]!;
    return {
      name: c.name,
      kind: s.kind,
      arrowType: s.arrow_type,
      categories: s.categories,
      ordered: c.kind === "category" && c.ordered,
      nullable: c.kind !== "category" && c.nullable === true,
      ...(c.kind === "string" && c.textFrom ? { textFrom: c.textFrom } : {}),
    };
  });
  return {
    indexName: table.indexName,
    indexColumn: opened.indexColumn,
    columns,
    available: opened.available,
    embeddings: embeddings.map(([key, e]) => ({ key, width: e.shape[1]! })),
    missingObsm: opened.missingObsm,
  };
}

/**
 * Scan `source`: its cell table first (a column the format cannot hold is refused before the
 * counts are read), then its gene table, then one pass over its counts.
 */
export async function scanInput(source: DatasetSource, opts: ScanOptions = {}): Promise<InputScan> {
  const { nGenes, nCells, location } = source;
  if (!Number.isSafeInteger(nGenes) || nGenes < 1 || nGenes > 2 ** 31)
    throw invalidInput(location, `deltacells holds 1 .. 2^31 genes, the source has ${nGenes}`);
  const obs = await scanObs(source, opts);
  const table = await source.var();
  if (table.index.length !== nGenes) {
    throw invalidInput(
      location,
      `the gene table has ${table.index.length} rows but the matrix has ${nGenes} genes`,
    );
  }
  const keys = geneKeys(table, opts.varKey, location);
  const { totals, geneNnz, entries } = await countGenes(source, opts);
  return {
    location,
    format: source.format,
    matrixPath: source.matrixPath,
    nCells,
    nGenes,
    entries,
    identity: opts.identity ?? null,
    keys,
    keysSha256: await keysDigest(keys),
    var: table,
    totals,
    geneNnz,
    obs,
  };
}
