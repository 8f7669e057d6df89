/**
 * The statistics' part of `validateDataset`: every object read with the reader's checks (index,
 * version of the dataset, sizes, CRC-32s), then the numbers against the dataset and each other:
 * the cells' totals against the tiles' counts, the genes' counts against the cells' totals, each
 * column's categories against every cell. A problem names the object concerned (relative to the
 * dataset).
 */
import type { Dataset } from "../dataset/reader.js";
import type { ValidationProblem } from "../dataset/validate.js";
import { isDeltacellsError } from "../errors.js";
import { STATS_INDEX } from "./format.js";
import { openStats, statsPathOf } from "./read.js";

/** Relative tolerance of sums that add the same values in another order. */
const SUM_TOLERANCE = 1e-9;

/**
 * `tileCounts` holds each tile's sum of counts as the tiles' pass of `validateDataset` found it
 * (NaN for a tile it could not read, which is a problem of its own).
 */
export async function validateStats(
  ds: Dataset,
  tileCounts: Float64Array,
  signal?: AbortSignal,
): Promise<ValidationProblem[]> {
  let path: string | undefined;
  try {
    path = statsPathOf(ds);
    if (path === undefined) return [];
    const stats = (await openStats(ds, { signal }))!;
    const problems: ValidationProblem[] = [];
    const where = (key: string) => `${path}/${key}`;
    const inconsistent = (object: string, message: string) =>
      problems.push({ object, tag: "InconsistentManifest", message });
    const genes = await stats.genes({ signal });
    const totals = await stats.cellTotals({ signal });
    // Integer counts, summed exactly in float64 (cell totals are stored exactly, see write.ts).
    let first = 0;
    for (let t = 0; t < ds.nTiles; t++) {
      const last = first + ds.manifest.tile_cells[t]!;
      let inStats = 0;
      for (let c = first; c < last; c++) inStats += totals[c]!;
      first = last;
      if (!Number.isNaN(tileCounts[t]!) && inStats !== tileCounts[t]) {
        inconsistent(
          where(stats.index.cells.key),
          `the cells of tile ${t} total ${inStats} counts in the statistics, ${tileCounts[t]} in the tile: the statistics are of other counts; compute them again with \`deltacells stats DATASET\``,
        );
        break;
      }
    }
    let counted = 0;
    for (const c of genes.counts) counted += c;
    let total = 0;
    for (const t of totals) total += t;
    if (Math.abs(counted - total) > SUM_TOLERANCE * Math.max(1, total))
      inconsistent(
        where(stats.index.cells.key),
        `the cells' totals add up to ${total}, the genes' counts to ${counted}`,
      );
    let nnz = 0;
    for (let g = 0; g < genes.nnz.length; g++) nnz += genes.nnz[g]!;
    if (nnz > stats.index.dataset.nnz)
      inconsistent(
        where(stats.index.genes.key),
        `${nnz} nonzeros counted per gene, the dataset has ${stats.index.dataset.nnz}`,
      );
    for (const entry of stats.index.columns) {
      const col = (await stats.column(entry.name, { signal }))!;
      const object = where(entry.key);
      const cells = col.cells.reduce((a, b) => a + b, 0);
      if (cells + col.missing !== ds.nCells)
        inconsistent(
          object,
          `column ${JSON.stringify(entry.name)}: ${cells} cells in categories and ${col.missing} missing, the dataset has ${ds.nCells}`,
        );
      for (let g = 0; g < ds.nGenes; g++) {
        let inCategories = 0;
        for (let k = 0; k < col.categories.length; k++) inCategories += col.moments(k).nnz[g]!;
        if (col.missing === 0 ? inCategories !== genes.nnz[g] : inCategories > genes.nnz[g]!) {
          inconsistent(
            object,
            `column ${JSON.stringify(entry.name)}: gene ${g} has ${inCategories} nonzeros over its categories, ${genes.nnz[g]} over every cell`,
          );
          break;
        }
      }
    }
    return problems;
  } catch (err) {
    // The object the reader names (a damaged or missing one), else the index.
    const named = isDeltacellsError(err) ? err.object : undefined;
    return [
      {
        object:
          named?.startsWith(`${ds.url}/`) === true
            ? named.slice(ds.url.length + 1)
            : path === undefined
              ? "manifest.json"
              : `${path}/${STATS_INDEX}`,
        tag: isDeltacellsError(err) ? err._tag : "Error",
        message: (err as Error).message ?? String(err),
      },
    ];
  }
}
