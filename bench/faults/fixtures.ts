/**
 * The inputs the fault classes damage: a small synthetic dataset whose tiles hold every region of
 * the format (value and gap exceptions included), written with the public writer to a folder.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CanonicalRowBlock,
  type DatasetSource,
  encodeTile,
  type TileEncoder,
  writeDataset,
} from "@deltacells/core";
import { zstdCompressor } from "@deltacells/core/node";
import { FolderStore } from "@deltacells/storage/node";
import { mulberry32 } from "../../test-utils/prng.js";

export const REPO = join(import.meta.dirname, "../..");
/** The conformance environment's Python (anndata, pyarrow): the classes that need it say so (`needsPython`). */
export const PYTHON = join(REPO, "conformance/.venv/bin/python");

/** A fresh temporary folder, removed by `dispose`. */
export function workDir(label: string): { dir: string; dispose: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `deltacells-faults-${label}-`));
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

export const N_GENES = 70_000;
const HEAD_GENES = 66_000;

/**
 * 96 cells x 70,000 genes. Cells 0..93 cover the first 66,000 genes (counts >= 2, a few above
 * 65,535: value exceptions); cells 94 and 95 hold only genes of the last 4,000 (count 1), which
 * the writer orders after gene 65,535, so their first gap is a gap exception; cell 0 also holds
 * one such gene. Fully determined by `seed`.
 */
export function syntheticRows(seed: number): CanonicalRowBlock {
  const rnd = mulberry32(seed);
  const nCells = 96;
  const perHeadCell = Math.ceil(HEAD_GENES / 94);
  const indptr = [0];
  const indices: number[] = [];
  const data: number[] = [];
  for (let c = 0; c < nCells; c++) {
    const genes = new Map<number, number>();
    if (c < 94) {
      for (let g = c * perHeadCell; g < Math.min(HEAD_GENES, (c + 1) * perHeadCell); g++) {
        genes.set(g, 2 + Math.floor(rnd() * rnd() * 30));
      }
      for (let k = 0; k < 40; k++) genes.set(Math.floor(rnd() * HEAD_GENES), 2 + Math.floor(rnd() * 500));
      if (rnd() < 0.1) genes.set(Math.floor(rnd() * HEAD_GENES), 70_000 + Math.floor(rnd() * 1e6));
      if (c === 0) genes.set(HEAD_GENES + 7, 1);
    } else {
      for (let k = 0; k < 30; k++) genes.set(HEAD_GENES + Math.floor(rnd() * (N_GENES - HEAD_GENES)), 1);
    }
    for (const g of [...genes.keys()].sort((a, b) => a - b)) {
      indices.push(g);
      data.push(genes.get(g)!);
    }
    indptr.push(indices.length);
  }
  return {
    rowStart: 0,
    nRows: nCells,
    indptr: Float64Array.from(indptr),
    indices: Int32Array.from(indices),
    data: Int32Array.from(data),
  };
}

function sourceOf(rows: CanonicalRowBlock): DatasetSource {
  return {
    format: "memory",
    location: "memory://faults",
    matrixPath: "X",
    nCells: rows.nRows,
    nGenes: N_GENES,
    var: async () => ({
      indexName: null,
      index: Array.from({ length: N_GENES }, (_, g) => `G${g}`),
      columns: [],
    }),
    async *rowBlocks() {
      yield rows;
    },
  };
}

const encoder: TileEncoder = { encode: (rows, opts) => encodeTile(rows, { ...opts, level: 3 }) };

/** Writes the synthetic dataset (tiles of 32 cells, 2 chunks each) into `dir`. */
export async function writeSynthetic(dir: string, seed: number): Promise<void> {
  await writeDataset(sourceOf(syntheticRows(seed)), new FolderStore(dir), {
    encoder,
    compress: zstdCompressor(3),
    tileSize: 32,
    nChunks: 2,
    level: 3,
  });
}
