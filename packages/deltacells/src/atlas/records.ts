/**
 * Scan records: what `plan --scan` writes for one input and `plan --merge` reads back. The plan is
 * always made from records read back (a one-process conversion writes them too), so a plan made on
 * one machine and one made across many are the same bytes. Two objects per input: the summary
 * (keys, totals, cell table) read by every pass of the merge, and the gene table, read once and
 * only for inputs that give genes. Browser-safe.
 */
import type { ColumnTable } from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";
import { type ColumnScan, columnScanOf, type InputScan, type ObsScan } from "./scan.js";
import { float64FromJson, float64ToJson, tableFromJson, tableToJson } from "./table-json.js";

export const SCAN_FORMAT = "deltacells-atlas-scan";
export const SCAN_VERSION = 1;

/** A scan without its gene table, plus what the merge needs of that table's columns. */
export interface ScanSummary extends Omit<InputScan, "var"> {
  varIndexName: string | null;
  varColumns: ColumnScan[];
}

/** Which build a record belongs to: input `input` of `inputs`, scanned with the options hashed in `digest`. */
export interface ScanContext {
  input: number;
  inputs: number;
  digest: string;
}

const encoder = new TextEncoder();

/** The two objects of `scan`'s record. */
export function encodeScan(scan: InputScan, ctx: ScanContext): { summary: Uint8Array; var: Uint8Array } {
  const summary = {
    format: SCAN_FORMAT,
    version: SCAN_VERSION,
    input: ctx.input,
    inputs: ctx.inputs,
    digest: ctx.digest,
    location: scan.location,
    source_format: scan.format,
    matrix_path: scan.matrixPath,
    n_cells: scan.nCells,
    n_genes: scan.nGenes,
    entries: scan.entries,
    identity: scan.identity,
    keys: scan.keys,
    keys_sha256: scan.keysSha256,
    totals: float64ToJson(scan.totals),
    gene_nnz: float64ToJson(scan.geneNnz),
    obs: scan.obs,
    var_index_name: scan.var.indexName,
    var_columns: scan.var.columns.map(columnScanOf),
  };
  return {
    summary: encoder.encode(`${JSON.stringify(summary)}\n`),
    var: encoder.encode(
      `${JSON.stringify({ format: SCAN_FORMAT, version: SCAN_VERSION, digest: ctx.digest, table: tableToJson(scan.var) })}\n`,
    ),
  };
}

function parse(bytes: Uint8Array, object: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new DeltacellsError(
      `${object} is not valid JSON: the scan record is damaged; scan the input again`,
      {
        tag: "FormatError",
        object,
        cause,
      },
    );
  }
  const r = json as Record<string, unknown> | null;
  if (r === null || typeof r !== "object" || r.format !== SCAN_FORMAT || r.version !== SCAN_VERSION) {
    throw new DeltacellsError(
      `${object} is not a scan record of version ${SCAN_VERSION} (format ${JSON.stringify(r?.format)}, version ${JSON.stringify(r?.version)}); scan the input again with this version`,
      { tag: "FormatError", object, expected: SCAN_FORMAT, found: r?.format },
    );
  }
  return r;
}

/** The summary and context of a scan record. */
export function decodeScanSummary(
  bytes: Uint8Array,
  object: string,
): { ctx: ScanContext; summary: ScanSummary } {
  const r = parse(bytes, object);
  const keys = r.keys as string[];
  if (!Array.isArray(keys) || keys.length !== r.n_genes)
    throw new DeltacellsError(`${object}: ${JSON.stringify(r.n_genes)} genes but ${keys?.length} keys`, {
      tag: "FormatError",
      object,
    });
  const n = keys.length;
  return {
    ctx: { input: r.input as number, inputs: r.inputs as number, digest: r.digest as string },
    summary: {
      location: r.location as string,
      format: r.source_format as string,
      matrixPath: r.matrix_path as string,
      nCells: r.n_cells as number,
      nGenes: n,
      entries: r.entries as number,
      identity: r.identity as ScanSummary["identity"],
      keys,
      keysSha256: r.keys_sha256 as string,
      totals: float64FromJson(r.totals, n, object),
      geneNnz: float64FromJson(r.gene_nnz, n, object),
      obs: r.obs as ObsScan | null,
      varIndexName: r.var_index_name as string | null,
      varColumns: r.var_columns as ColumnScan[],
    },
  };
}

/** The gene table of a scan record, checked to belong to the build `digest`. */
export function decodeScanVar(bytes: Uint8Array, object: string, digest: string): ColumnTable {
  const r = parse(bytes, object);
  if (r.digest !== digest) {
    throw new DeltacellsError(
      `${object} belongs to another scan (of other inputs or options); scan the input again`,
      {
        tag: "InconsistentManifest",
        object,
        expected: digest,
        found: r.digest,
      },
    );
  }
  return tableFromJson(r.table, object);
}
