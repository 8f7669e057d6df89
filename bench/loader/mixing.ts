/**
 * How mixed the loader's batches are, in the default and the elastic order, on a real dataset with
 * a cell-type column: scanpy's pbmc68k subset (700 cells, `bulk_labels`: 10 labels), as stored
 * (its cells come in no particular label order) and sorted by that column (as an atlas
 * concatenated by donor or cell type is: the case the shuffle has to work for). Small tiles, so
 * that a dataset of 700 cells has several. For each order and world size: the mixing report over
 * every rank's batches of a few epochs (entropy of the labels per batch against the dataset's and
 * against random batches of the same sizes, labels and tiles per batch), and the tile reads of an
 * epoch summed over the ranks, against the dataset's tiles (1.00: each tile read once).
 *
 *   node --import tsx --conditions=source bench/loader/mixing.ts [--batch-size 64] [--tile-size 64]
 *        [--epochs 3] [--buffer-tiles 8] [--h5ad data/pbmc68k-counts/pbmc68k_counts.h5ad]
 *        [--column bulk_labels]
 *
 * Inputs go to bench/out/mixing/ (converted once). Nothing is timed: the figures are the same on
 * any machine.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type LoaderOptions, mixingMeter, openDataset } from "@deltacells/core";
import { FolderStore } from "@deltacells/storage/node";
import { MIXING_HEADER, measureMixing, mixingCells } from "./mixing-measure.js";

const REPO = resolve(import.meta.dirname, "../..");
const PY = join(REPO, "conformance/.venv/bin/python");
const { values: args } = parseArgs({
  options: {
    h5ad: { type: "string", default: "data/pbmc68k-counts/pbmc68k_counts.h5ad" },
    column: { type: "string", default: "bulk_labels" },
    "batch-size": { type: "string", default: "64" },
    "tile-size": { type: "string", default: "64" },
    "buffer-tiles": { type: "string", default: "8" },
    epochs: { type: "string", default: "3" },
    dir: { type: "string", default: join(REPO, "bench/out/mixing") },
  },
});
const BATCH = Number(args["batch-size"]);
const EPOCHS = Number(args.epochs);
const COLUMN = args.column!;

function cli(...argv: string[]): void {
  execFileSync(
    process.execPath,
    ["--import", "tsx", "--conditions=source", "packages/cli/src/main.ts", ...argv],
    {
      cwd: REPO,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
}

/** The two datasets: the .h5ad as it is, and sorted by the column. */
function prepare(): { name: string; path: string }[] {
  const dir = args.dir!;
  mkdirSync(dir, { recursive: true });
  const sorted = join(dir, "sorted.h5ad");
  if (!existsSync(sorted))
    execFileSync(PY, ["bench/loader/sort_h5ad.py", args.h5ad!, sorted, COLUMN], { cwd: REPO });
  const out = [
    { name: "as stored", h5ad: args.h5ad!, path: join(dir, `as-stored-t${args["tile-size"]}`) },
    { name: `sorted by ${COLUMN}`, h5ad: sorted, path: join(dir, `sorted-t${args["tile-size"]}`) },
  ];
  for (const d of out)
    if (!existsSync(join(d.path, "manifest.json")))
      cli("convert", d.h5ad, d.path, "--tile-size", args["tile-size"]!, "--quiet", "--overwrite");
  return out;
}

interface Config {
  name: string;
  options: LoaderOptions;
  worlds: number[];
}

const CONFIGS: Config[] = [
  { name: "no shuffle", options: { shuffle: false }, worlds: [1] },
  { name: "default", options: {}, worlds: [1, 2, 4, 8] },
  { name: "elastic, lanes 4", options: { order: "elastic", lanes: 4 }, worlds: [1, 2, 4] },
  { name: "elastic, lanes 8", options: { order: "elastic", lanes: 8 }, worlds: [1, 2, 4, 8] },
];

const datasets = prepare();
const lines: string[] = [];
const uptime = () => execFileSync("uptime", { encoding: "utf8" }).trim();
console.error(`uptime: ${uptime()}`);
for (const d of datasets) {
  const ds = await openDataset(new FolderStore(d.path));
  const first = (await mixingMeter(ds, COLUMN)).report();
  lines.push(
    `\n${d.name}: ${ds.nCells} cells in ${ds.nTiles} tiles of ${args["tile-size"]}, ${COLUMN}: ${first.labels} labels, ${first.datasetEntropy.toFixed(2)} bits; batches of ${BATCH}, bufferTiles ${args["buffer-tiles"]}, ${EPOCHS} epochs\n`,
    ...MIXING_HEADER,
  );
  for (const c of CONFIGS) {
    let sameAs: string | undefined;
    for (const w of c.worlds) {
      const options = { batchSize: BATCH, bufferTiles: Number(args["buffer-tiles"]), seed: 0, ...c.options };
      const m = await measureMixing(d.path, ds, COLUMN, options, w, EPOCHS);
      // The elastic order's batches are the same at every world size: said if they were not.
      const differs = c.options.order === "elastic" && sameAs !== undefined && sameAs !== m.batches;
      sameAs ??= m.batches;
      lines.push(
        `| ${c.name} | ${w} | ${mixingCells(m).join(" | ")}${differs ? " (batches differ!)" : ""} |`,
      );
    }
  }
  await ds.close();
}
console.log(lines.join("\n"));
console.error(`uptime: ${uptime()}`);
