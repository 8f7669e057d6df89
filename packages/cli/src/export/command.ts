/** `deltacells export DATASET OUTPUT`: to Matrix Market or AnnData .h5ad. */
import { mkdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Frame,
  reorderRows,
  TENX_FILES,
  tenxBarcodes,
  tenxFeatures,
  writeH5ad,
  writeMatrixMarket,
  writeTsv,
} from "@deltacells/anndata/node";
import { anndataObs, cellNames, type Dataset } from "@deltacells/core";
import { parseLocation } from "@deltacells/storage";
import { COMMON_HELP, cellRange, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import { formatCount } from "../format.js";
import { openCountedDataset } from "../io.js";
import { OutputFileError, writeFileAtomically } from "../output-file.js";
import { commandBar, type ProgressBar } from "../progress.js";
import { type ExportPlan, planExport } from "./rows.js";

export const EXPORT_HELP = `usage: deltacells export DATASET OUTPUT [options]

Export a dataset (or a range of its cells) to local files:
  OUTPUT.mtx, .mtx.gz  Matrix Market (cells x genes, integer, 1-based); it names nothing
  OUTPUT.h5ad          AnnData: X as csr_matrix, var (the gene table), and obs (the dataset's cell
                       table with its index and categoricals restored, embedding columns back in
                       obsm as float32; cell numbers as obs names when it has none)
  OUTPUT/ (a folder, or --10x)
                       a 10x folder as Cell Ranger writes it: matrix.mtx.gz (genes x cells),
                       features.tsv.gz (id, name, type) and barcodes.tsv.gz, which
                       scanpy.read_10x_mtx and Seurat's Read10X read back with their names
Genes are in the converted input's order (the dataset keeps them by decreasing total counts, and
gene_order.npy maps them back), so a round trip gives back the input's var order;
--dataset-gene-order keeps the dataset's. Each file is written to a temporary file beside it and
renamed when complete: a failed export leaves an existing file as it was.

options:
  --cells A:B           export cells A .. B-1 only (either side may be omitted)
  --dataset-gene-order  genes in the dataset's order (by decreasing total counts) instead of the
                        input's
  --source-gene-order   the input's order (the default; refused when the dataset has no
                        gene_order.npy)
  --10x                 write a 10x folder at OUTPUT (created when missing)
  --format mtx|h5ad|10x override the format guessed from OUTPUT
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

/** The output format: `--format`, `--10x`, else what OUTPUT's name (or an existing folder there) says. */
async function outputFormat(
  output: string,
  values: Record<string, unknown>,
): Promise<"mtx" | "h5ad" | "10x"> {
  const given = values.format as string | undefined;
  if (values["10x"] && given !== undefined && given !== "10x")
    throw new UsageError(`--10x and --format ${given} contradict each other: give one`);
  const isFolder =
    /[/\\]$/.test(output) || (await stat(output).catch(() => undefined))?.isDirectory() === true;
  const format =
    given ??
    (values["10x"] || isFolder
      ? "10x"
      : /\.h5ad$/i.test(output)
        ? "h5ad"
        : /\.mtx(\.gz)?$/i.test(output)
          ? "mtx"
          : undefined);
  if (format !== "mtx" && format !== "h5ad" && format !== "10x") {
    throw new UsageError(
      `cannot tell the output format of ${JSON.stringify(output)}: name it *.mtx, *.mtx.gz or *.h5ad, give a folder (a 10x folder is written there), or pass --format mtx|h5ad|10x`,
    );
  }
  return format;
}

/** The gene table (var.parquet when there is one, else the bare names or positions), rows in `order`. */
async function geneTable(ds: Dataset, order: Int32Array | undefined): Promise<Frame> {
  const table = await ds.varTable();
  const names =
    table?.index ?? (await ds.geneNames()) ?? Array.from({ length: ds.nGenes }, (_, j) => String(j));
  const varTable: Frame = table ?? { indexName: null, index: names, columns: [] };
  if (!order) return varTable;
  const rows = new Int32Array(ds.nGenes); // source column s was output column rows[s]
  for (let j = 0; j < ds.nGenes; j++) rows[order[j]!] = j;
  return reorderRows(varTable, rows);
}

/** Write the three files of a 10x folder at `dir`, the matrix last (each atomically). */
async function writeTenxFolder(
  dir: string,
  plan: ExportPlan,
  genes: Frame,
  barcodes: string[],
): Promise<void> {
  // The folder itself, not its parents, as a file export needs its folder to exist (and Node's
  // recursive mkdir never returns under /proc).
  await mkdir(dir).catch((err) => {
    const code = (err as { code?: string }).code;
    if (code === "EEXIST") return;
    throw new OutputFileError(
      `cannot create the folder ${dir}: ${code === "ENOENT" ? `${dirname(resolve(dir))} does not exist; create it first or choose another path` : (err as Error).message}`,
      { object: dir, code, cause: err },
    );
  });
  await writeFileAtomically(join(dir, TENX_FILES.features), (tmp) =>
    writeTsv(tmp, tenxFeatures(genes), true),
  );
  await writeFileAtomically(join(dir, TENX_FILES.barcodes), (tmp) =>
    writeTsv(tmp, tenxBarcodes(barcodes), true),
  );
  await writeFileAtomically(join(dir, TENX_FILES.matrix), (tmp) =>
    writeMatrixMarket(tmp, plan, { gzip: true, genesByCells: true }),
  );
}

/** The options of `deltacells export` besides the shared ones (args.ts). */
export const EXPORT_OPTIONS = {
  cells: { type: "string" },
  "source-gene-order": { type: "boolean" },
  "dataset-gene-order": { type: "boolean" },
  "10x": { type: "boolean" },
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
  const format = await outputFormat(output, values);
  if (values["source-gene-order"] && values["dataset-gene-order"])
    throw new UsageError("--source-gene-order and --dataset-gene-order contradict each other: give one");
  if (values["no-obs"] === true && format !== "h5ad")
    throw new UsageError(
      "--no-obs applies to .h5ad exports: a Matrix Market file or 10x folder holds no cell table",
    );
  const { store, ds } = await openCountedDataset(locations, dataset);
  const [a, b] = cellRange(values.cells as string | undefined, ds.nCells);
  // The input's order by default: what a user compares a round trip against.
  const order = values["dataset-gene-order"] ? undefined : await ds.geneOrder();
  if (!order && values["source-gene-order"])
    throw new UsageError(
      `${ds.url} has no gene_order.npy, so --source-gene-order cannot map the columns back`,
    );
  const geneOrder = order ? "source" : "dataset";
  const planned = await planExport(ds, a, b, order);
  const bar = commandBar(values);
  const plan = withProgress(planned, bar);
  try {
    if (format === "mtx") {
      await writeFileAtomically(output, (tmp) =>
        writeMatrixMarket(tmp, plan, {
          comment: ` deltacells export of ${ds.url} cells ${a}:${b}, ${geneOrder} gene order`,
          gzip: /\.gz$/i.test(output),
        }),
      );
    } else if (format === "10x") {
      await writeTenxFolder(output, plan, await geneTable(ds, order), await cellNames(ds, a, b));
    } else {
      const varTable = await geneTable(ds, order);
      const obsNames = Array.from({ length: b - a }, (_, i) => String(a + i));
      const obs = values["no-obs"] === true ? undefined : await anndataObs(ds, a, b);
      await writeFileAtomically(output, (tmp) =>
        writeH5ad(tmp, plan, obsNames, varTable.index, varTable.columns, varTable.indexName, obs),
      );
    }
  } finally {
    bar.finish();
  }
  const json = {
    dataset: ds.url,
    output,
    format,
    ...(format === "10x" ? { files: Object.values(TENX_FILES) } : {}),
    cells: [a, b],
    n_cells: plan.nCells,
    n_genes: plan.nGenes,
    nnz: plan.nnz,
    gene_order: geneOrder,
  };
  // A Matrix Market file carries no gene names: columns in the dataset's order (by decreasing
  // total counts) would look like the input's and are not. Say so where the user looks.
  const orderNote =
    geneOrder === "dataset"
      ? `\n  genes in the dataset's order (by decreasing total counts), not the converted input's${order === undefined && !values["dataset-gene-order"] ? " (the dataset has no gene_order.npy)" : ""}${format === "mtx" && ds.manifest.has_var_names ? `; the file names no genes: ${ds.url}/var_names.txt names these columns` : ""}`
      : "";
  const shape = `${formatCount(plan.nCells)} cells x ${formatCount(plan.nGenes)} genes, ${formatCount(plan.nnz)} nonzeros`;
  const where =
    format === "10x"
      ? `${output} (10x folder: ${Object.values(TENX_FILES).join(", ")})`
      : `${output} (${format})`;
  return {
    text: `exported cells ${a}:${b} of ${ds.url} (${shape}) to ${where}${orderNote}`,
    json,
    store,
  };
}
