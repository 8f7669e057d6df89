/** `deltacells export DATASET OUTPUT`: to Matrix Market or AnnData .h5ad. */
import { fileURLToPath } from "node:url";
import { reorderRows, writeH5ad } from "@deltacells/anndata/node";
import { anndataObs } from "@deltacells/core";
import { parseLocation } from "@deltacells/storage";
import { COMMON_HELP, cellRange, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import { formatCount } from "../format.js";
import { openCountedDataset } from "../io.js";
import { writeFileAtomically } from "../output-file.js";
import { commandBar, type ProgressBar } from "../progress.js";
import { writeMatrixMarket } from "./mtx.js";
import { type ExportPlan, planExport } from "./rows.js";

export const EXPORT_HELP = `usage: deltacells export DATASET OUTPUT [options]

Export a dataset (or a range of its cells) to a local file: Matrix Market when OUTPUT ends in
.mtx or .mtx.gz (cells x genes, integer, 1-based), AnnData when it ends in .h5ad (X as
csr_matrix, var, and obs: the dataset's cell table with its index and categoricals restored,
embedding columns back in obsm as float32; cell numbers as obs names when it has none). Columns
are in the dataset's order (genes by decreasing total counts) unless --source-gene-order maps
them back to the order of the converted input. OUTPUT is written to a temporary file beside it
and renamed when complete: a failed export leaves an existing OUTPUT as it was.

options:
  --cells A:B           export cells A .. B-1 only (either side may be omitted)
  --source-gene-order   columns in the source's order (needs gene_order.npy)
  --format mtx|h5ad     override the format guessed from OUTPUT
  --no-obs              .h5ad: leave the cell table out (obs names are the cell numbers; obs is not read)
  --quiet               no progress bar
${COMMON_HELP}`;

/** The plan, drawing `bar` as its parts are written. */
function withProgress(plan: ExportPlan, bar: ProgressBar): ExportPlan {
  return {
    ...plan,
    async *parts() {
      bar.phase("export");
      let done = 0;
      for await (const part of plan.parts()) {
        yield part;
        done += part.nCells;
        bar.update(done, plan.nCells, "cells");
      }
      bar.finish();
    },
  };
}

/** The options of `deltacells export` besides the shared ones (args.ts). */
export const EXPORT_OPTIONS = {
  cells: { type: "string" },
  "source-gene-order": { type: "boolean" },
  format: { type: "string" },
  "no-obs": { type: "boolean" },
  quiet: { type: "boolean" },
} as const;

export async function exportCommand(argv: string[]): Promise<CommandResult> {
  const { values, positionals, locations } = parse(argv, EXPORT_OPTIONS, ["DATASET", "OUTPUT"]);
  if (values.help) return { text: EXPORT_HELP };
  const [dataset, target] = positionals as [string, string];
  const parsed = parseLocation(target);
  if (parsed.kind === "url" && parsed.scheme !== "file")
    throw new UsageError(
      `${target}: export writes a local file; give a path (or a file:// URL) and copy it from there`,
    );
  const output = parsed.kind === "url" ? fileURLToPath(target) : target;
  const format =
    (values.format as string | undefined) ??
    (/\.h5ad$/i.test(output) ? "h5ad" : /\.mtx(\.gz)?$/i.test(output) ? "mtx" : undefined);
  if (format !== "mtx" && format !== "h5ad") {
    throw new UsageError(
      `cannot tell the output format of ${JSON.stringify(output)}: name it *.mtx, *.mtx.gz or *.h5ad, or pass --format mtx|h5ad`,
    );
  }
  const { store, ds } = await openCountedDataset(locations, dataset);
  const [a, b] = cellRange(values.cells as string | undefined, ds.nCells);
  let order: Int32Array | undefined;
  if (values["source-gene-order"]) {
    order = await ds.geneOrder();
    if (!order)
      throw new UsageError(
        `${ds.url} has no gene_order.npy, so --source-gene-order cannot map the columns back`,
      );
  }
  if (values["no-obs"] === true && format !== "h5ad")
    throw new UsageError("--no-obs applies to .h5ad exports: a Matrix Market file holds no cell table");
  const planned = await planExport(ds, a, b, order);
  const bar = commandBar(values);
  const plan = withProgress(planned, bar);
  await writeFileAtomically(output, async (tmp) => {
    if (format === "mtx") {
      await writeMatrixMarket(
        tmp,
        plan,
        ` deltacells export of ${ds.url} cells ${a}:${b}, ${order ? "source" : "dataset"} gene order`,
        /\.gz$/i.test(output),
      );
    } else {
      // The gene table (var.parquet) when there is one, else the bare names.
      const table = await ds.varTable();
      const names =
        table?.index ?? (await ds.geneNames()) ?? Array.from({ length: ds.nGenes }, (_, j) => String(j));
      let varTable = table ?? { indexName: null, index: names, columns: [] };
      if (order) {
        const rows = new Int32Array(ds.nGenes); // source column s was output column rows[s]
        for (let j = 0; j < ds.nGenes; j++) rows[order[j]!] = j;
        varTable = reorderRows(varTable, rows);
      }
      const obsNames = Array.from({ length: b - a }, (_, i) => String(a + i));
      await writeH5ad(
        tmp,
        plan,
        obsNames,
        varTable.index,
        varTable.columns,
        varTable.indexName,
        values["no-obs"] === true ? undefined : await anndataObs(ds, a, b),
      );
    }
  }).finally(() => bar.finish());
  const json = {
    dataset: ds.url,
    output,
    format,
    cells: [a, b],
    n_cells: plan.nCells,
    n_genes: plan.nGenes,
    nnz: plan.nnz,
    gene_order: order ? "source" : "dataset",
  };
  // A Matrix Market file carries no gene names: columns in the dataset's order (by decreasing
  // total counts) would look like the input's and are not. Say so where the user looks.
  const unnamed =
    format === "mtx" && !order && ds.manifest.has_gene_order
      ? `\n  columns in the dataset's gene order (by decreasing total counts), not the converted input's, and the file names no genes: --source-gene-order exports the input's order${ds.manifest.has_var_names ? `; ${ds.url}/var_names.txt names these columns` : ""}`
      : "";
  return {
    text: `exported cells ${a}:${b} of ${ds.url} (${formatCount(plan.nCells)} cells x ${formatCount(plan.nGenes)} genes, ${formatCount(plan.nnz)} nonzeros) to ${output} (${format})${unnamed}`,
    json,
    store,
  };
}
