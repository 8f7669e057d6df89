/**
 * The loader's output columns. Tiles store genes in the dataset's column order (the converter
 * sorts them by decreasing total counts and records the permutation in `gene_order.npy`:
 * dataset column j was source column `gene_order[j]`). A training job thinks in its AnnData's
 * order, so by default output column i is source gene i; a selection picks and orders columns.
 * Everything becomes one table, dataset column -> output column (or -1), applied per nonzero:
 * by the decoder, on its workers, when the table is a permutation (every gene, in another order:
 * the default on a reordered dataset), else while rows are copied into a batch.
 */

import type { Dataset } from "../dataset/reader.js";
import { DeltacellsError } from "../errors.js";
import { identity } from "./random.js";

/**
 * The renumbering the decoder applies to tiles for `map` (`Dataset.tile`'s `columns`): the whole
 * table when it is a permutation other than the identity; else none (selections drop columns,
 * which happens while rows are copied). So a tile's rows are in output columns exactly when
 * `map.complete`.
 */
export function decoderColumns(map: ColumnMap): Int32Array | undefined {
  return map.complete && !map.identity ? map.toOutput : undefined;
}

/** Which column space numbers refer to, and the order of the unselected output. */
export type ColumnOrder = "source" | "dataset";

/** The output columns of a loader. */
export interface LoaderGenes {
  /** Number of output columns. */
  readonly count: number;
  /** The source (AnnData) index of each output column. */
  readonly sourceIndices: Int32Array;
  /** The dataset (tile) column of each output column. */
  readonly datasetColumns: Int32Array;
  /** The gene name of each output column (`var_names.txt`), or undefined when the dataset has none. */
  readonly names: string[] | undefined;
}

/** How nonzeros map to output columns. */
export interface ColumnMap extends LoaderGenes {
  /** `toOutput[j]`: the output column of dataset column j, or -1 when not selected. */
  readonly toOutput: Int32Array;
  /** True when the map is the identity (no lookup needed). */
  readonly identity: boolean;
  /** True when output columns increase with dataset columns (each cell's indices stay sorted). */
  readonly monotone: boolean;
  /** True when every dataset column is selected (no nonzero is left out). */
  readonly complete: boolean;
}

function invalid(message: string, found?: unknown): DeltacellsError {
  return new DeltacellsError(message, { tag: "InvalidInput", field: "genes", found });
}

/**
 * Resolves a gene selection (names, or indices in `order`'s column space; output columns in the
 * order given) or, without one, all genes in `order`.
 */
export async function resolveGenes(
  ds: Dataset,
  genes: readonly string[] | ArrayLike<number> | undefined,
  order: ColumnOrder,
): Promise<ColumnMap> {
  const n = ds.nGenes;
  const geneOrder = (await ds.geneOrder()) ?? identity(n);
  const sourceToDataset = new Int32Array(n);
  for (let j = 0; j < n; j++) sourceToDataset[geneOrder[j]!] = j;
  const datasetNames = await ds.geneNames();

  let datasetColumns: Int32Array;
  if (genes === undefined) {
    datasetColumns = order === "dataset" ? identity(n) : sourceToDataset.slice();
  } else if (genes.length > 0 && typeof genes[0] === "string") {
    if (datasetNames === undefined)
      throw invalid(`genes were given by name but ${ds.url} has no var_names.txt: select them by index`);
    const byName = new Map<string, number>();
    datasetNames.forEach((name, j) => {
      // A name that occurs twice cannot be selected by name: which column would it mean?
      byName.set(name, byName.has(name) ? -1 : j);
    });
    datasetColumns = new Int32Array(genes.length);
    for (let i = 0; i < genes.length; i++) {
      const name = genes[i] as string;
      const j = byName.get(name);
      if (j === undefined)
        throw invalid(`gene ${JSON.stringify(name)} is not in ${ds.url}/var_names.txt`, name);
      if (j < 0)
        throw invalid(
          `gene name ${JSON.stringify(name)} occurs more than once in ${ds.url}/var_names.txt: select by index`,
          name,
        );
      datasetColumns[i] = j;
    }
  } else {
    datasetColumns = new Int32Array(genes.length);
    for (let i = 0; i < genes.length; i++) {
      const g = genes[i] as number;
      if (!Number.isInteger(g) || g < 0 || g >= n)
        throw invalid(`gene index ${g} is outside 0 .. ${n - 1} (${ds.url} has ${n} genes)`, g);
      datasetColumns[i] = order === "dataset" ? g : sourceToDataset[g]!;
    }
  }
  if (datasetColumns.length === 0) throw invalid("the gene selection is empty", []);

  const toOutput = new Int32Array(n).fill(-1);
  for (let i = 0; i < datasetColumns.length; i++) {
    const j = datasetColumns[i]!;
    if (toOutput[j] !== -1) throw invalid(`gene ${describe(genes, i)} is selected twice`, describe(genes, i));
    toOutput[j] = i;
  }
  let monotone = true;
  for (let i = 1; i < datasetColumns.length && monotone; i++)
    monotone = datasetColumns[i]! > datasetColumns[i - 1]!;
  const complete = datasetColumns.length === n;
  const sourceIndices = datasetColumns.map((j) => geneOrder[j]!);
  return {
    count: datasetColumns.length,
    datasetColumns,
    sourceIndices,
    names: datasetNames && Array.from(datasetColumns, (j) => datasetNames[j]!),
    toOutput,
    identity: complete && monotone,
    monotone,
    complete,
  };
}

function describe(genes: readonly string[] | ArrayLike<number> | undefined, i: number): string {
  return genes === undefined ? String(i) : JSON.stringify(genes[i]);
}
