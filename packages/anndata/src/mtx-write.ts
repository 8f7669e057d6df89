/**
 * Matrix Market output, streamed: a plain `.mtx[.gz]` (cells x genes, integer, 1-based) and the
 * three files of a 10x folder (`matrix.mtx.gz` genes x cells, `features.tsv.gz`,
 * `barcodes.tsv.gz`) as Cell Ranger writes them, which scanpy's `read_10x_mtx` and Seurat's
 * `Read10X` read back with their names. Node-only.
 */

import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import { createGzip } from "node:zlib";
import type { Frame, H5adMatrix } from "./h5ad-write.js";

/** Writes `text`, waiting for room in `out` unless `failed` (the file's failure) settles first. */
async function write(out: Writable, text: string, failed: Promise<unknown>): Promise<void> {
  if (!out.write(text)) await Promise.race([once(out, "drain"), failed]);
}

/**
 * Writes what `fill` hands to `put` into `path`, gzipped when `gzip` (the caller knows the final
 * name; `path` may be a temporary one). The file is closed (and its error reported) before this
 * returns or throws.
 */
async function writeText(
  path: string,
  gzip: boolean,
  fill: (put: (text: string) => Promise<void>) => Promise<void>,
): Promise<void> {
  const file = createWriteStream(path);
  const zip = gzip ? createGzip({ level: 6 }) : undefined;
  if (zip) zip.pipe(file);
  const out: Writable = zip ?? file;
  // Rejects with the file's error (its open or a write failed). That can happen while the rows
  // are still being read, long before this is awaited: handled from the start, or the failure is
  // an unhandled rejection that ends the process instead of an error reported by the command.
  const closed = once(file, "close");
  closed.catch(() => undefined);
  try {
    await fill((text) => write(out, text, closed));
    out.end();
    await closed;
  } catch (err) {
    // Close the file before the caller removes it; the error that stopped us is the one to report.
    zip?.destroy();
    file.destroy();
    await closed.catch(() => undefined);
    throw err;
  }
}

/** Options of {@link writeMatrixMarket}. */
export interface MatrixMarketOptions {
  /** A comment line after the banner (without its `%`). */
  comment?: string;
  gzip?: boolean;
  /** Rows are genes and columns cells, as 10x and Seurat write it (default: cells x genes). */
  genesByCells?: boolean;
}

/**
 * Write `matrix` as a Matrix Market coordinate integer file, entries in cell order. Memory: one
 * part of the matrix and a megabyte of text.
 */
export async function writeMatrixMarket(
  path: string,
  matrix: H5adMatrix,
  opts: MatrixMarketOptions = {},
): Promise<void> {
  const swap = opts.genesByCells === true;
  await writeText(path, opts.gzip === true, async (put) => {
    const [rows, cols] = swap ? [matrix.nGenes, matrix.nCells] : [matrix.nCells, matrix.nGenes];
    const comment = opts.comment === undefined ? "" : `%${opts.comment}\n`;
    await put(`%%MatrixMarket matrix coordinate integer general\n${comment}${rows} ${cols} ${matrix.nnz}\n`);
    let cell = 0;
    for await (const part of matrix.parts()) {
      let buf = "";
      for (let r = 0; r < part.nCells; r++) {
        const c = ++cell;
        for (let k = part.indptr[r]!; k < part.indptr[r + 1]!; k++) {
          const g = part.indices[k]! + 1;
          buf += swap ? `${g} ${c} ${part.data[k]!}\n` : `${c} ${g} ${part.data[k]!}\n`;
          if (buf.length > 1 << 20) {
            await put(buf);
            buf = "";
          }
        }
      }
      if (buf) await put(buf);
    }
  });
}

/** A tab-separated file of `rows` (no header), gzipped when `gzip`. */
export async function writeTsv(
  path: string,
  rows: readonly (readonly string[])[],
  gzip: boolean,
): Promise<void> {
  await writeText(path, gzip, async (put) => {
    let buf = "";
    for (const row of rows) {
      buf += `${row.join("\t")}\n`;
      if (buf.length > 1 << 20) {
        await put(buf);
        buf = "";
      }
    }
    if (buf) await put(buf);
  });
}

/** What 10x writes for a gene when the table does not say: Cell Ranger's type of a gene's counts. */
const GENE_EXPRESSION = "Gene Expression";

/**
 * The rows of a 10x `features.tsv` for a gene table: the id (column `gene_ids`, else the name),
 * the name (the index) and the type (column `feature_types`, else "Gene Expression"), the inverse
 * of how a 10x input is read (see `openInput`). Tabs and line breaks in a name become spaces: the
 * file could not hold them.
 */
export function tenxFeatures(genes: Pick<Frame, "index" | "columns">): string[][] {
  const column = (name: string) => {
    const c = genes.columns.find((col) => col.name === name);
    if (c?.kind === "string") return (i: number) => c.values[i] ?? "";
    if (c?.kind === "category") return (i: number) => c.categories[c.codes[i]!] ?? "";
    return undefined;
  };
  const ids = column("gene_ids");
  const types = column("feature_types");
  return genes.index.map((name, i) =>
    [ids?.(i) || name, name, types?.(i) || GENE_EXPRESSION].map(plainField),
  );
}

/** A field a tab-separated line can hold. */
function plainField(s: string): string {
  return s.replace(/[\t\r\n]/g, " ");
}

/** The rows of a 10x `barcodes.tsv`: one name a line. */
export function tenxBarcodes(names: readonly string[]): string[][] {
  return names.map((n) => [plainField(n)]);
}

/** The file names of a 10x Matrix Market folder (Cell Ranger 3 and later), as written here. */
export const TENX_FILES = {
  matrix: "matrix.mtx.gz",
  features: "features.tsv.gz",
  barcodes: "barcodes.tsv.gz",
} as const;
